// torch.save() files read without libtorch: files written by Python's torch.save, zip and legacy
// (tests/python/state_file_cases.py, checkpoint_layout_cases.py), every truncation of one, and
// hand-written hostile pickles.
#include "core/torchsave/torch_file.h"
#include "core/torchsave/legacy_format.h"

#include <fstream>
#include <regex>
#include <map>
#include <set>
#include <iterator>

#include "test_support.h"

namespace ct = crosstrain::testing;
using namespace crosstrain::torchsave;

namespace {

class TorchFileCases : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ct::scratch_dir("torchsave_cases").string();
    auto r = ct::run_python_script("state_file_cases.py", dir_);
    ok_ = r.exit_code == 0;
    python_says_ = r.output;
    if (!ok_) std::cerr << r.output;
  }
  static std::string bytes(const std::string& name) { return ct::read_bytes(dir_ + "/" + name); }
  static std::string error_of(std::string_view file) {
    try {
      read_torch_file(file);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "";
  }
  static std::string dir_, python_says_;
  static bool ok_;
};
std::string TorchFileCases::dir_, TorchFileCases::python_says_;
bool TorchFileCases::ok_ = false;

// The keys of the root dict, in order.
std::vector<std::string> root_keys(const TorchFile& f) {
  std::vector<std::string> keys;
  const auto& items = f.pickle.items(f.pickle.root);
  for (size_t i = 0; i < items.size(); i += 2) keys.emplace_back(f.pickle.text(items[i]));
  return keys;
}

// A minimal torch.save-layout zip around `pkl` (stored records, no storages), written here so
// the pickle can be anything.
std::string zip_with_pickle(const std::string& pkl) {
  std::string out, central;
  auto u16 = [](std::string& s, uint32_t v) { s += char(v & 255), s += char(v >> 8 & 255); };
  auto u32 = [&](std::string& s, uint32_t v) { u16(s, v & 0xFFFF), u16(s, v >> 16); };
  const std::string name = "a/data.pkl";
  // The CRC of the stored bytes, bit by bit (zlib's polynomial).
  uint32_t crc = 0xFFFFFFFF;
  for (unsigned char c : pkl) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  crc ^= 0xFFFFFFFF;
  u32(out, 0x04034b50), u16(out, 20), u16(out, 0), u16(out, 0), u32(out, 0), u32(out, crc);
  u32(out, pkl.size()), u32(out, pkl.size()), u16(out, name.size()), u16(out, 0);
  out += name + pkl;
  u32(central, 0x02014b50), u16(central, 20), u16(central, 20), u16(central, 0), u16(central, 0), u32(central, 0);
  u32(central, crc), u32(central, pkl.size()), u32(central, pkl.size()), u16(central, name.size());
  for (int i = 0; i < 4; ++i) u16(central, 0);
  u32(central, 0), u32(central, 0);
  central += name;
  const uint32_t cd_at = out.size();
  out += central;
  u32(out, 0x06054b50), u16(out, 0), u16(out, 0), u16(out, 1), u16(out, 1), u32(out, central.size());
  u32(out, cd_at), u16(out, 0);
  return out;
}

}  // namespace

TEST_F(TorchFileCases, ReadsModelStateDictAsTorchSaveWritesIt) {
  ASSERT_TRUE(ok_);
  // tv.pt is torch.save(model.state_dict()): an OrderedDict built by REDUCE, its _metadata by BUILD.
  const std::string file = bytes("tv.pt");
  const TorchFile f = read_torch_file(file);
  const auto keys = root_keys(f);
  ASSERT_EQ(keys.size(), 122u);  // torchvision resnet18: 62 parameters, 60 buffers
  EXPECT_EQ(keys.front(), "conv1.weight");
  EXPECT_EQ(keys.back(), "fc.bias");
  EXPECT_EQ(f.tensors.size(), 122u);
  EXPECT_EQ(f.records.size(), 122u);
  for (uint32_t i : f.tensors) {
    const std::string name = f.name_of(i);
    const uint32_t storage = f.pickle.tensor(i).storage;
    const Node& s = f.pickle.node(storage);
    const bool counter = name.find("num_batches_tracked") != std::string::npos;
    EXPECT_EQ(s.dtype, counter ? DType::Int64 : DType::Float32) << name;
    EXPECT_EQ(f.read_storage(f.record_of(storage)).size(),
              static_cast<size_t>(f.pickle.storage(storage).numel) * dtype_size(s.dtype))
        << name;
  }
}

