#include "core/data/loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <thread>

using namespace crosstrain::data;
using namespace std::chrono_literals;

namespace {

// Sample i is 4 floats: i, and three draws of its generator (so augmentation randomness is
// part of what must be reproducible). Chosen indices are bad or fail hard; decoding can be slow.
class ProbeDataset : public Dataset {
 public:
  explicit ProbeDataset(size_t n) : n_(n) {}
  std::set<size_t> bad, fatal;
  std::chrono::milliseconds delay{0};
  mutable std::atomic<int> decodes{0};

  std::string kind() const override { return "probe"; }
  size_t size() const override { return n_; }
  int num_classes() const override { return 10; }
  int source_channels() const override { return 1; }
  SampleLayout sample_layout() const override { return SampleLayout{1, 2, 2, SampleType::Float32}; }
  int64_t label(size_t i) const override { return static_cast<int64_t>(i % 10); }
  std::string describe(size_t i) const override { return "item" + std::to_string(i); }
  void decode(size_t i, SampleRng& rng, void* dest) const override {
    ++decodes;
    if (delay.count()) std::this_thread::sleep_for(delay);
    if (bad.count(i)) throw BadSample(describe(i), "corrupt");
    if (fatal.count(i)) throw std::runtime_error("disk on fire at " + describe(i));
    float* f = static_cast<float*>(dest);
    f[0] = static_cast<float>(i);
    for (int k = 1; k < 4; ++k) f[k] = static_cast<float>(rng.uniform(0, 1));
  }

 private:
  size_t n_;
};

struct Epoch {
  std::vector<std::vector<int64_t>> labels;
  std::vector<std::vector<size_t>> indices;
  std::vector<std::vector<float>> data;
  bool operator==(const Epoch& o) const { return labels == o.labels && indices == o.indices && data == o.data; }
};

Epoch run_epoch(Loader& loader, int epoch) {
  Epoch e;
  loader.begin_epoch(epoch);
  while (auto b = loader.next()) {
    e.labels.push_back(b->labels());
    e.indices.push_back(b->indices());
    const float* f = static_cast<const float*>(b->data());
    e.data.emplace_back(f, f + b->bytes() / sizeof(float));
  }
  return e;
}

// Runs f on another thread and fails (instead of hanging the suite) when it takes too long.
template <typename F>
void within(std::chrono::seconds limit, F&& f) {
  auto fut = std::async(std::launch::async, std::forward<F>(f));
  ASSERT_EQ(fut.wait_for(limit), std::future_status::ready) << "did not finish within " << limit.count() << " s";
  fut.get();
}

}  // namespace

TEST(Loader, SameBatchesWhateverTheWorkerCount) {
  auto ds = std::make_shared<ProbeDataset>(103);
  LoaderOptions o;
  o.batch_size = 8;
  o.seed = 7;
  o.drop_last = false;
  std::vector<Epoch> reference;
  for (int workers : {0, 1, 3, 5}) {
    o.workers = workers;
    o.prefetch = workers == 5 ? 1 : 0;
    Loader loader(ds, o);
    std::vector<Epoch> epochs = {run_epoch(loader, 0), run_epoch(loader, 1)};
    if (reference.empty()) {
      reference = epochs;
      continue;
    }
    EXPECT_TRUE(epochs[0] == reference[0]) << "workers " << workers;
    EXPECT_TRUE(epochs[1] == reference[1]) << "workers " << workers;
  }
  // Each epoch is a permutation, and the two epochs differ.
  std::vector<size_t> all;
  for (auto& b : reference[0].indices) all.insert(all.end(), b.begin(), b.end());
  EXPECT_EQ(all.size(), 103u);
  EXPECT_EQ(std::set<size_t>(all.begin(), all.end()).size(), 103u);
  EXPECT_FALSE(reference[0].indices == reference[1].indices);
  EXPECT_EQ(reference[0].indices.back().size(), 103u % 8);
}

TEST(Loader, DropLastAndNoShuffle) {
  auto ds = std::make_shared<ProbeDataset>(10);
  LoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  o.workers = 2;
  Loader loader(ds, o);
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  Epoch e = run_epoch(loader, 0);
  ASSERT_EQ(e.indices.size(), 2u);
  EXPECT_EQ(e.indices[1], (std::vector<size_t>{4, 5, 6, 7}));
  EXPECT_EQ(e.labels[1], (std::vector<int64_t>{4, 5, 6, 7}));
}

TEST(Loader, ShardsAreWholeBatchesDisjointAndCoverTheEpoch) {
  auto ds = std::make_shared<ProbeDataset>(11);
  for (bool drop_last : {false, true}) {
    // One process sees the global batches in order; rank r of 3 must see batches r, r+3, ...
    LoaderOptions one;
    one.batch_size = 2;
    one.seed = 3;
    one.drop_last = drop_last;
    const auto all = Loader(ds, one).epoch_order(0);
    std::multiset<size_t> seen;
    for (int rank = 0; rank < 3; ++rank) {
      LoaderOptions o = one;
      o.world_size = 3;
      o.rank = rank;
      Loader loader(ds, o);
      auto order = loader.epoch_order(0);
      // 11 samples, batch 2: 5 full global batches and one of 1. drop_last: 5 / 3 = 1 batch per
      // rank; else global batches {0,3}, {1,4}, {2,5}, the last of them partial.
      const size_t expect_batches = drop_last ? 1u : 2u;
      EXPECT_EQ(static_cast<size_t>(loader.batches_per_epoch()), expect_batches) << rank << drop_last;
      EXPECT_EQ(static_cast<int64_t>(order.size()), loader.samples_per_shard());
      for (size_t k = 0; k < order.size(); ++k) {
        const size_t global_batch = (k / 2) * 3 + static_cast<size_t>(rank);
        EXPECT_EQ(order[k], all[global_batch * 2 + k % 2]) << "rank " << rank << " position " << k;
      }
      seen.insert(order.begin(), order.end());
    }
    std::set<size_t> distinct(seen.begin(), seen.end());
    EXPECT_EQ(distinct.size(), seen.size());  // disjoint, nothing padded
    EXPECT_EQ(seen.size(), drop_last ? 6u : 11u);
  }
  LoaderOptions bad;
  bad.world_size = 2;
  bad.rank = 2;
  EXPECT_THROW(Loader(ds, bad), std::invalid_argument);
}

