#include "tools/datatools/throughput.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

namespace crosstrain::datatools {

// This tool is built from the data library's parts.
using namespace crosstrain::data;
namespace {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

void DataBenchOptions::validate() const {
  if (workers.empty()) throw std::invalid_argument("data-bench: give at least one worker count");
  for (int w : workers)
    if (w < 0 || w > 1024) throw std::invalid_argument("data-bench: worker counts must be 0..1024");
  if (batch_size <= 0) throw std::invalid_argument("data-bench: batch size must be > 0");
  if (images < 0) throw std::invalid_argument("data-bench: images must be >= 0");
  if (prefetch < 0) throw std::invalid_argument("data-bench: prefetch must be >= 0");
  dataset.transform.validate();
}

DataBenchResult run_data_bench(const DataBenchOptions& options, const std::function<void(const std::string&)>& progress) {
  options.validate();
  std::shared_ptr<const Dataset> dataset = open_dataset(options.data, options.dataset);
  DataBenchResult result;
  result.data = options.data;
  result.kind = dataset->kind();
  result.mode = options.dataset.transform.mode == TransformSpec::Mode::Train ? "train" : "eval";
  result.dataset_size = static_cast<int64_t>(dataset->size());
  result.num_classes = dataset->num_classes();
  result.layout = dataset->sample_layout();
  result.batch_size = options.batch_size;
  result.skipped_at_open = dataset->skipped_samples();
  for (const auto& s : dataset->skipped())
    if (result.first_bad.size() < 5) result.first_bad.push_back(s);

  // One warm-up batch plus the timed images, never more than the split holds.
  const int64_t want = options.images ? options.images : std::min<int64_t>(result.dataset_size, 4096);
  for (int workers : options.workers) {
    if (progress) progress("workers " + std::to_string(workers));
    LoaderOptions lo;
    lo.batch_size = options.batch_size;
    lo.workers = workers;
    lo.prefetch = options.prefetch;
    lo.shuffle = true;
    lo.drop_last = false;
    lo.seed = options.seed;
    lo.strict = options.dataset.strict;
    Loader loader(dataset, lo);
    DataBenchRow row;
    row.workers = workers;
    int epoch = 0;
    loader.begin_epoch(epoch);
    auto first = loader.next();
    if (!first) throw std::runtime_error("data-bench: the dataset gives no batch");
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_seconds();
    int64_t timed = 0;
    while (timed < want) {
      auto batch = loader.next();
      if (!batch) {
        loader.begin_epoch(++epoch);  // small datasets: keep going over further epochs
        continue;
      }
      timed += batch->size();
    }
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    row.cpu_seconds = process_cpu_seconds() - cpu0;
    row.images_per_cpu_s = row.cpu_seconds > 0 ? timed / row.cpu_seconds : 0;
    row.images = timed;
    row.images_per_s = row.seconds > 0 ? timed / row.seconds : 0;
    row.images_per_s_per_worker = row.images_per_s / std::max(workers, 1);
    const LoaderStats stats = loader.stats();
    result.bad_samples = std::max(result.bad_samples, stats.bad_samples);
    for (const auto& b : stats.first_bad)
      if (result.first_bad.size() < 5 &&
          std::none_of(result.first_bad.begin(), result.first_bad.end(), [&](const SkippedItem& s) { return s.where == b.where; }))
        result.first_bad.push_back(b);
    result.rows.push_back(row);
  }
  result.progressive_jpeg_reads = dataset->progressive_jpeg_reads();
  return result;
}

}  // namespace crosstrain::datatools
