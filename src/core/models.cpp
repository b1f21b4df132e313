#include "core/models.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/functional/pooling.h>

#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/model_state_finder.h"
#include "core/state_file.h"

namespace crosstrain::core {

namespace nn = torch::nn;

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

// A BasicBlock (two 3x3) or a Bottleneck (1x1, 3x3 with the stride, 1x1 x4), as in torchvision.
class BlockImpl : public nn::Module {
 public:
  BlockImpl(bool bottleneck, int64_t inplanes, int64_t planes, int64_t stride) : bottleneck_(bottleneck) {
    const int64_t expansion = bottleneck ? 4 : 1;
    if (bottleneck) {
      conv1 = register_module("conv1", conv(inplanes, planes, 1, 1, 0));
      bn1 = register_module("bn1", nn::BatchNorm2d(planes));
      conv2 = register_module("conv2", conv(planes, planes, 3, stride, 1));
      bn2 = register_module("bn2", nn::BatchNorm2d(planes));
      conv3 = register_module("conv3", conv(planes, planes * expansion, 1, 1, 0));
      bn3 = register_module("bn3", nn::BatchNorm2d(planes * expansion));
    } else {
      conv1 = register_module("conv1", conv(inplanes, planes, 3, stride, 1));
      bn1 = register_module("bn1", nn::BatchNorm2d(planes));
      conv2 = register_module("conv2", conv(planes, planes, 3, 1, 1));
      bn2 = register_module("bn2", nn::BatchNorm2d(planes));
    }
    if (stride != 1 || inplanes != planes * expansion) {
      downsample = register_module(
          "downsample", nn::Sequential(conv(inplanes, planes * expansion, 1, stride, 0),
                                       nn::BatchNorm2d(planes * expansion)));
    }
  }

  nn::BatchNorm2d last_bn() const { return bottleneck_ ? bn3 : bn2; }

  // `run(name, fn)` evaluates one named module; the observer (if any) sees it enter and exit.
  template <typename Run, typename Norm>
  at::Tensor forward(at::Tensor x, const std::string& p, Run&& run, Norm&& norm, bool in_place) {
    // In place, BN outputs are overwritten by ReLU (BN's backward needs its input, not its output).
    auto relu = [in_place](at::Tensor& t) { return in_place ? t.relu_() : at::relu(t); };
    at::Tensor identity = x;
    at::Tensor out = run(p + "conv1", [&] { return conv1(x); });
    out = run(p + "bn1", [&] { return norm(*bn1, out); });
    out = run(p + "relu", [&] { return relu(out); });
    out = run(p + "conv2", [&] { return conv2(out); });
    out = run(p + "bn2", [&] { return norm(*bn2, out); });
    if (bottleneck_) {
      out = run(p + "relu", [&] { return relu(out); });
      out = run(p + "conv3", [&] { return conv3(out); });
      out = run(p + "bn3", [&] { return norm(*bn3, out); });
    }
    if (downsample) {
      identity = run(p + "downsample", [&] {
        at::Tensor d = run(p + "downsample.0", [&] { return downsample[0]->as<nn::Conv2d>()->forward(x); });
        return run(p + "downsample.1", [&] { return norm(*downsample[1]->as<nn::BatchNorm2d>(), d); });
      });
    }
    return run(p + "relu", [&] {
      if (!in_place) return at::relu(out + identity);
      out.add_(identity);
      return out.relu_();
    });
  }

 private:
  bool bottleneck_;
  nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  nn::Sequential downsample{nullptr};
};

const std::vector<ResNetSpec>& specs() {
  static const std::vector<ResNetSpec> all = {
      {"resnet18", false, {2, 2, 2, 2}},  {"resnet34", false, {3, 4, 6, 3}},
      {"resnet50", true, {3, 4, 6, 3}},   {"resnet101", true, {3, 4, 23, 3}},
      {"resnet152", true, {3, 8, 36, 3}},
  };
  return all;
}

const ResNetSpec& find_spec(const std::string& name) {
  for (const auto& s : specs())
    if (s.name == name) return s;
  std::string valid;
  for (const auto& s : specs()) valid += (valid.empty() ? "" : ", ") + s.name;
  throw std::invalid_argument("unknown model '" + name + "' (valid: " + valid + ")");
}

}  // namespace