TEST_F(TorchFileCases, NestedOrderedDictTensorsAreNamedByTheirKeys) {
  ASSERT_TRUE(ok_);
  const std::string file = bytes("nested.pt");
  const TorchFile f = read_torch_file(file);
  std::set<std::string> names;
  for (uint32_t i : f.tensors) names.insert(f.name_of(i));
  EXPECT_TRUE(names.count("['model']['fc.weight']"));
  EXPECT_TRUE(names.count("['model']['bn1.num_batches_tracked']"));
  EXPECT_EQ(root_keys(f), (std::vector<std::string>{"model", "epoch", "optimizer"}));
}

TEST_F(TorchFileCases, StorageRecordsShorterThanTheirTensorsAreRefusedAsPythonDoes) {
  ASSERT_TRUE(ok_);
  EXPECT_NE(python_says_.find("short refused"), std::string::npos) << python_says_;
  EXPECT_NE(python_says_.find("reach refused"), std::string::npos) << python_says_;
  EXPECT_EQ(error_of(bytes("short.pt")),
            "tensor ['fc.weight']: storage record data/120 holds 10240 bytes, fewer than its 5120 float32 elements "
            "need (truncated or corrupt)");
  EXPECT_EQ(error_of(bytes("reach.pt")),
            "tensor ['conv1.weight'] of size [8], stride [1] and offset 2 reaches past its storage (data/0: 4 "
            "float32 elements)");
}

// Files that are not torch.save's, named for what they are rather than "neither a zip ... nor ...".
TEST_F(TorchFileCases, SafetensorsAndEmptyFilesAreNamedForWhatTheyAre) {
  ASSERT_TRUE(ok_);
  const std::string st = bytes("tv.safetensors");  // written by the safetensors package
  ASSERT_GT(st.size(), 9u);
  EXPECT_EQ(torch_file_layout(st), "safetensors");
  EXPECT_EQ(error_of(st).rfind("a safetensors file, which crosstrain does not read", 0), 0u) << error_of(st);
  EXPECT_NE(error_of(st).find("torch.save(safetensors.torch.load_file(PATH)"), std::string::npos) << error_of(st);
  EXPECT_EQ(bytes("empty.pt"), "");
  EXPECT_EQ(torch_file_layout(""), "empty");
  EXPECT_EQ(error_of(""), "an empty file (0 bytes), not a torch.save() file");
  // A length followed by something other than a JSON object is not taken for one.
  EXPECT_EQ(torch_file_layout(std::string("\x02\0\0\0\0\0\0\0[]", 10)), "");
}

TEST_F(TorchFileCases, EveryTruncationAndEveryPickleByteFlipIsAnErrorOrAFile) {
  ASSERT_TRUE(ok_);
  const std::string file = bytes("small.pt");
  ASSERT_NO_THROW(read_torch_file(file));
  for (size_t n = 0; n < file.size(); ++n) EXPECT_NE(error_of(std::string_view(file).substr(0, n)), "") << n;
  // Byte flips anywhere: refused (CRC, structure) or read; never a crash (tests/fuzz goes further).
  for (size_t at = 0; at < file.size(); ++at) {
    std::string bad = file;
    bad[at] = static_cast<char>(bad[at] ^ 0x5A);
    error_of(bad);
  }
}

