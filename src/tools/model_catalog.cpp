#include "tools/model_catalog.h"

#include "core/models.h"

namespace crosstrain::tools {

std::vector<ModelEntry> list_models(int64_t num_classes, int64_t image_size, bool small_stem) {
  std::vector<ModelEntry> out;
  core::ModelOptions o;
  o.num_classes = num_classes;
  o.small_stem = small_stem;
  for (const auto& name : core::model_names()) {
    auto model = core::create_model(name, o);
    out.push_back({name, core::parameter_count(*model),
                   2.0 * static_cast<double>(core::forward_macs(name, o, image_size)) / 1e9});
  }
  return out;
}

}  // namespace crosstrain::tools
