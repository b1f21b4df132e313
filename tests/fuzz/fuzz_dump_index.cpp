// libFuzzer target: a dump index (index.jsonl) as untrusted text. Any input either parses or
// throws std::runtime_error; record problems are collected, never fatal.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tools/dump/dump_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto idx = crosstrain::dump::parse_dump_index(text, "fuzz/index.jsonl");
    for (const auto& r : idx.records) (void)crosstrain::dump::shape_numel(r.shape);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
