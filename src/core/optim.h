#pragma once
// Multi-tensor optimizers: one update over all parameters of a group at once, with the fused ATen
// kernels (_fused_sgd_, _fused_adamw_) where the device registers them and the _foreach_* ops
// otherwise. Results match torch::optim::SGD / torch::optim::AdamW to float tolerance.
//
//   auto groups = split_decay_groups(model->named_parameters(), /*no_decay_bn_bias=*/true, 5e-5);
//   MultiTensorOptimizer opt(OptimizerKind::SGD, groups, OptimizerOptions{.lr = 0.1, .momentum = 0.9});
//   ... loss.backward(); opt.set_lr(schedule.lr(step)); opt.step(); opt.zero_grad();
#include <ATen/ATen.h>
#include <torch/ordered_dict.h>

#include <string>
#include <vector>

#include "core/state_dict.h"

namespace crosstrain::core {

enum class OptimizerKind { SGD, AdamW };
enum class OptimizerKernels { Auto, Fused, ForEach };

OptimizerKind optimizer_kind_from_name(const std::string& name);  // "sgd" | "adamw"; else invalid_argument

struct ParamGroup {
  std::vector<at::Tensor> params;
  double weight_decay = 0.0;
};

// Two groups: weights with decay, and (when no_decay_bn_bias) 1-D parameters (BN affine, biases)
// without it. Empty groups are dropped.
std::vector<ParamGroup> split_decay_groups(const torch::OrderedDict<std::string, at::Tensor>& named_params,
                                           bool no_decay_bn_bias, double weight_decay);

struct OptimizerOptions {
  double lr = 0.1;
  double momentum = 0.9;     // SGD
  double dampening = 0.0;    // SGD
  bool nesterov = false;     // SGD
  double beta1 = 0.9;        // AdamW
  double beta2 = 0.999;      // AdamW
  double eps = 1e-8;         // AdamW
  OptimizerKernels kernels = OptimizerKernels::Auto;
};

class MultiTensorOptimizer {
 public:
  MultiTensorOptimizer(OptimizerKind kind, std::vector<ParamGroup> groups, OptimizerOptions options);

  void set_lr(double lr) { opt_.lr = lr; }
  double lr() const { return opt_.lr; }
  // Applies one update with the gradients currently in .grad(); parameters without a gradient are
  // left alone (as torch.optim does).
  void step();
  // set_to_none: drop the gradients (the default, as torch); else zero them in place, which keeps
  // gradients that are views into a communication bucket (data-parallel training) attached.
  void zero_grad(bool set_to_none = true);
  // Every defined gradient, for the loss scaler and clipping.
  std::vector<at::Tensor> gradients() const;
  // The per-parameter state it holds (SGD: a momentum buffer each, none without momentum; AdamW:
  // exp_avg and exp_avg_sq, and the fused kernel's step counts), empty before the first step.
  std::vector<at::Tensor> state_tensors() const;
  bool uses_fused_kernels() const { return fused_; }
  int64_t steps_taken() const { return steps_; }

  // torch.optim.SGD / AdamW's state_dict() layout: {"state": {index: per-parameter state},
  // "param_groups": [{hyper-parameters..., "params": [indices]}]}, parameters numbered across the
  // groups in order. Per-parameter state exists once a step was taken (momentum_buffer; step,
  // exp_avg, exp_avg_sq), as in PyTorch. The tensors are the live ones: copy them to keep them.
  StateDict state_dict() const;
  // Restores per-parameter state (copied onto the parameters' devices) and the learning rate.
  // Group count and sizes must match: std::invalid_argument naming the first difference.
  void load_state_dict(const StateDict& state);

 private:
  struct GroupState {
    ParamGroup group;
    std::vector<at::Tensor> momentum;     // SGD
    std::vector<at::Tensor> exp_avg;      // AdamW
    std::vector<at::Tensor> exp_avg_sq;   // AdamW
    std::vector<at::Tensor> step_count;   // AdamW fused kernel wants per-param float step tensors
    bool initialized = false;
  };
  void step_sgd(GroupState& g, const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads);
  void step_adamw(GroupState& g, const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads);

  OptimizerKind kind_;
  OptimizerOptions opt_;
  std::vector<GroupState> groups_;
  bool fused_ = false;
  int64_t steps_ = 0;
};

// Learning-rate schedule: linear warm-up from ~0 to base_lr over warmup_steps, then constant,
// step (x gamma every step_size steps) or cosine (to 0 at total_steps).
enum class ScheduleKind { Constant, Step, Cosine };
ScheduleKind schedule_kind_from_name(const std::string& name);

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::Constant;
  double base_lr = 0.1;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  int64_t step_size = 30;
  double gamma = 0.1;
  double lr(int64_t step) const;  // step counts from 0
};

// A schedule at a position (the number of steps taken) in torch.optim.lr_scheduler's state_dict()
// layout (last_epoch, _step_count, base_lrs, _last_lr) plus the schedule's own fields.
StateDict schedule_state_dict(const LrSchedule& schedule, int64_t steps_taken, size_t param_groups);
// The position stored by schedule_state_dict (or by a PyTorch scheduler: its last_epoch).
int64_t schedule_position(const StateDict& state);

}  // namespace crosstrain::core
