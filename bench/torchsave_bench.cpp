// One read of a torch.save() file or a CIFAR python batch by crosstrain, through the calls the
// commands make, for bench/torchsave_memory.py: it measures this process's peak memory from outside
// and runs Python's torch.load on the same file in turn.
// usage: torchsave_bench state FILE            core::load_state_file, as --weights and --resume read
//        torchsave_bench weights MODEL FILE    core::load_weights into MODEL (10 classes): --weights
//        torchsave_bench cifar DIR             the cifar dataset's train split: --data cifar:DIR
//        torchsave_bench none                  nothing: what the process itself takes
// Prints one JSON line: {"seconds": the read, "ok": ..., "what": a summary or the error's first
// 160 bytes, "error_bytes": the error's length, "rss_before_mib" and "rss_after_mib": the resident
// size before and after the read (the loaded value still held)}.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

#include "core/data/dataset.h"
#include "core/models.h"
#include "core/state_file.h"

using namespace crosstrain;

namespace {

std::string json_text(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 160)) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out;
}

// The process's resident size now, from /proc/self/status.
double rss_mib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  return 0;
}

// Tensors and distinct storages in a loaded tree.
void count(const c10::IValue& v, int64_t& tensors, std::set<const void*>& storages, int depth = 0) {
  if (depth > 300) return;
  if (v.isTensor()) {
    ++tensors;
    storages.insert(v.toTensor().storage().data());
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) count(e.value(), tensors, storages, depth + 1);
  } else if (v.isList()) {
    for (const auto& e : v.toList()) count(e, tensors, storages, depth + 1);
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) count(e, tensors, storages, depth + 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  std::function<std::string()> read;
  core::ResNet model{nullptr};
  c10::IValue value;  // what was read, held until the resident size after the read is taken
  std::unique_ptr<data::Dataset> dataset;
  if (kind == "state" && argc == 3) {
    read = [&] {
      std::vector<core::UnreadValue> unread;
      value = core::load_state_file(argv[2], &unread);
      int64_t tensors = 0;
      std::set<const void*> storages;
      count(value, tensors, storages);
      return std::to_string(tensors) + " tensors in " + std::to_string(storages.size()) + " storages";
    };
  } else if (kind == "weights" && argc == 4) {
    core::ModelOptions o;
    o.num_classes = 10;
    model = core::create_model(argv[2], o);
    read = [&] {
      core::load_weights(*model, argv[3]);
      return std::string("loaded");
    };
  } else if (kind == "cifar" && argc == 3) {
    read = [&] {
      dataset = data::open_dataset(std::string("cifar:") + argv[2], {});
      return std::to_string(dataset->size()) + " samples";
    };
  } else if (kind == "none") {
    read = [] { return std::string("nothing"); };
  } else {
    std::fprintf(stderr, "usage: torchsave_bench state FILE | weights MODEL FILE | cifar DIR | none\n");
    return 2;
  }
  const double rss_before = rss_mib();
  const auto t0 = std::chrono::steady_clock::now();
  std::string what, error;
  try {
    what = read();
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"seconds\": %.4f, \"ok\": %s, \"what\": \"%s\", \"error_bytes\": %zu, \"rss_before_mib\": %.1f, "
      "\"rss_after_mib\": %.1f}\n",
      s, error.empty() ? "true" : "false", json_text(error.empty() ? what : error).c_str(), error.size(), rss_before,
      rss_mib());
  return 0;
}