ResNetImpl::ResNetImpl(const ResNetSpec& spec, const ModelOptions& options) : spec_(spec), options_(options) {
  if (options.num_classes < 1) throw std::invalid_argument("--num-classes must be >= 1");
  if (options.base_width < 4) throw std::invalid_argument("--base-width must be >= 4");
  const int64_t w = options.base_width;
  conv1 = register_module("conv1", options.small_stem ? conv(options.in_channels, w, 3, 1, 1)
                                                       : conv(options.in_channels, w, 7, 2, 3));
  bn1 = register_module("bn1", nn::BatchNorm2d(w));
  const int64_t expansion = spec.bottleneck ? 4 : 1;
  int64_t inplanes = w;
  for (size_t s = 0; s < spec.layers.size(); ++s) {
    const int64_t planes = w << s;
    nn::ModuleList stage;
    for (int64_t b = 0; b < spec.layers[s]; ++b) {
      const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      stage->push_back(std::make_shared<BlockImpl>(spec.bottleneck, inplanes, planes, stride));
      inplanes = planes * expansion;
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  fc = register_module("fc", nn::Linear(w * 8 * expansion, options.num_classes));

  // torchvision's initialisation.
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
  if (options.zero_init_residual) {
    for (auto& stage : stages_)
      for (auto& child : stage->children()) nn::init::zeros_(child->as<BlockImpl>()->last_bn()->weight);
  }
}

template <typename F>
at::Tensor ResNetImpl::run(const std::string& name, F&& f) {
  if (!observer_) return f();
  observer_->on_enter(name);
  return observer_->on_exit(name, f());
}

at::Tensor ResNetImpl::forward(at::Tensor x) {
  auto runner = [this](const std::string& name, auto&& f) { return run(name, f); };
  auto norm = [this](nn::BatchNorm2dImpl& bn, const at::Tensor& t) {
    return batch_norm_ ? batch_norm_(bn, t) : bn.forward(t);
  };
  x = run("conv1", [&] { return conv1(x); });
  x = run("bn1", [&] { return norm(*bn1, x); });
  x = run("relu", [&] { return in_place() ? x.relu_() : at::relu(x); });
  if (!options_.small_stem) x = run("maxpool", [&] { return at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}); });
  for (size_t s = 0; s < stages_.size(); ++s) {
    const std::string stage_name = "layer" + std::to_string(s + 1);
    x = run(stage_name, [&] {
      size_t b = 0;
      for (auto& child : stages_[s]->children()) {
        const std::string block_name = stage_name + "." + std::to_string(b++);
        x = run(block_name, [&] { return child->as<BlockImpl>()->forward(x, block_name + ".", runner, norm, in_place()); });
      }
      return x;
    });
  }
  x = run("avgpool", [&] { return at::adaptive_avg_pool2d(x, {1, 1}); });
  x = x.flatten(1);
  return run("fc", [&] { return fc(x); });
}

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const auto& s : specs()) out.push_back(s.name);
  return out;
}

ResNet create_model(const std::string& name, const ModelOptions& options) {
  return ResNet(find_spec(name), options);
}

