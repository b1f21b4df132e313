#include "tools/train/train_data.h"

#include <torch/nn/functional/loss.h>

#include <filesystem>
#include <stdexcept>

#include "core/amp.h"

namespace crosstrain::train {

namespace {

data::DatasetOptions dataset_options(const TrainConfig& c, bool training, int64_t image_size) {
  data::DatasetOptions o;
  o.split = training ? data::Split::Train : data::Split::Val;
  o.strict = c.strict_data;
  o.val_root = c.val_root;
  o.jpeg_cache = c.jpeg_cache;
  o.max_samples = training ? c.max_samples : c.val_max_samples;
  o.transform.mode = training ? data::TransformSpec::Mode::Train : data::TransformSpec::Mode::Eval;
  o.transform.size = static_cast<int>(image_size);
  o.transform.scale_min = c.min_crop_scale;
  o.transform.hflip = c.hflip;
  o.transform.channels = 3;  // the models take RGB; gray sources are repeated
  o.transform.output = c.normalize_on_device ? data::SampleType::UInt8 : data::SampleType::Float32;
  return o;
}

}  // namespace

TrainData open_train_data(const TrainConfig& c) {
  TrainData d;
  // Fixed-size datasets keep their stored size unless --image-size asks otherwise; image trees
  // default to the ImageNet crop.
  int64_t size = c.image_size;
  const bool image_tree = c.data.rfind("imagefolder", 0) == 0;
  if (size == 0 && image_tree) size = 224;
  auto train = data::open_dataset(c.data, dataset_options(c, /*training=*/true, size));
  if (train->size() == 0) throw std::runtime_error("dataset " + c.data + " has no usable training samples");
  d.image_size = train->sample_layout().height;
  d.num_classes = train->num_classes();
  d.train = std::shared_ptr<const data::Dataset>(std::move(train));
  return d;
}

bool data_has_val_split(const TrainConfig& c) {
  if (c.data.rfind("imagefolder:", 0) != 0) return true;
  if (!c.val_root.empty()) return true;
  const std::filesystem::path root(c.data.substr(std::string("imagefolder:").size()));
  std::error_code ec;
  return std::filesystem::is_directory(root / "train", ec) && std::filesystem::is_directory(root / "val", ec);
}

std::shared_ptr<const data::Dataset> open_val_data(const TrainConfig& c, int64_t image_size) {
  const bool fixed = c.data.rfind("imagefolder", 0) != 0;
  // Evaluation of fixed-size data at its training size: resize shorter side = size, centre crop.
  auto opts = dataset_options(c, /*training=*/false, image_size);
  if (fixed) opts.transform.resize = static_cast<int>(image_size);
  return std::shared_ptr<const data::Dataset>(data::open_dataset(c.data, opts));
}

std::unique_ptr<core::LoaderSource> make_loader_source(const TrainConfig& c, std::shared_ptr<const data::Dataset> ds,
                                                       c10::Device device, bool training) {
  core::LoaderSourceOptions o;
  o.loader.batch_size = c.batch_size;
  o.loader.workers = c.workers;
  o.loader.prefetch = c.prefetch;
  o.loader.shuffle = training;
  o.loader.drop_last = training ? c.drop_last : false;
  o.loader.seed = c.seed;
  o.loader.rank = c.rank;
  o.loader.world_size = c.world_size;
  o.loader.strict = c.strict_data;
  o.loader.validate();
  o.normalize_on_device = c.normalize_on_device;
  o.channels_last = c.channels_last;
  o.roll_over_epochs = training;
  return std::make_unique<core::LoaderSource>(std::move(ds), o, device);
}

EvalRecord evaluate(core::TrainableModel& model, core::LoaderSource& val, const PrecisionPlan& plan, c10::Device device) {
  EvalRecord r;
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  val.begin_epoch(0);
  int64_t top1 = 0, top5 = 0;
  double loss_sum = 0;
  while (auto b = val.next_in_epoch()) {
    at::Tensor logits;
    {
      core::AutocastGuard ac(device.type(), plan.autocast_dtype);
      logits = model.forward(b->images).to(at::kFloat);
    }
    const int64_t k = std::min<int64_t>(5, logits.size(1));
    auto topk = std::get<1>(logits.topk(k, 1));
    auto hit = topk.eq(b->labels.unsqueeze(1));
    top1 += hit.narrow(1, 0, 1).sum().item<int64_t>();
    top5 += hit.any(1).sum().item<int64_t>();
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, b->labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    r.samples += b->labels.size(0);
  }
  if (was_training) model.train();
  if (r.samples == 0) throw std::runtime_error("the validation split is empty");
  r.top1 = static_cast<double>(top1) / static_cast<double>(r.samples);
  r.top5 = static_cast<double>(top5) / static_cast<double>(r.samples);
  r.loss = loss_sum / static_cast<double>(r.samples);
  return r;
}

}  // namespace crosstrain::train
