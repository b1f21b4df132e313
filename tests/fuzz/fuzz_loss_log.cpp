// libFuzzer target: a loss log (JSON lines or "step loss" text). Parsing never throws on content:
// bad lines become problems; two logs of the input compare without failing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/dump/loss_curve.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto log = crosstrain::dump::parse_loss_log(text, "fuzz/loss.jsonl");
  (void)crosstrain::dump::compare_losses(log, log, 1e-3);
  return 0;
}
