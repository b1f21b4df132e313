// `crosstrain data-bench`: decode + augment throughput of the input pipeline, no training.
#include <iostream>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "cli/output_inputs.h"
#include "core/data/jpeg_cache.h"
#include "tools/datatools/throughput.h"
#include "report/envelope.h"
#include "report/output.h"
#include "report/table.h"
#include "report/terminal.h"
#include "report/units.h"

namespace crosstrain::cli {
namespace {

struct DataBenchFlags {
  datatools::DataBenchOptions bench;
  std::string split = "train";
  std::string mode;  // default: train for the train split, eval for val
  std::vector<float> mean, std;
  bool uint8 = false;
  bool no_dct_scaling = false;
  std::string json_path;
};

nlohmann::json to_json(const datatools::DataBenchResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"workers", row.workers},
                    {"images", row.images},
                    {"seconds", row.seconds},
                    {"images_per_s", row.images_per_s},
                    {"images_per_s_per_worker", row.images_per_s_per_worker},
                    {"cpu_seconds", row.cpu_seconds},
                    {"images_per_cpu_s", row.images_per_cpu_s}});
  nlohmann::json bad = nlohmann::json::array();
  for (const auto& b : r.first_bad) bad.push_back({{"where", b.where}, {"reason", b.reason}});
  return {{"data", r.data},
          {"data_kind", r.kind},
          {"mode", r.mode},
          {"dataset_size", r.dataset_size},
          {"num_classes", r.num_classes},
          {"sample", {{"channels", r.layout.channels},
                      {"height", r.layout.height},
                      {"width", r.layout.width},
                      {"dtype", r.layout.type == data::SampleType::Float32 ? "float32" : "uint8"}}},
          {"batch_size", r.batch_size},
          {"rows", rows},
          {"bad_samples", r.bad_samples},
          {"skipped_at_open", r.skipped_at_open},
          {"first_bad", bad},
          {"progressive_jpeg_reads", r.progressive_jpeg_reads}};
}

std::string render_console(const datatools::DataBenchResult& r) {
  std::string out = "data-bench: " + r.data + " (" + r.kind + ", " + report::format_count(r.dataset_size) +
                    " samples, " + std::to_string(r.num_classes) + " classes), " + r.mode + " transform -> " +
                    std::to_string(r.layout.channels) + "x" + std::to_string(r.layout.height) + "x" +
                    std::to_string(r.layout.width) + (r.layout.type == data::SampleType::Float32 ? " float32" : " uint8") +
                    ", batch " + std::to_string(r.batch_size) + "\n";
  report::Table t({"workers", "images", "time", "img/s", "img/s per worker", "CPU time", "img per CPU-s"});
  for (const auto& row : r.rows)
    t.add_row({std::to_string(row.workers), report::format_count(row.images), report::format_ms(row.seconds * 1e3),
               report::format_fixed(row.images_per_s, 1), report::format_fixed(row.images_per_s_per_worker, 1),
               report::format_ms(row.cpu_seconds * 1e3), report::format_fixed(row.images_per_cpu_s, 1)});
  out += t.render();
  const int64_t bad = r.bad_samples + r.skipped_at_open;
  if (bad > 0) {
    out += "skipped " + std::to_string(bad) + " bad item(s); first:\n";
    for (const auto& b : r.first_bad) out += "  " + b.where + ": " + b.reason + "\n";
  }
  const std::string progressive = data::progressive_jpeg_note(r.progressive_jpeg_reads);
  if (!progressive.empty()) out += "note: " + progressive + "\n";
  return out;
}

void run(DataBenchFlags& f) {
  datatools::DataBenchOptions& o = f.bench;
  if (f.split != "train" && f.split != "val") throw std::invalid_argument("--split must be train or val");
  o.dataset.split = f.split == "train" ? data::Split::Train : data::Split::Val;
  const std::string mode = f.mode.empty() ? f.split : f.mode;
  if (mode != "train" && mode != "eval" && mode != "val") throw std::invalid_argument("--mode must be train or eval");
  o.dataset.transform.mode = mode == "train" ? data::TransformSpec::Mode::Train : data::TransformSpec::Mode::Eval;
  if (!f.mean.empty()) o.dataset.transform.mean = f.mean;
  if (!f.std.empty()) o.dataset.transform.std = f.std;
  if (f.uint8) o.dataset.transform.output = data::SampleType::UInt8;
  if (f.no_dct_scaling) o.dataset.transform.dct_scaling = false;
  o.validate();
  if (!o.dataset.jpeg_cache.empty()) {
    CommandPaths paths;
    paths.inputs = {data_input_path(o.data), o.dataset.val_root};
    paths.caches = {{"--jpeg-cache", o.dataset.jpeg_cache}};
    refuse_outputs_over_inputs(paths);
    data::check_jpeg_cache_use(o.data, o.dataset.jpeg_cache);
  }
  if (!f.json_path.empty()) report::check_writable(f.json_path);  // before the work, not after it

  report::ProgressLine progress(report::stderr_is_terminal());
  auto result = datatools::run_data_bench(o, [&](const std::string& text) { progress.update("data-bench: " + text, true); });
  progress.clear();
  if (!f.json_path.empty()) report::write_json(report::with_envelope("data-bench", to_json(result)), f.json_path);
  if (!report::json_to_stdout(f.json_path)) std::cout << render_console(result);
}

}  // namespace

