#pragma once
// Random numbers for augmentation. Each sample gets its own generator, seeded from
// (seed, epoch, sample index), so a sample's crop and flip do not depend on which worker thread
// decoded it or in which order: runs are reproducible whatever the worker count.
// The sequence is defined here (SplitMix64), not by the standard library, so it is the same on
// every platform and compiler.
#include <cstdint>

namespace crosstrain::data {

// SplitMix64's output function.
constexpr uint64_t splitmix_finalize(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
constexpr uint64_t mix_seed(uint64_t x) { return splitmix_finalize(x + 0x9E3779B97F4A7C15ull); }

class SampleRng {
 public:
  explicit SampleRng(uint64_t seed) : state_(seed) {}
  SampleRng(uint64_t seed, uint64_t epoch, uint64_t index)
      : state_(mix_seed(mix_seed(mix_seed(seed) ^ epoch) ^ index)) {}

  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return splitmix_finalize(state_);
  }
  // Uniform in [a, b).
  double uniform(double a, double b) { return a + (b - a) * ((next() >> 11) * 0x1.0p-53); }
  // Uniform integer in [lo, hi); hi > lo. Modulo bias is below 2^-40 for the ranges used here.
  int64_t randint(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo));
  }
  bool coin() { return (next() >> 63) != 0; }

 private:
  uint64_t state_;
};

}  // namespace crosstrain::data
