#include "tools/train/model_catalog.h"

#include "core/models.h"

namespace crosstrain::train {

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

int64_t estimate_parameters(const std::string& name, int64_t num_classes, bool small_stem, int64_t base_width) {
  // P(w) = a w^2 + b w + 1 with one class (the last term: the classifier's bias); the classifier's
  // other rows add (inputs(w) + 1) x (classes - 1), its inputs proportional to w.
  auto one_class = [&](int64_t w, int64_t* fc_inputs) {
    core::ModelOptions o;
    o.num_classes = 1;
    o.small_stem = small_stem;
    o.base_width = w;
    auto model = core::create_model(name, o);
    for (const auto& p : model->named_parameters())
      if (p.key() == "fc.weight") *fc_inputs = p.value().size(1);
    return static_cast<double>(core::parameter_count(*model) - 1);
  };
  int64_t fc4 = 0, fc8 = 0;
  const double p4 = one_class(4, &fc4), p8 = one_class(8, &fc8);
  const double a = (p8 - 2 * p4) / 32, b = (p4 - 16 * a) / 4;
  const double w = static_cast<double>(base_width);
  const double fc_inputs = static_cast<double>(fc4) * w / 4;
  return static_cast<int64_t>(a * w * w + b * w + 1 + (fc_inputs + 1) * static_cast<double>(num_classes - 1) + 0.5);
}

}  // namespace crosstrain::train
