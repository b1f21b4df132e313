#pragma once
// The ResNet family with torchvision's architecture (v1.5: stride on the 3x3 conv of bottlenecks)
// and torchvision's state-dict key names (conv1.weight, layer3.2.conv2.weight, fc.bias, ...), so
// weights move between crosstrain and Python unchanged.
//
//   auto model = create_model("resnet50", ModelOptions{.num_classes = 1000});
//   auto logits = model->forward(images);                  // NCHW float
//   load_weights(*model, "resnet50.pt");                    // torch.save(m.state_dict(), f)
//
// A ForwardObserver sees every module's output by torchvision-style name, in execution order, at
// block and leaf level ("layer3.2.conv2", "layer3.2"); it is how dumps and profiler annotations see
// inside the model without changing its code.
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <map>
#include <memory>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace crosstrain::core {

struct ModelOptions {
  int64_t num_classes = 1000;
  bool small_stem = false;          // 3x3 stride-1 conv, no max-pool: for 28-64 px inputs
  bool zero_init_residual = false;  // last BN of each block starts at zero
  int64_t in_channels = 3;
  // Channels of the first stage (torchvision: 64). Narrower nets train fast on CPUs; any value
  // other than 64 has no torchvision counterpart.
  int64_t base_width = 64;
};

// Every named module is bracketed by on_enter / on_exit, nested (a block's leaves run between the
// block's enter and exit); ReLU is one module called several times per block, as in torchvision.
class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  virtual void on_enter(const std::string& module) {}
  // Called with the module's output; may return a replacement (e.g. to inject a perturbation).
  virtual at::Tensor on_exit(const std::string& module, const at::Tensor& output) { return output; }
  // Whether the observer keeps or reads module outputs. The model runs ReLU and the residual add
  // in place (as torchvision does: less memory traffic) only while no observer reads outputs,
  // because an in-place op would change a tensor the observer was handed.
  virtual bool reads_outputs() const { return true; }
};

struct ResNetSpec {
  std::string name;
  bool bottleneck;
  std::vector<int64_t> layers;  // blocks per stage
};

// What the trainer runs: one forward pass over an NCHW batch, observable module by module. The
// ResNets implement it; tests use smaller models behind the same interface.
// Runs one BatchNorm layer on an input in place of its own forward (data-parallel training's
// synchronised BatchNorm); empty: the layer's own.
using BatchNormFn = std::function<at::Tensor(torch::nn::BatchNorm2dImpl& layer, const at::Tensor& input)>;

class TrainableModel : public torch::nn::Module {
 public:
  virtual at::Tensor forward(at::Tensor x) = 0;
  virtual void set_observer(ForwardObserver* observer) = 0;
  // Every BatchNorm layer runs through `fn` from now on (models without BatchNorm ignore it).
  virtual void set_batch_norm(BatchNormFn fn) {}
};

class ResNetImpl : public TrainableModel {
 public:
  ResNetImpl(const ResNetSpec& spec, const ModelOptions& options);
  at::Tensor forward(at::Tensor x) override;
  void set_observer(ForwardObserver* observer) override { observer_ = observer; }
  void set_batch_norm(BatchNormFn fn) override { batch_norm_ = std::move(fn); }
  const ResNetSpec& spec() const { return spec_; }
  const ModelOptions& options() const { return options_; }

 private:
  template <typename F>
  at::Tensor run(const std::string& name, F&& f);
  bool in_place() const { return !observer_ || !observer_->reads_outputs(); }

  ResNetSpec spec_;
  ModelOptions options_;
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  std::vector<torch::nn::ModuleList> stages_;
  torch::nn::Linear fc{nullptr};
  ForwardObserver* observer_ = nullptr;
  BatchNormFn batch_norm_;
};
TORCH_MODULE(ResNet);

// Registry: names are resnet18, resnet34, resnet50, resnet101, resnet152. An unknown name throws
// std::invalid_argument listing them.
std::vector<std::string> model_names();
ResNet create_model(const std::string& name, const ModelOptions& options);

int64_t parameter_count(const torch::nn::Module& model);
// Multiply-accumulates of one forward pass for one image (convolutions and the classifier; BN,
// ReLU, pooling and additions are negligible and not counted). FLOPs = 2 x MACs.
int64_t forward_macs(const std::string& name, const ModelOptions& options, int64_t image_size);

// Puts 4-D parameters and buffers in channels-last layout.
void to_channels_last(torch::nn::Module& model);

// The model's state dict: parameters then buffers, in module order, under torchvision's names.
std::vector<std::pair<std::string, at::Tensor>> model_state_dict(const torch::nn::Module& model);
// Copies `state` into the model. Every key must be present with the model's shape and a compatible
// type (the same, or floating point into floating point: fp16/bf16/fp64 are converted), and no
// other key may appear: std::runtime_error naming `source` and the first offending key otherwise.
void load_model_state_dict(torch::nn::Module& model, const std::map<std::string, at::Tensor>& state,
                           const std::string& source);

// State dicts as {name: tensor} pickles, the format of torch.save(m.state_dict(), f) (an
// OrderedDict, or a plain dict), zip or legacy, as they are or inside a training program's
// checkpoint under a wrapper's prefix (core/model_state_finder.h says which layouts and how).
// load_weights throws std::runtime_error naming the file and the missing and unexpected keys, the
// first mis-shaped or mis-typed key, or the tensor whose data is truncated. `notes` (stderr) hears
// which entry was loaded and what prefix was stripped, unless the file was a bare state dict.
void load_weights(torch::nn::Module& model, const std::string& path, std::ostream* notes = nullptr);
void save_weights(const torch::nn::Module& model, const std::string& path);

}  // namespace crosstrain::core
