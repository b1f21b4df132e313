// libFuzzer target: a CIFAR-10 batch file (test_batch.bin). Opening gives a dataset whose samples
// decode, or throws std::exception (no usable records).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "core/data/dataset.h"
#include "dataset_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosstrain::data;
  crosstrain::fuzz::put("test_batch.bin", data, size);
  DatasetOptions o;
  o.split = Split::Val;
  o.transform.size = 0;
  o.transform.output = SampleType::UInt8;
  try {
    auto d = open_dataset("cifar:" + crosstrain::fuzz::scratch().string(), o);
    std::vector<uint8_t> out(d->sample_layout().bytes());
    SampleRng rng(1);
    for (size_t i = 0; i < std::min<size_t>(d->size(), 4); ++i) d->decode(i, rng, out.data());
  } catch (const std::exception&) {
  }
  crosstrain::fuzz::clear();
  return 0;
}
