#pragma once
// `crosstrain models`: the registry's models with their size and cost. Torch-free header.
#include <cstdint>
#include <string>
#include <vector>

namespace crosstrain::train {

struct ModelEntry {
  std::string name;
  int64_t parameters;
  double forward_gflops;  // per image at image_size: 2 x multiply-accumulates
};

std::vector<ModelEntry> list_models(int64_t num_classes, int64_t image_size, bool small_stem);

// Parameters of `name` at `base_width` and `num_classes`, without building it at that size: every
// convolution's channels scale with the base width, so the count is a quadratic in it, fitted from
// two narrow builds (exact for the ResNet family). A run checks its memory against this first: a
// ResNet-152 at --base-width 1024 has 15 billion parameters and would grow until the kernel kills it.
int64_t estimate_parameters(const std::string& name, int64_t num_classes, bool small_stem, int64_t base_width);

}  // namespace crosstrain::train