void add_data_bench_command(CLI::App& app) {
  auto flags = std::make_shared<DataBenchFlags>();
  datatools::DataBenchOptions& o = flags->bench;
  auto* cmd = app.add_subcommand("data-bench", "Decode + augment throughput (img/s) of a dataset for several worker counts");
  cmd->add_option("--data", o.data, "Dataset KIND:PATH (synthetic[:N], idx:DIR, cifar:DIR, imagefolder:ROOT)")
      ->capture_default_str();
  cmd->add_option("--split", flags->split, "train or val")->capture_default_str();
  cmd->add_option("--val-root", o.dataset.val_root, "imagefolder: validation root when ROOT has no train/ and val/");
  cmd->add_option("--jpeg-cache", o.dataset.jpeg_cache, "imagefolder: keep a lossless baseline rewrite of each progressive JPEG in DIR and decode that from the next epoch on (same pixels; a progressive file is otherwise entropy-decoded whole for every crop)");
  cmd->add_option("--mode", flags->mode, "Transform: train (RandomResizedCrop + flip) or eval (resize + center crop); default follows --split");
  cmd->add_option("--size", o.dataset.transform.size, "Output side in pixels (0 = the source size for idx/cifar/synthetic)")
      ->capture_default_str()->check(int_range(0, 4096));
  cmd->add_option("--resize", o.dataset.transform.resize, "Eval: shorter side before the center crop (0 = size*256/224)")
      ->check(int_range(0, 8192));
  cmd->add_option("--channels", o.dataset.transform.channels, "Output channels: 0 = as stored, 3 = gray to RGB, 1 = RGB to gray")
      ->check(int_range(0, 3));
  cmd->add_option("--mean", flags->mean, "Normalization mean, 1 or 3 values (default ImageNet)")->delimiter(',')
      ->check(real_range(-1e6, 1e6));
  cmd->add_option("--std", flags->std, "Normalization std, 1 or 3 values (default ImageNet)")->delimiter(',')
      ->check(real_range(1e-6, 1e6));
  cmd->add_flag("--uint8", flags->uint8, "Emit uint8 samples (normalized later on the device)");
  cmd->add_flag("--no-dct-scaling", flags->no_dct_scaling,
                "JPEG: always decode at full resolution (closest to PIL; slower on large images)");
  cmd->add_option("--workers", o.workers, "Worker counts to measure, comma-separated")->delimiter(',')->capture_default_str()
      ->check(int_range(0, 1024));
  cmd->add_option("--batch-size", o.batch_size, "Samples per batch")->capture_default_str()->check(int_range(1, 65536));
  cmd->add_option("--images", o.images, "Images timed per worker count (0 = the split, at most 4096)")
      ->check(int_range(0, 1e9));
  cmd->add_option("--prefetch", o.prefetch, "Batches in flight (0 = 2 x workers)")->check(int_range(0, 1024));
  cmd->add_option("--max-samples", o.dataset.max_samples, "Use only N samples of the split (0 = all)")
      ->check(int_range(0, 1099511627776.0));
  cmd->add_option("--seed", o.seed, "Shuffle and augmentation seed")->capture_default_str()->check(uint_range(0, UINT64_MAX));
  cmd->add_flag("--strict", o.dataset.strict, "Stop at the first bad sample instead of skipping it");
  cmd->add_option("--max-image-pixels", o.dataset.max_image_pixels, "Refuse images with more pixels (PIL's bomb limit)")
      ->check(int_range(1, 1073741824.0))->capture_default_str();
  cmd->add_option("--max-image-bytes", o.dataset.max_image_bytes, "Refuse image files larger than this")
      ->check(int_range(1, 1099511627776.0))->capture_default_str();
  cmd->add_option("--max-file-bytes", o.dataset.max_file_bytes, "Refuse IDX (inflated) and CIFAR files larger than this")
      ->check(int_range(1, 1099511627776.0))->capture_default_str();
  add_json_option(cmd, flags->json_path);
  cmd->callback([flags] { run(*flags); });
}

}  // namespace crosstrain::cli
