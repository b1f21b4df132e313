#include "tools/dist/data_parallel.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <sstream>

namespace crosstrain::dist {

namespace {

constexpr int64_t kFirstBucketBytes = 1 << 20;       // DDP's small first bucket
constexpr size_t kBroadcastBucketBytes = 250u << 20;  // coalescing of the start-up broadcast

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// All-reduces each bucket in a smaller floating type: divide by the world size first (no overflow),
// reduce, and write the result back into the bucket in its own type.
class CompressedAllReduce final : public c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>> {
 public:
  CompressedAllReduce(c10::intrusive_ptr<c10d::ProcessGroup> pg, at::ScalarType type)
      : CppCommHookInterface(std::move(pg)), type_(type) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    at::Tensor bucket_buffer = bucket.getBufferRef();

    std::vector<at::Tensor> compressed{bucket_buffer.to(type_).div_(state_->getSize())};
    auto reduced = state_->allreduce(compressed)->getFuture();
    return reduced->then(
        [bucket_buffer](c10::ivalue::Future& f) {
          bucket_buffer.copy_(f.value().toTensorVector().at(0));
          return c10::IValue(bucket_buffer);
        },
        c10::TensorType::get());
  }

 private:
  at::ScalarType type_;
};

}  // namespace

DataParallel::DataParallel(Group& group, core::TrainableModel& model, DataParallelOptions options)
    : group_(group), options_(std::move(options)) {
  if (!(options_.bucket_cap_mb > 0)) throw std::invalid_argument("--bucket-cap-mb must be > 0");
  for (const auto& p : model.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    params_.push_back(p.value());
    names_.push_back(p.key());
  }
  for (const auto& b : model.named_buffers()) buffers_.push_back(b.value());
  if (params_.empty()) throw std::invalid_argument("data-parallel training: the model has no trainable parameters");
  device_ = params_.front().device();

  // Same architecture everywhere, or the broadcast below would mix up tensors.
  uint64_t h = 0xcbf29ce484222325ull;
  double numel = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    std::ostringstream shape;
    shape << names_[i] << params_[i].sizes() << params_[i].scalar_type();
    h = fnv1a(h, shape.str());
    numel += static_cast<double>(params_[i].numel());
  }
  for (const auto& b : buffers_) numel += static_cast<double>(b.numel());
  check_same_everywhere({static_cast<double>(params_.size()), static_cast<double>(buffers_.size()), numel,
                         static_cast<double>(h >> 12)},
                        "the model's parameters (names, shapes, types) differ between ranks: start every worker "
                        "with the same --model and model flags");
  broadcast_state();

  // One bucket until the first backward shows the order gradients arrive in (DDP's static start).
  std::vector<size_t> all(params_.size());
  std::iota(all.begin(), all.end(), size_t{0});
  if (options_.compression != "none" && options_.compression != "fp16" && options_.compression != "bf16")
    throw std::invalid_argument("--grad-compression must be none, fp16 or bf16, not '" + options_.compression + "'");
  make_reducer({all});
}

void DataParallel::make_reducer(std::vector<std::vector<size_t>> buckets) {
  std::unordered_map<size_t, std::string> names;
  for (size_t i = 0; i < names_.size(); ++i) names[i] = names_[i];
  const auto cap = static_cast<int64_t>(options_.bucket_cap_mb * 1024 * 1024);
  reducer_.reset();  // its autograd hooks go with it
  group_.guarded("setting up gradient buckets", [&] {
    reducer_ = std::make_shared<c10d::Reducer>(params_, std::move(buckets), group_.process_group(),
                                               std::vector<bool>(params_.size(), false), cap,
                                               /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/true,
                                               names, kFirstBucketBytes, /*skip_all_reduce_unused_params=*/false,
                                               /*use_python_reducer=*/false, std::vector<int64_t>{});
  });
  if (options_.compression == "fp16" || options_.compression == "bf16")
    reducer_->register_comm_hook(std::make_unique<CompressedAllReduce>(
        group_.process_group(), options_.compression == "fp16" ? at::kHalf : at::kBFloat16));
}

std::vector<std::vector<int64_t>> DataParallel::bucket_layout() const {
  if (!regrouped_) return {};
  std::unordered_map<const c10::TensorImpl*, int64_t> index;
  for (size_t i = 0; i < params_.size(); ++i) index[params_[i].unsafeGetTensorImpl()] = static_cast<int64_t>(i);
  std::vector<std::vector<int64_t>> layout;
  for (const auto& bucket : reducer_->get_grad_buckets(/*return_zero_tensors=*/false)) {
    layout.emplace_back();
    for (const auto& p : bucket.getParameters()) layout.back().push_back(index.at(p.unsafeGetTensorImpl()));
  }
  return layout;
}