TEST(TorchFile, HostilePicklesAreRefusedWithTheirReason) {
  using namespace std::string_literals;  // "..."s keeps embedded NUL bytes
  auto error_of = [](const std::string& pkl) {
    try {
      const std::string zip = zip_with_pickle(pkl);
      read_torch_file(zip);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto has = [](const std::string& what, const std::string& part) {
    const bool found = what.find(part) != std::string::npos;
    if (!found) std::cerr << "error was: " << what << "\n";
    return found;
  };
  EXPECT_TRUE(has(error_of("\x80\x02" "cos\nsystem\n."s),
                  "unsupported global 'os.system' (only tensors, numbers, strings and containers are read) at byte 2"));
  EXPECT_TRUE(has(error_of("\x80\x02h\x07."s), "memo entry 7 was never stored"));
  EXPECT_TRUE(has(error_of("\x80\x02X\xff\xff\xff\x7f" "abc."s), "runs past the end"));
  EXPECT_TRUE(has(error_of("\x80\x02]"s), "ends without STOP"));
  EXPECT_TRUE(has(error_of("\x80\x02."s), "STOP with an empty stack"));
  EXPECT_TRUE(has(error_of("\x80\x02(a."s), "pop from an empty stack"));
  EXPECT_TRUE(has(error_of("\x80\x02}K\x01K\x02" "a."s), "expected a list before APPEND"));
  EXPECT_TRUE(has(error_of("\x80\x02" "ccollections\nOrderedDict\nK\x01\x85R."s), "OrderedDict with arguments"));
  EXPECT_TRUE(has(error_of("\x80\x02\x8a\x09" "123456789."s), "integer wider than 64 bits"));
  EXPECT_TRUE(has(error_of("\x80\x02" "ctorch\nFloatStorage\n)R."s), "cannot be called"));
  EXPECT_TRUE(has(error_of("\x80\x02K\x01Q."s), "expected a tuple as persistent id"));
  EXPECT_TRUE(has(error_of(std::string("\x80\x02\xff.", 4)), "unsupported pickle opcode 0xff"));
  // A list holding itself and deep nesting parse (conversion to values refuses them later).
  EXPECT_EQ(error_of("\x80\x02]2a."s), "");
  EXPECT_EQ(error_of("\x80\x02" + std::string(100000, ']') + "."), "");
  // An OrderedDict with attributes: the attributes are dropped, the items kept.
  const std::string ordered = zip_with_pickle(
      "\x80\x02" "ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00" "aK\x05u}X\x09\x00\x00\x00_metadataK\x01sb."s);
  const auto f = read_torch_file(ordered);
  ASSERT_EQ(f.pickle.node(f.pickle.root).kind, NodeKind::Dict);
  const auto& items = f.pickle.items(f.pickle.root);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(f.pickle.text(items[0]), "a");
  EXPECT_EQ(f.pickle.node(items[1]).integer, 5);
}

namespace {

// The legacy format (torch.save(..., _use_new_zipfile_serialization=False)) and what is around it,
// written by tests/python/checkpoint_layout_cases.py (its small files only).
class LegacyTorchFile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ct::scratch_dir("torchsave_legacy").string();
    auto r = ct::run_python_script("checkpoint_layout_cases.py", dir_ + " small");
    ok_ = r.exit_code == 0;
    python_says_ = r.output;
    if (!ok_) std::cerr << r.output;
  }
  static std::string bytes(const std::string& name) { return ct::read_bytes(dir_ + "/" + name); }
  static std::string error_of(std::string_view file, const ReadOptions& o = {}) {
    try {
      read_torch_file(file, o);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "";
  }
  // Every tensor's name -> the bytes it covers (contiguous tensors: offset to offset + numel).
  static std::map<std::string, std::string> tensor_bytes(const TorchFile& f) {
    std::map<std::string, std::string> out;
    for (uint32_t i : f.tensors) {
      const TensorLayout& t = f.pickle.tensor(i);
      int64_t n = 1;
      for (int64_t d : t.sizes) n *= d;
      const size_t item = dtype_size(f.pickle.node(t.storage).dtype);
      out[f.name_of(i)] = f.read_storage(f.record_of(t.storage)).substr(static_cast<size_t>(t.offset) * item,
                                                                         static_cast<size_t>(n) * item);
    }
    return out;
  }
  static std::string dir_, python_says_;
  static bool ok_;
};
std::string LegacyTorchFile::dir_, LegacyTorchFile::python_says_;
bool LegacyTorchFile::ok_ = false;

}  // namespace

TEST_F(LegacyTorchFile, ReadsTheSameTensorsAsTheZipOfTheSameStateDict) {
  ASSERT_TRUE(ok_);
  // Both hold one Sequential(Conv2d(1, 2, 1), BatchNorm2d(2)).state_dict(); the zip's storages are
  // tagged 'cuda:0', which changes nothing here: storages become CPU memory.
  const std::string legacy = bytes("legacy_small.pt"), zip = bytes("zip_cuda.pt");
  ASSERT_EQ(torch_file_layout(legacy), "legacy");
  ASSERT_EQ(torch_file_layout(zip), "zip");
  const auto a = tensor_bytes(read_torch_file(legacy)), b = tensor_bytes(read_torch_file(zip));
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.at("['0.weight']").size(), 2 * 4u);
  EXPECT_EQ(a.at("['1.num_batches_tracked']").size(), 8u);
}

