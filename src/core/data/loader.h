#pragma once
// The threaded input pipeline: N worker threads decode and transform samples straight into batch
// buffers; the consumer receives batches in order.
//
//   Loader loader(dataset, {.batch_size = 256, .workers = 8, .seed = 1});
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     loader.begin_epoch(epoch);
//     while (auto batch = loader.next()) { /* batch->data(), batch->labels() */ }
//   }
//
// Promises:
// - Order: epoch e's sample order is a permutation drawn from (seed, e) alone, and each sample's
//   augmentation from (seed, e, sample index): batches are bit-identical for any worker count.
// - Sharding: by whole batches. The permutation is cut into global batches of batch_size samples and
//   rank r takes global batches r, r+W, ... (with drop_last cut so that every rank has as many; else
//   the first ranks may have one more, and the last global batch may be partial). Unlike torch's
//   DistributedSampler nothing is padded, and rank r's k-th batch is the global batch k*W + r
//   whatever W is: the batches do not change with the world size.
// - Memory: at most `prefetch` batches are being filled or waiting; their buffers come from the
//   BatchAllocator (e.g. pinned host memory for fast, non_blocking copies to a device), which is
//   called from worker threads and must be thread-safe. A Batch returns its buffer when the last
//   copy of it is destroyed, so the consumer may keep it until an asynchronous copy is done.
// - Bad samples: a BadSample is counted and replaced by the next sample of the shard's order
//   (so the batch stays full and the result stays deterministic); with strict it ends the epoch
//   with that error. Any other error in a worker (allocation, I/O) is rethrown by next().
// - Shutdown: the destructor (or begin_epoch mid-epoch) stops workers between samples and joins
//   them; nothing waits for a full batch to finish.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "core/data/dataset.h"

namespace crosstrain::data {

struct LoaderOptions {
  int64_t batch_size = 32;
  int workers = 2;        // 0 = decode on the consumer's thread inside next()
  int prefetch = 0;       // batches filled ahead; 0 = 2 * max(workers, 1)
  bool shuffle = true;
  bool drop_last = true;  // drop the final partial batch (and cut, not pad, the shard)
  uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
  bool strict = false;    // a bad sample ends the epoch with its error instead of being replaced
  size_t report_first = 5;  // how many bad samples LoaderStats keeps by name

  void validate() const;  // std::invalid_argument
};

// Hands out and takes back batch buffers. Both functions may be called from any thread.
struct BatchAllocator {
  std::function<void*(size_t bytes)> allocate;
  std::function<void(void* ptr, size_t bytes)> release;
};
// malloc/free with recycling: released buffers are reused for batches of the same size.
BatchAllocator malloc_batch_allocator();

class Batch {
 public:
  Batch() = default;
  void* data() const { return buffer_.get(); }
  size_t bytes() const { return bytes_; }
  int64_t size() const { return static_cast<int64_t>(labels_.size()); }
  const SampleLayout& layout() const { return layout_; }   // per sample; the batch is NCHW
  const std::vector<int64_t>& labels() const { return labels_; }
  const std::vector<size_t>& indices() const { return indices_; }  // dataset indices actually used
  int64_t index() const { return index_; }  // position in the epoch
  int epoch() const { return epoch_; }
  // The buffer with its release attached: hold a copy for as long as the memory is in use.
  std::shared_ptr<void> buffer() const { return buffer_; }

 private:
  friend class Loader;
  std::shared_ptr<void> buffer_;
  size_t bytes_ = 0;
  SampleLayout layout_;
  std::vector<int64_t> labels_;
  std::vector<size_t> indices_;
  int64_t index_ = 0;
  int epoch_ = 0;
};

struct LoaderStats {
  int64_t batches = 0;
  int64_t samples = 0;
  int64_t bad_samples = 0;           // distinct bad samples met (replaced or fatal)
  std::vector<SkippedItem> first_bad;  // the first report_first of them
};

class Loader {
 public:
  Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options,
         BatchAllocator allocator = malloc_batch_allocator());
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts (or restarts) epoch `epoch` at batch `first_batch` (0: the start; a later batch resumes
  // an interrupted epoch with the same batches it would have had); batches of a previous unfinished
  // epoch are dropped. std::out_of_range when first_batch is past the epoch's end.
  void begin_epoch(int epoch, int64_t first_batch = 0);
  // The next batch in order, or nullopt when the epoch is done. Rethrows worker errors.
  std::optional<Batch> next();

  int64_t batches_per_epoch() const;
  int64_t samples_per_shard() const;
  int64_t global_batches() const;  // of the whole epoch, over all ranks
  // This rank's dataset indices for `epoch`, in order (before bad-sample replacement).
  std::vector<size_t> epoch_order(int epoch) const;
  LoaderStats stats() const;
  const Dataset& dataset() const { return *dataset_; }

 private:
  struct Result {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  void worker_loop();
  void stop_workers();
  Batch fill_batch(int64_t batch_index, int epoch, uint64_t generation, const std::vector<size_t>& order);
  void note_bad(size_t index, const BadSample& e);
  bool cancelled(uint64_t generation) const;

  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  std::shared_ptr<BatchAllocator> allocator_;
  SampleLayout layout_;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;   // workers wait for claimable batches
  std::condition_variable ready_cv_;  // the consumer waits for the next batch
  std::vector<std::thread> threads_;
  bool shutting_down_ = false;
  std::atomic<uint64_t> generation_{0};  // bumped per epoch start and on cancellation
  int epoch_ = -1;
  std::shared_ptr<const std::vector<size_t>> order_;  // this rank's order for the current epoch
  int64_t num_batches_ = 0;
  int64_t next_claim_ = 0;
  int64_t next_deliver_ = 0;
  std::map<int64_t, Result> ready_;
  LoaderStats stats_;
  std::set<size_t> bad_seen_;
};

}  // namespace crosstrain::data
