#include "core/state_file.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "report/output.h"

namespace crosstrain::core {

void save_state_file(const c10::IValue& state, const std::string& path) {
  // torch.save's layout: a zip with data.pkl (protocol 2, no TorchScript type tags, which
  // torch.load(weights_only=True) rejects) and one record per storage under data/.
  std::vector<char> pkl;
  torch::jit::Pickler pickler([&](const char* b, size_t n) { pkl.insert(pkl.end(), b, b + n); }, nullptr, nullptr,
                              nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(state);
  pickler.stop();
  // The archive is built in memory, then written by the one crash-safe writer reports use too
  // (report/output.h): temporary file, fsync, rename, directory fsync; special files in place.
  std::string archive;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
      archive.append(static_cast<const char*>(data), n);
      return n;
    });
    writer.writeRecord("data.pkl", pkl.data(), pkl.size());
    writer.writeRecord("byteorder", "little", 6);
    const auto& tensors = pickler.tensorData();
    for (size_t i = 0; i < tensors.size(); ++i) {
      auto data = torch::jit::getWriteableTensorData(tensors[i]);
      writer.writeRecord("data/" + std::to_string(i), data.data(), data.sizeInBytes());
    }
    writer.writeEndOfFile();
  }
  report::write_file_atomic(path, archive);
}

c10::IValue load_state_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw std::runtime_error(path + " is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    throw std::runtime_error(path + " is not a complete torch.save() archive (truncated or corrupt): " +
                             msg.substr(0, msg.find('\n')));
  }
}

}  // namespace crosstrain::core