// torch.save(..., _use_new_zipfile_serialization=False, pickle_protocol=3) writes every pickle at
// protocol 3 (PROTO 3 before the magic number); torch.load(weights_only=True) reads it, as protocol 2.
TEST_F(LegacyTorchFile, Protocol3ReadsAsProtocol2AndOtherProtocolsAreNamed) {
  ASSERT_TRUE(ok_);
  EXPECT_NE(python_says_.find("legacy_small_p3.pt accepted"), std::string::npos) << python_says_;
  const std::string p2 = bytes("legacy_small.pt"), p3 = bytes("legacy_small_p3.pt");
  ASSERT_EQ(p3.substr(0, 2), std::string("\x80\x03", 2));
  ASSERT_EQ(torch_file_layout(p3), "legacy");
  EXPECT_EQ(tensor_bytes(read_torch_file(p3)), tensor_bytes(read_torch_file(p2)));
  // The argparse.Namespace of a script's checkpoint at protocol 3: listed as unread, as at 2.
  ReadOptions opaque;
  opaque.opaque_objects = true;
  const std::string tvref_bytes = bytes("legacy_small_tvref_p3.pt");
  const TorchFile tvref = read_torch_file(tvref_bytes, opaque);
  ASSERT_EQ(tvref.unread.size(), 1u);
  EXPECT_EQ(tvref.unread[0].class_name, "argparse.Namespace");
  EXPECT_EQ(tensor_bytes(tvref).size(), 7u);
  // Protocols 0 (and 1, written alike), 4 and 5: Python's weights_only refuses them at the magic
  // number's first opcode; crosstrain names the protocol instead of calling the file unknown.
  for (const char* p : {"0", "4", "5"}) {
    const std::string name = std::string("legacy_small_p") + p + ".pt";
    EXPECT_NE(python_says_.find(name + " refused: Unsupported operand"), std::string::npos) << python_says_;
    const std::string e = error_of(bytes(name));
    EXPECT_EQ(e.rfind(std::string("a legacy torch.save file pickled at protocol ") + p, 0), 0u) << e;
    EXPECT_NE(e.find("weights_only=True"), std::string::npos) << e;
  }
  EXPECT_EQ(legacy_pickle_protocol(bytes("legacy_small_p0.pt")), 0);
  EXPECT_EQ(legacy_pickle_protocol(bytes("legacy_small_p4.pt")), 4);
  EXPECT_EQ(legacy_pickle_protocol(p3), 3);
  EXPECT_EQ(legacy_pickle_protocol(bytes("zip_cuda.pt")), -1);
}

