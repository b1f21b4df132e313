// libFuzzer target: a CIFAR-10 batch file, binary (test_batch.bin) or, when the input starts like
// a pickle (PROTO), python (test_batch, read by the restricted pickle machine). Opening gives a
// dataset whose samples decode, or throws std::exception (no usable records).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "core/data/dataset.h"
#include "dataset_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosstrain::data;
  const bool pickle = size > 0 && data[0] == 0x80;
  crosstrain::fuzz::put(pickle ? "test_batch" : "test_batch.bin", data, size);
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