TEST(Loader, BadSamplesAreReplacedCountedAndDeterministic) {
  auto ds = std::make_shared<ProbeDataset>(40);
  ds->bad = {3, 5, 17};
  LoaderOptions o;
  o.batch_size = 8;
  o.seed = 1;
  std::optional<Epoch> first;
  for (int workers : {0, 3}) {
    o.workers = workers;
    Loader loader(ds, o);
    Epoch e = run_epoch(loader, 0);
    ASSERT_EQ(e.indices.size(), 5u);
    for (auto& b : e.indices) {
      EXPECT_EQ(b.size(), 8u);
      for (size_t i : b) EXPECT_EQ(ds->bad.count(i), 0u);
    }
    const LoaderStats s = loader.stats();
    EXPECT_EQ(s.bad_samples, 3);
    ASSERT_EQ(s.first_bad.size(), 3u);
    EXPECT_EQ(s.first_bad[0].reason, "corrupt");
    if (first) EXPECT_TRUE(*first == e);
    else first = e;
  }
}

TEST(Loader, StrictModeAndHardErrorsReachTheConsumer) {
  auto ds = std::make_shared<ProbeDataset>(64);
  ds->bad = {20};
  LoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  o.strict = true;
  for (int workers : {0, 2}) {
    o.workers = workers;
    within(10s, [&] {
      Loader loader(ds, o);
      loader.begin_epoch(0);
      int delivered = 0;
      try {
        while (loader.next()) ++delivered;
        ADD_FAILURE() << "no error";
      } catch (const BadSample& e) {
        EXPECT_EQ(e.where(), "item20");
      }
      EXPECT_EQ(delivered, 5);  // batches 0..4 came before the one holding item 20
      EXPECT_FALSE(loader.next().has_value());  // the epoch ended with the error
    });
  }
  ds->bad.clear();
  ds->fatal = {9};
  o.strict = false;
  o.workers = 3;
  within(10s, [&] {
    Loader loader(ds, o);
    loader.begin_epoch(0);
    EXPECT_THROW(
        {
          while (loader.next()) {
          }
        },
        std::runtime_error);
    // A new epoch starts cleanly after an error (item 9 still fails, later).
    loader.begin_epoch(1);
    EXPECT_TRUE(loader.next().has_value());
  });
}

TEST(Loader, AllSamplesBadIsAnError) {
  auto ds = std::make_shared<ProbeDataset>(6);
  ds->bad = {0, 1, 2, 3, 4, 5};
  LoaderOptions o;
  o.batch_size = 2;
  o.workers = 2;
  within(10s, [&] {
    Loader loader(ds, o);
    loader.begin_epoch(0);
    EXPECT_THROW(loader.next(), std::runtime_error);
  });
}

TEST(Loader, DestructorReturnsPromptlyMidEpoch) {
  auto ds = std::make_shared<ProbeDataset>(10000);
  ds->delay = 20ms;  // a full batch of 64 would take over a second per worker
  LoaderOptions o;
  o.batch_size = 64;
  o.workers = 4;
  o.prefetch = 8;
  within(5s, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    {
      Loader loader(ds, o);
      loader.begin_epoch(0);
      std::this_thread::sleep_for(100ms);
    }  // workers are mid-batch here
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  });
  within(5s, [&] {
    Loader loader(ds, o);  // never started: nothing to join
  });
}

TEST(Loader, CallerAllocatorGetsEveryBufferBack) {
  auto ds = std::make_shared<ProbeDataset>(50);
  auto allocated = std::make_shared<std::atomic<int>>(0);
  auto released = std::make_shared<std::atomic<int>>(0);
  BatchAllocator counting{[allocated](size_t bytes) {
                            ++*allocated;
                            return std::malloc(bytes);
                          },
                          [released](void* p, size_t) {
                            ++*released;
                            std::free(p);
                          }};
  LoaderOptions o;
  o.batch_size = 5;
  o.workers = 3;
  std::optional<Batch> kept;
  {
    Loader loader(ds, o, counting);
    loader.begin_epoch(0);
    kept = loader.next();
    loader.next();
    loader.begin_epoch(1);  // drops whatever was prefetched
    while (loader.next()) {
    }
  }
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(static_cast<const float*>(kept->data())[0], static_cast<float>(kept->indices()[0]));  // still valid
  EXPECT_EQ(*allocated, *released + 1);
  kept.reset();
  EXPECT_EQ(*allocated, *released);
}
