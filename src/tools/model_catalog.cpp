#include "tools/model_catalog.h"

#include "core/models.h"

namespace crosstrain::tools {

std::vector<ModelEntry> list_models(int64_t num_classes, int64_t image_size, bool small_stem) {
  std::vector<ModelEntry> out;
  core::ModelOptions o;
  o.num_classes = num_classes;
  o.small_stem = small_stem;
  // The model is built with one class and the classifier's other rows counted from its input
  // width: a million classes would otherwise allocate gigabytes only to be counted.
  core::ModelOptions one = o;
  one.num_classes = 1;
  for (const auto& name : core::model_names()) {
    auto model = core::create_model(name, one);
    int64_t fc_inputs = 0;
    for (const auto& p : model->named_parameters())
      if (p.key() == "fc.weight") fc_inputs = p.value().size(1);
    const int64_t parameters = core::parameter_count(*model) + (fc_inputs + 1) * (num_classes - 1);
    out.push_back({name, parameters, 2.0 * static_cast<double>(core::forward_macs(name, o, image_size)) / 1e9});
  }
  return out;
}

}  // namespace crosstrain::tools
