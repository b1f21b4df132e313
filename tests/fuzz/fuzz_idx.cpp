// libFuzzer target: an IDX image file and label file (raw or gzip). The first two input bytes
// (big-endian) give the image file's length; the label file is the rest. Opening either gives a dataset whose samples all decode, or
// throws std::exception; the inflated size is capped at 16 MiB here.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "core/data/dataset.h"
#include "dataset_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosstrain::data;
  if (size < 2) return 0;
  const size_t split = std::min<size_t>(size - 2, (static_cast<size_t>(data[0]) << 8) | data[1]);
  crosstrain::fuzz::put("train-images-idx3-ubyte", data + 2, split);
  crosstrain::fuzz::put("train-labels-idx1-ubyte", data + 2 + split, size - 2 - split);
  DatasetOptions o;
  o.transform.size = 0;
  o.transform.output = SampleType::UInt8;
  o.max_file_bytes = 16u << 20;
  try {
    auto d = open_dataset("idx:" + crosstrain::fuzz::scratch().string(), o);
    std::vector<uint8_t> out(d->sample_layout().bytes());
    SampleRng rng(1);
    for (size_t i = 0; i < std::min<size_t>(d->size(), 4); ++i) d->decode(i, rng, out.data());
  } catch (const std::exception&) {
  }
  crosstrain::fuzz::clear();
  return 0;
}
