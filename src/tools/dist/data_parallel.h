#pragma once
// Data-parallel gradient exchange with c10d's Reducer, the C++ engine of torch's
// DistributedDataParallel: gradients are bucketed (--bucket-cap-mb, 25 MiB by default; a 1 MiB
// first bucket) and each bucket is all-reduced from an autograd hook as soon as its last gradient
// is ready, so communication overlaps the rest of backward. At the end of the first step's backward
// the buckets are rebuilt in the order gradients became ready, as DDP does; bucket_layout() and
// restore_bucket_layout() carry that grouping through a checkpoint, since with more than two ranks
// Gloo's sums depend on where a gradient sits in its bucket.
//
//   dist::DataParallel dp(group, model, {.bucket_cap_mb = 25, .broadcast_buffers = true});
//   trainer_parts.grad_sync = &dp;
//
// At construction parameters and buffers are checked to have the same shapes on every rank, then
// broadcast from rank 0 and verified equal. Gradients are bucket views; an optimizer may drop
// them between steps (the Reducer then writes the next gradient into its view, divided, in one pass). With broadcast_buffers, buffers (BatchNorm running statistics) come from rank 0
// before every forward. `compression` fp16/bf16 all-reduces each bucket in that type, divided by the
// world size first (torch's fp16_compress_hook; bf16 keeps fp32's range).
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/models.h"
#include "tools/dist/gradient_sync.h"
#include "tools/dist/group.h"

namespace c10d {
class Reducer;
}

namespace crosstrain::dist {

struct DataParallelOptions {
  double bucket_cap_mb = 25;
  bool broadcast_buffers = true;
  std::string compression = "none";  // none | fp16 | bf16
};

// Two figures that change when any element of `tensors` changes, compared across ranks to show they
// hold the same parameters: the sum of all elements and a sum of even-position elements weighted by
// the tensor's index (order-sensitive). Computed in double through views, without a copy.
std::vector<double> parameter_checksum(const std::vector<at::Tensor>& tensors);

class DataParallel final : public GradientSync {
 public:
  DataParallel(Group& group, core::TrainableModel& model, DataParallelOptions options);
  ~DataParallel() override;

  void before_forward(bool sync) override;
  void after_forward(bool sync) override;
  void backward(const std::function<void()>& run_backward, int64_t step) override;
  std::vector<double> mean_over_ranks(std::vector<double> values, const std::string& what) override;
  // Checks that parameters are bitwise the same on every rank (a checksum compared by all-reduce);
  // std::runtime_error naming `when` if they drifted apart.
  void verify_in_sync(const std::string& when);
  int rank() const override { return group_.rank(); }
  int world_size() const override { return group_.size(); }
  std::vector<std::vector<int64_t>> bucket_layout() const override;
  void restore_bucket_layout(const std::vector<std::vector<int64_t>>& layout) override;

 private:
  void make_reducer(std::vector<std::vector<size_t>> buckets);
  void check_same_everywhere(const std::vector<double>& local, const std::string& what);
  void broadcast_state();

  Group& group_;
  DataParallelOptions options_;
  std::vector<at::Tensor> params_, buffers_;
  std::vector<std::string> names_;
  c10::Device device_ = c10::kCPU;
  std::shared_ptr<c10d::Reducer> reducer_;
  bool regrouped_ = false;  // buckets no longer the one-bucket start
};

}  // namespace crosstrain::dist
