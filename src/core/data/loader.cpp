#include "core/data/loader.h"

#include <cstdlib>
#include <new>

namespace crosstrain::data {
namespace {

// Thrown inside a worker when its epoch was cancelled; never leaves the loader.
struct Cancelled {};

}  // namespace

void LoaderOptions::validate() const {
  if (batch_size <= 0) throw std::invalid_argument("loader: batch size must be > 0");
  if (workers < 0) throw std::invalid_argument("loader: workers must be >= 0");
  if (prefetch < 0) throw std::invalid_argument("loader: prefetch must be >= 0");
  if (world_size <= 0) throw std::invalid_argument("loader: world size must be > 0");
  if (rank < 0 || rank >= world_size)
    throw std::invalid_argument("loader: rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_size) + ")");
}

namespace {

// Batch buffers are tens of MiB: fresh ones come from mmap and cost a page fault (and a kernel
// page clear) per 4 KiB on first touch, a quarter of the pipeline's time. Returned buffers are
// kept for reuse instead, up to a bound.
struct RecyclingPool {
  static constexpr size_t kMaxCached = 64;
  std::mutex mutex;
  std::multimap<size_t, void*> free_buffers;
  ~RecyclingPool() {
    for (auto& [bytes, p] : free_buffers) std::free(p);
  }
  void* allocate(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = free_buffers.find(bytes);
      if (it != free_buffers.end()) {
        void* p = it->second;
        free_buffers.erase(it);
        return p;
      }
    }
    return std::malloc(bytes ? bytes : 1);
  }
  void release(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (free_buffers.size() < kMaxCached) {
        free_buffers.emplace(bytes, p);
        return;
      }
    }
    std::free(p);
  }
};

}  // namespace

BatchAllocator malloc_batch_allocator() {
  auto pool = std::make_shared<RecyclingPool>();
  return BatchAllocator{[pool](size_t bytes) { return pool->allocate(bytes); },
                        [pool](void* p, size_t bytes) { pool->release(p, bytes); }};
}

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, BatchAllocator allocator)
    : dataset_(std::move(dataset)), options_(options), allocator_(std::make_shared<BatchAllocator>(std::move(allocator))) {
  if (!dataset_) throw std::invalid_argument("loader: no dataset");
  options_.validate();
  if (!allocator_->allocate || !allocator_->release) throw std::invalid_argument("loader: allocator needs both functions");
  if (options_.prefetch == 0) options_.prefetch = 2 * std::max(options_.workers, 1);
  layout_ = dataset_->sample_layout();
}

Loader::~Loader() { stop_workers(); }

void Loader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
    ++generation_;
  }
  work_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

// Sharding is by whole batches: the epoch's permutation is cut into global batches of batch_size
// consecutive samples, and rank r takes global batches r, r+W, r+2W ... So the sequence of batches
// does not depend on the world size: rank r's step s on W ranks sees the batch that micro-step r of
// step s sees on one process accumulating W micro-batches.
int64_t Loader::global_batches() const {
  const int64_t n = static_cast<int64_t>(dataset_->size()), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

int64_t Loader::batches_per_epoch() const {
  const int64_t g = global_batches(), w = options_.world_size, r = options_.rank;
  if (options_.drop_last) return g / w;  // cut so every rank takes as many steps
  return g / w + (r < g % w ? 1 : 0);
}

int64_t Loader::samples_per_shard() const {
  const int64_t n = static_cast<int64_t>(dataset_->size()), b = options_.batch_size;
  const int64_t batches = batches_per_epoch();
  if (batches == 0) return 0;
  const int64_t last_global = (batches - 1) * options_.world_size + options_.rank;
  return (batches - 1) * b + std::min(b, n - last_global * b);
}

std::vector<size_t> Loader::epoch_order(int epoch) const {
  const size_t n = dataset_->size();
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = i;
  if (options_.shuffle && n > 1) {
    // Fisher-Yates with our own generator: the same permutation on every platform.
    SampleRng rng(options_.seed, static_cast<uint64_t>(epoch), ~uint64_t{0});
    for (size_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(i) + 1))]);
  }
  const size_t w = static_cast<size_t>(options_.world_size), r = static_cast<size_t>(options_.rank);
  const size_t b = static_cast<size_t>(options_.batch_size);
  const size_t batches = static_cast<size_t>(batches_per_epoch());
  std::vector<size_t> shard;
  shard.reserve(static_cast<size_t>(samples_per_shard()));
  for (size_t k = 0; k < batches; ++k) {
    const size_t first = (k * w + r) * b;
    for (size_t pos = first; pos < std::min(first + b, n); ++pos) shard.push_back(perm[pos]);
  }
  return shard;
}

void Loader::begin_epoch(int epoch, int64_t first_batch) {
  if (first_batch < 0 || first_batch > batches_per_epoch())
    throw std::out_of_range("loader: batch " + std::to_string(first_batch) + " is outside epoch " +
                            std::to_string(epoch) + " (" + std::to_string(batches_per_epoch()) + " batches)");
  auto order = std::make_shared<const std::vector<size_t>>(epoch_order(epoch));
  std::map<int64_t, Result> dropped;  // released outside the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shutting_down_) throw std::logic_error("loader: begin_epoch after shutdown");
    ++generation_;
    epoch_ = epoch;
    order_ = std::move(order);
    num_batches_ = batches_per_epoch();
    next_claim_ = first_batch;
    next_deliver_ = first_batch;
    dropped.swap(ready_);
    if (threads_.empty())
      for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { worker_loop(); });
  }
  work_cv_.notify_all();
}

