#pragma once
// `crosstrain models`: the registry's models with their size and cost. Torch-free header.
#include <cstdint>
#include <string>
#include <vector>

namespace crosstrain::tools {

struct ModelEntry {
  std::string name;
  int64_t parameters;
  double forward_gflops;  // per image at image_size: 2 x multiply-accumulates
};

std::vector<ModelEntry> list_models(int64_t num_classes, int64_t image_size, bool small_stem);

}  // namespace crosstrain::tools
