#pragma once
// What a trainer asks of data-parallel training, step by step. One process needs none of it (the
// trainer holds a null GradientSync); tools/dist/data_parallel.h implements it over c10d.
//
//   for each micro-step j of a step (sync = j is the last one):
//     sync->before_forward(sync);  forward;  sync->after_forward(sync);
//     sync->backward([&] { loss.backward(); }, step);  // all-reduces buckets while backward runs
//   loss = sync->mean_over_ranks({loss}, "...")[0];
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace crosstrain::dist {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // `sync`: this micro-step's backward ends the step and exchanges gradients (the others only
  // accumulate locally, like DDP's no_sync()).
  virtual void before_forward(bool sync) = 0;
  virtual void after_forward(bool sync) = 0;
  // Runs the backward pass; a failed or timed-out exchange ends the process with a message that
  // names the step.
  virtual void backward(const std::function<void()>& run_backward, int64_t step) = 0;
  // Element-wise means over all ranks; `what` names the exchange in failure messages.
  virtual std::vector<double> mean_over_ranks(std::vector<double> values, const std::string& what) = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // How gradients are grouped for the exchange (lists of parameter indices, in the order they are
  // reduced), when a restarted run must group them the same way to continue bit for bit; empty
  // while a new process would group them the same way anyway. With more than two ranks a sum of
  // the same numbers grouped otherwise can differ in the last bits.
  virtual std::vector<std::vector<int64_t>> bucket_layout() const { return {}; }
  // Groups gradients as `layout` says, from the next step on (before the first step only).
  // std::invalid_argument when it is no grouping of this model's parameters.
  virtual void restore_bucket_layout(const std::vector<std::vector<int64_t>>& layout) { (void)layout; }
};

}  // namespace crosstrain::dist