TEST_F(LegacyTorchFile, CorruptTruncatedAndBigEndianFilesAreRefusedWithTheirReason) {
  ASSERT_TRUE(ok_);
  EXPECT_NE(python_says_.find("legacy_count.pt refused"), std::string::npos) << python_says_;
  const std::string count = error_of(bytes("legacy_count.pt"));
  // The first storage in the file's key order (ids, so any of them) got one element more.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(count, m, std::regex(" holds (\\d+) elements, its tensors' storage (\\d+) \\(corrupt\\)")))
      << count;
  EXPECT_EQ(std::stoll(m[1].str()), std::stoll(m[2].str()) + 1) << count;
  EXPECT_EQ(count.rfind("legacy torch.save file: storage ", 0), 0u) << count;
  EXPECT_NE(error_of(bytes("legacy_short.pt")).find("(truncated)"), std::string::npos);
  // Python ignores sys_info; the raw storages would be read in the wrong byte order.
  EXPECT_EQ(error_of(bytes("legacy_big.pt")), "a big-endian legacy file is not supported");
  EXPECT_EQ(error_of(bytes("legacy_tar.pt")).rfind("a tar archive, torch.save's format before PyTorch 0.4", 0), 0u);
  EXPECT_EQ(error_of("not a checkpoint"),
            "neither a zip archive (torch.save's format since PyTorch 1.6) nor the legacy torch.save format");
}

TEST_F(LegacyTorchFile, EveryTruncationAndEveryByteFlipIsAnErrorOrAFile) {
  ASSERT_TRUE(ok_);
  const std::string file = bytes("legacy_small.pt");
  ASSERT_EQ(error_of(file), "");
  for (size_t n = 0; n < file.size(); ++n) EXPECT_NE(error_of(std::string_view(file).substr(0, n)), "") << n;
  ReadOptions opaque;
  opaque.opaque_objects = true;
  for (size_t at = 0; at < file.size(); ++at) {
    std::string bad = file;
    bad[at] = static_cast<char>(bad[at] ^ 0x5A);
    error_of(bad);
    error_of(bad, opaque);
  }
}

TEST_F(LegacyTorchFile, AnArgparseNamespaceIsRefusedOrListedAsUnread) {
  ASSERT_TRUE(ok_);
  // {"model": ..., "epoch": 1, "args": argparse.Namespace(...)}: Python's weights_only refuses it.
  EXPECT_NE(python_says_.find("legacy_small_tvref.pt refused: Unsupported global: GLOBAL argparse.Namespace"),
            std::string::npos)
      << python_says_;
  const std::string file = bytes("legacy_small_tvref.pt");
  EXPECT_NE(error_of(file).find("unsupported global 'argparse.Namespace'"), std::string::npos) << error_of(file);
  ReadOptions opaque;
  opaque.opaque_objects = true;
  const TorchFile f = read_torch_file(file, opaque);
  ASSERT_EQ(f.unread.size(), 1u);
  EXPECT_EQ(f.unread[0].name, "['args']");
  EXPECT_EQ(f.unread[0].class_name, "argparse.Namespace");
  EXPECT_EQ(f.pickle.node(f.unread[0].node).kind, NodeKind::Object);
  EXPECT_EQ(tensor_bytes(f).size(), 7u);
  EXPECT_EQ(tensor_bytes(f).count("['model']['module.0.weight']"), 1u);
}

TEST(TorchFile, OpaqueObjectsAreNeverCalledOrUsedAsTensors) {
  using namespace std::string_literals;
  ReadOptions opaque;
  opaque.opaque_objects = true;
  auto error_of = [&](const std::string& pkl) {
    try {
      const std::string zip = zip_with_pickle(pkl);
      read_torch_file(zip, opaque);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // os.system('x') is an Object named after it: nothing runs, the value is listed as unread.
  const std::string system_call = zip_with_pickle("\x80\x02}X\x01\x00\x00\x00" "acos\nsystem\nX\x01\x00\x00\x00x\x85Rs."s);
  const auto f = read_torch_file(system_call, opaque);
  ASSERT_EQ(f.unread.size(), 1u);
  EXPECT_EQ(f.unread[0].name, "['a']");
  EXPECT_EQ(f.unread[0].class_name, "os.system");
  // An object where a storage or a tensor must be is still refused.
  EXPECT_NE(error_of("\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n(cfoo\nBar\n)RK\x00))\x89tR."s)
                .find("expected a storage as a tensor's first argument"),
            std::string::npos);
  // NEWOBJ of an allowed callable is not an object either.
  EXPECT_NE(error_of("\x80\x02" "ccollections\nOrderedDict\n)\x81."s).find("objects are not rebuilt"), std::string::npos);
}