void DataParallel::restore_bucket_layout(const std::vector<std::vector<int64_t>>& layout) {
  const std::string where = "data-parallel state: the gradient bucket layout";
  std::vector<int> seen(params_.size(), 0);
  std::vector<std::vector<size_t>> buckets;
  for (const auto& bucket : layout) {
    if (bucket.empty()) throw std::invalid_argument(where + " has an empty bucket");
    buckets.emplace_back();
    for (int64_t i : bucket) {
      if (i < 0 || i >= static_cast<int64_t>(params_.size()) || seen[static_cast<size_t>(i)]++)
        throw std::invalid_argument(where + " names parameter " + std::to_string(i) + " out of range or twice (" +
                                    std::to_string(params_.size()) + " parameters)");
      const auto& first = params_[static_cast<size_t>(bucket.front())];
      if (params_[static_cast<size_t>(i)].scalar_type() != first.scalar_type())
        throw std::invalid_argument(where + " mixes parameter types in one bucket");
      buckets.back().push_back(static_cast<size_t>(i));
    }
  }
  if (std::find(seen.begin(), seen.end(), 0) != seen.end())
    throw std::invalid_argument(where + " leaves out parameters (" + std::to_string(params_.size()) + " parameters)");
  make_reducer(std::move(buckets));
  regrouped_ = true;
}

DataParallel::~DataParallel() = default;

void DataParallel::check_same_everywhere(const std::vector<double>& local, const std::string& what) {
  auto hi = at::tensor(local, at::TensorOptions().dtype(at::kDouble)).to(device_);
  auto lo = hi.clone();
  group_.guarded("checking that every rank agrees", [&] {
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::MAX;
    std::vector<at::Tensor> a{hi};
    group_.process_group()->allreduce(a, o)->wait(group_.timeout());
    o.reduceOp = c10d::ReduceOp::MIN;
    std::vector<at::Tensor> b{lo};
    group_.process_group()->allreduce(b, o)->wait(group_.timeout());
  });
  if (!at::equal(hi, lo)) throw std::runtime_error(what);
}

void DataParallel::broadcast_state() {
  std::vector<at::Tensor> state = params_;
  state.insert(state.end(), buffers_.begin(), buffers_.end());
  {
    at::NoGradGuard no_grad;
    group_.guarded("broadcasting parameters and buffers from rank 0",
                   [&] { c10d::broadcast_coalesced(group_.process_group(), state, kBroadcastBucketBytes, 0); });
  }
  check_same_everywhere(parameter_checksum(state), "parameters or buffers still differ between ranks after the broadcast from rank 0");
}

std::vector<double> parameter_checksum(const std::vector<at::Tensor>& tensors) {
  // Sums in double read each element once, through views: no copy of the model in double, which
  // would cost 8 bytes per parameter and page faults on large models. The even-position sums,
  // weighted by the tensor's index, catch tensors or elements that changed places.
  double sum = 0, weighted = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (!at::isFloatingType(t.scalar_type()) && !at::isIntegralType(t.scalar_type(), false)) continue;
    const auto flat = t.detach().reshape({-1});
    sum += flat.sum(at::kDouble).item<double>();
    weighted += static_cast<double>(i % 7 + 1) * flat.slice(0, 0, c10::nullopt, 2).sum(at::kDouble).item<double>();
  }
  return {sum, weighted};
}

void DataParallel::verify_in_sync(const std::string& when) {
  check_same_everywhere(parameter_checksum(params_), "parameters differ between ranks " + when +
                                               ": gradients were not the same everywhere (please report this)");
}

void DataParallel::before_forward(bool sync) {
  if (sync) reducer_->prepare_for_forward();
  if (options_.broadcast_buffers && !buffers_.empty() && group_.size() > 1) {
    at::NoGradGuard no_grad;
    group_.guarded("broadcasting buffers from rank 0",
                   [&] { c10d::broadcast_coalesced(group_.process_group(), buffers_, kBroadcastBucketBytes, 0); });
  }
}

void DataParallel::after_forward(bool sync) {
  if (sync) reducer_->prepare_for_backward({});
}

void DataParallel::backward(const std::function<void()>& run_backward, int64_t step) {
  group_.guarded("the gradient all-reduce of step " + std::to_string(step), run_backward);
  // DDP regroups the buckets once, in the order the first synchronised backward produced gradients
  // (a no-op afterwards, and after a backward that did not synchronise). Doing it here rather than
  // before the next forward means a checkpoint taken after any step records the grouping the next
  // step sums in (the gradients move into the new buckets unchanged).
  group_.guarded("rebuilding gradient buckets", [&] {
    if (reducer_->rebuild_buckets()) regrouped_ = true;
  });
}

std::vector<double> DataParallel::mean_over_ranks(std::vector<double> values, const std::string& what) {
  if (group_.size() == 1 || values.empty()) return values;
  auto t = at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(device_);
  group_.all_reduce_sum(t, what);
  t = t.cpu();
  for (size_t i = 0; i < values.size(); ++i) values[i] = t[static_cast<int64_t>(i)].item<double>() / group_.size();
  return values;
}

}  // namespace crosstrain::dist