bool Loader::cancelled(uint64_t generation) const { return generation_.load() != generation; }

void Loader::note_bad(size_t index, const BadSample& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!bad_seen_.insert(index).second) return;
  ++stats_.bad_samples;
  if (stats_.first_bad.size() < options_.report_first) stats_.first_bad.push_back({e.where(), e.reason()});
}

Batch Loader::fill_batch(int64_t batch_index, int epoch, uint64_t generation, const std::vector<size_t>& order) {
  const int64_t shard = static_cast<int64_t>(order.size());
  const int64_t first = batch_index * options_.batch_size;
  const int64_t count = std::min(options_.batch_size, shard - first);
  const size_t sample_bytes = layout_.bytes();
  const size_t bytes = static_cast<size_t>(count) * sample_bytes;
  void* memory = allocator_->allocate(bytes);
  if (!memory) throw std::runtime_error("loader: batch allocator returned no memory for " + std::to_string(bytes) + " bytes");
  Batch batch;
  auto allocator = allocator_;
  batch.buffer_ = std::shared_ptr<void>(memory, [allocator, bytes](void* p) { allocator->release(p, bytes); });
  batch.bytes_ = bytes;
  batch.layout_ = layout_;
  batch.index_ = batch_index;
  batch.epoch_ = epoch;
  batch.labels_.reserve(static_cast<size_t>(count));
  batch.indices_.reserve(static_cast<size_t>(count));
  for (int64_t s = 0; s < count; ++s) {
    if (cancelled(generation)) throw Cancelled{};
    uint8_t* dest = static_cast<uint8_t*>(memory) + static_cast<size_t>(s) * sample_bytes;
    bool done = false;
    // A bad sample is replaced by the next one in the shard's order that decodes.
    for (int64_t attempt = 0; attempt < shard && !done; ++attempt) {
      const size_t index = order[static_cast<size_t>((first + s + attempt) % shard)];
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (bad_seen_.count(index)) continue;
      }
      SampleRng rng(options_.seed, static_cast<uint64_t>(epoch), index);
      try {
        dataset_->decode(index, rng, dest);
      } catch (const BadSample& e) {
        note_bad(index, e);
        if (options_.strict) throw;
        continue;
      }
      batch.labels_.push_back(dataset_->label(index));
      batch.indices_.push_back(index);
      done = true;
    }
    if (!done) throw std::runtime_error("loader: no usable samples in this shard (" + std::to_string(stats().bad_samples) + " bad)");
  }
  return batch;
}

void Loader::worker_loop() {
  for (;;) {
    int64_t b = 0;
    int epoch = 0;
    uint64_t generation = 0;
    std::shared_ptr<const std::vector<size_t>> order;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] {
        return shutting_down_ || (next_claim_ < num_batches_ && next_claim_ < next_deliver_ + options_.prefetch);
      });
      if (shutting_down_) return;
      b = next_claim_++;
      epoch = epoch_;
      generation = generation_.load();
      order = order_;
    }
    Result result;
    try {
      result.batch = fill_batch(b, epoch, generation, *order);
    } catch (const Cancelled&) {
      continue;
    } catch (...) {
      result.error = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (generation_.load() != generation) {
      lock.unlock();  // a stale batch: its buffer goes back to the allocator here
      continue;
    }
    ready_[b] = std::move(result);
    lock.unlock();
    ready_cv_.notify_all();
  }
}

std::optional<Batch> Loader::next() {
  if (options_.workers == 0) {
    int64_t b;
    int epoch;
    std::shared_ptr<const std::vector<size_t>> order;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (epoch_ < 0) throw std::logic_error("loader: call begin_epoch before next");
      if (next_deliver_ >= num_batches_) return std::nullopt;
      b = next_deliver_++;
      epoch = epoch_;
      order = order_;
    }
    try {
      Batch batch = fill_batch(b, epoch, generation_.load(), *order);
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.batches;
      stats_.samples += batch.size();
      return batch;
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      next_deliver_ = num_batches_;  // the epoch ends with the error
      throw;
    }
  }
  Result result;
  std::map<int64_t, Result> dropped;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (epoch_ < 0) throw std::logic_error("loader: call begin_epoch before next");
    if (next_deliver_ >= num_batches_) return std::nullopt;
    ready_cv_.wait(lock, [&] { return shutting_down_ || ready_.count(next_deliver_) > 0; });
    if (shutting_down_) return std::nullopt;
    auto it = ready_.find(next_deliver_);
    result = std::move(it->second);
    ready_.erase(it);
    ++next_deliver_;
    if (result.error) {
      // The epoch ends here: stop the other workers' batches and forget the ones ready.
      ++generation_;
      next_deliver_ = num_batches_ = next_claim_;
      dropped.swap(ready_);
    } else {
      ++stats_.batches;
      stats_.samples += result.batch->size();
    }
  }
  work_cv_.notify_all();
  if (result.error) std::rethrow_exception(result.error);
  return std::move(result.batch);
}

LoaderStats Loader::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace crosstrain::data
