// libFuzzer target: a torch.save() file (zip: data.pkl and storage records; or the legacy stream of
// pickles and raw storages) as --weights and
// --resume read it, with CRC checks off so that mutations reach the pickle machine. Reading gives
// a checked graph or throws FormatError; in the graph every tensor's storage bytes cover
// everything its size, stride and offset reach (checked here, and their first and last bytes
// read, so the address sanitizer sees any overreach).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/torchsave/torch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosstrain::torchsave;
  try {
    ReadOptions options;
    options.check_crc = false;
    options.opaque_objects = true;
    const TorchFile f = read_torch_file(std::string_view(reinterpret_cast<const char*>(data), size), options);
    volatile unsigned char sink = 0;
    for (uint32_t i = 0; i < f.pickle.nodes.size(); ++i) {
      if (f.pickle.node(i).kind != NodeKind::Tensor) continue;
      const TensorLayout& t = f.pickle.tensor(i);
      const StorageRecord& r = f.records.at(f.record_of(t.storage));
      const std::string bytes = f.read_storage(f.record_of(t.storage));
      const uint64_t item = dtype_size(r.dtype);
      if (bytes.size() != static_cast<uint64_t>(r.numel) * item) std::abort();
      bool empty = false;
      uint64_t last = static_cast<uint64_t>(t.offset);
      for (size_t d = 0; d < t.sizes.size(); ++d) {
        empty = empty || t.sizes[d] == 0;
        if (t.sizes[d] > 0) last += static_cast<uint64_t>(t.sizes[d] - 1) * static_cast<uint64_t>(t.strides[d]);
      }
      if (empty) continue;
      if ((last + 1) * item > bytes.size()) std::abort();
      sink = sink + static_cast<unsigned char>(bytes[static_cast<size_t>(t.offset * item)]) +
             static_cast<unsigned char>(bytes[static_cast<size_t>((last + 1) * item - 1)]);
    }
  } catch (const FormatError&) {
  }
  return 0;
}
