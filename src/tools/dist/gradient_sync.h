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
};

}  // namespace crosstrain::dist