int64_t parameter_count(const torch::nn::Module& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

int64_t forward_macs(const std::string& name, const ModelOptions& options, int64_t image_size) {
  const ResNetSpec& spec = find_spec(name);
  auto out_size = [](int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; };
  const int64_t w = options.base_width;
  int64_t h = image_size, macs = 0;
  if (options.small_stem) {
    macs += options.in_channels * 9 * w * h * h;
  } else {
    h = out_size(h, 7, 2, 3);
    macs += options.in_channels * 49 * w * h * h;
    h = out_size(h, 3, 2, 1);
  }
  const int64_t expansion = spec.bottleneck ? 4 : 1;
  int64_t inplanes = w;
  for (size_t s = 0; s < spec.layers.size(); ++s) {
    const int64_t planes = w << s;
    for (int64_t b = 0; b < spec.layers[s]; ++b) {
      const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      const int64_t o = out_size(h, 3, stride, 1);
      if (spec.bottleneck) {
        macs += inplanes * planes * h * h + planes * 9 * planes * o * o + planes * planes * 4 * o * o;
      } else {
        macs += inplanes * 9 * planes * o * o + planes * 9 * planes * o * o;
      }
      if (stride != 1 || inplanes != planes * expansion) macs += inplanes * planes * expansion * o * o;
      inplanes = planes * expansion;
      h = o;
    }
  }
  return macs + w * 8 * expansion * options.num_classes;
}

void to_channels_last(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  for (auto& b : model.buffers())
    if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
}

std::vector<std::pair<std::string, at::Tensor>> model_state_dict(const torch::nn::Module& model) {
  // Parameters then buffers, in module order: the first bad key reported is the first a reader meets.
  std::vector<std::pair<std::string, at::Tensor>> state;
  for (const auto& p : model.named_parameters()) state.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers()) state.emplace_back(b.key(), b.value());
  return state;
}

void load_model_state_dict(torch::nn::Module& model, const std::map<std::string, at::Tensor>& loaded,
                           const std::string& source) {
  auto state = model_state_dict(model);
  for (const auto& [key, tensor] : state) {
    auto it = loaded.find(key);
    if (it == loaded.end()) throw std::runtime_error(source + ": missing key '" + key + "'");
    if (it->second.sizes() != tensor.sizes()) {
      std::ostringstream os;
      os << source << ": key '" << key << "' has shape " << it->second.sizes() << ", model expects " << tensor.sizes();
      throw std::runtime_error(os.str());
    }
    // Floating point converts to the model's floating type (fp16/bf16 exactly, fp64 rounded), as
    // Python's load_state_dict does; integers, bools and complex numbers into a floating parameter,
    // or anything but the same type into an integer buffer, are refused.
    const auto have = it->second.scalar_type(), want = tensor.scalar_type();
    if (have != want && !(at::isFloatingType(have) && at::isFloatingType(want)))
      throw std::runtime_error(source + ": key '" + key + "' holds " + c10::getDtypeNames(have).first +
                               ", model expects " + c10::getDtypeNames(want).first);
  }
  std::set<std::string> known;
  for (const auto& entry : state) known.insert(entry.first);
  for (const auto& [key, tensor] : loaded)
    if (!known.count(key)) throw std::runtime_error(source + ": unexpected key '" + key + "'");
  torch::NoGradGuard no_grad;
  for (auto& [key, tensor] : state) tensor.copy_(loaded.at(key));
}

void load_weights(torch::nn::Module& model, const std::string& path, std::ostream* notes) {
  const std::string source = "weights file " + path;
  c10::IValue value;
  std::vector<UnreadValue> unread;
  try {
    value = load_state_file(path, &unread);  // names the file and, for a bad tensor, its key
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("weights file ") + e.what());
  }
  const FoundModelState found = find_model_state(value, model_state_dict(model), unread, source);
  load_model_state_dict(model, found.tensors, source + found.entry);
  if (!notes) return;
  std::string skipped;  // the first few: a file may hold a million objects
  for (size_t i = 0; i < unread.size() && i < 5; ++i)
    skipped += (i ? ", " : "") + unread[i].name + " (" + unread[i].class_name + ")";
  if (unread.size() > 5) skipped += ", ...";
  if (found.as_saved() && skipped.empty()) return;  // torch.save(model.state_dict()) as it is: nothing to say
  *notes << "note: " << source << ": loaded " << found.describe() << (skipped.empty() ? "" : "; not read: " + skipped)
         << "\n";
}

void save_weights(const torch::nn::Module& model, const std::string& path) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  for (const auto& [key, tensor] : model_state_dict(model)) dict.insert(key, tensor.detach().to(at::kCPU).contiguous());
  save_state_file(dict, path);  // "cannot write PATH: reason" on failure, the old file intact
}

}  // namespace crosstrain::core
