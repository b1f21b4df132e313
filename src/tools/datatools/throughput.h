#pragma once
// data-bench: decode + augment throughput of a dataset through the Loader, for several worker
// counts, with no training. Steady state: the clock starts when the first batch arrives, so
// thread start-up and the first file-cache misses are not counted (the torchvision reference in
// bench/ measures the same way). Wall-clock img/s and img per CPU-second are both reported.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/loader.h"

namespace crosstrain::datatools {

struct DataBenchOptions {
  std::string data = "synthetic";  // KIND:PATH
  data::DatasetOptions dataset;          // split, transform, strict, max_samples
  std::vector<int> workers = {1, 2};
  int64_t batch_size = 64;
  int64_t images = 0;              // timed images per worker count; 0 = the whole split (at most 4096)
  int prefetch = 0;                // 0 = loader default
  uint64_t seed = 0;

  void validate() const;  // std::invalid_argument
};

struct DataBenchRow {
  int workers = 0;
  int64_t images = 0;       // timed images (after the first batch)
  double seconds = 0;
  double images_per_s = 0;
  double images_per_s_per_worker = 0;  // workers 0 counts as 1 (the consumer's thread)
  // CPU time of the whole process (workers and consumer) over the timed part: on a shared
  // machine, images per CPU-second is the per-core cost that wall-clock rates blur.
  double cpu_seconds = 0;
  double images_per_cpu_s = 0;
};

struct DataBenchResult {
  std::string data;
  std::string kind;
  std::string mode;         // train | eval
  int64_t dataset_size = 0;
  int num_classes = 0;
  data::SampleLayout layout;
  int64_t batch_size = 0;
  std::vector<DataBenchRow> rows;
  int64_t bad_samples = 0;
  std::vector<data::SkippedItem> first_bad;       // from the loader and from opening the dataset
  int64_t skipped_at_open = 0;
  int64_t progressive_jpeg_reads = 0;  // samples decoded whole from progressive JPEGs (Dataset::progressive_jpeg_reads)
};

// `progress(text)` is called between measurements.
DataBenchResult run_data_bench(const DataBenchOptions& options,
                               const std::function<void(const std::string&)>& progress = {});

}  // namespace crosstrain::datatools
