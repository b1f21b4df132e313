// How the reader scales on what torch.save writes (tests/python/torchsave_scale_cases.py): the
// views of one storage are one record; the pickle machine holds less per value than Python does;
// a 1 MiB key over 50000 values, a tuple nested 10^6 deep and a 4.2 MB key read in linear time;
// and whatever a file holds, an error is one line of at most a few hundred characters.
#include <malloc.h>

#include <cstring>

#include "core/torchsave/torch_file.h"
#include "test_support.h"

namespace ct = crosstrain::testing;
using namespace crosstrain::torchsave;

namespace {

// Bytes the heap holds now (glibc: small blocks and mmap()ed ones).
size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

class TorchFileScale : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ct::scratch_dir("torchsave_scale").string();
    auto r = ct::run_python_script("torchsave_scale_cases.py", dir_);
    ok_ = r.exit_code == 0;
    if (!ok_) std::cerr << r.output;
  }
  static std::string bytes(const std::string& name) { return ct::read_bytes(dir_ + "/" + name); }
  // The value of the root dict's `key`.
  static uint32_t entry(const TorchFile& f, const std::string& key) {
    const auto& items = f.pickle.items(f.pickle.root);
    for (size_t i = 0; i + 1 < items.size(); i += 2)
      if (f.pickle.text(items[i]) == key) return items[i + 1];
    ADD_FAILURE() << "no key " << key;
    return 0;
  }
  static std::string dir_;
  static bool ok_;
};
std::string TorchFileScale::dir_;
bool TorchFileScale::ok_ = false;

std::string error_of(std::string_view file) {
  try {
    read_torch_file(file);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_F(TorchFileScale, TwoThousandViewsOfOneStorageAreOneRecordReadOnce) {
  ASSERT_TRUE(ok_);
  for (const std::string name : {"views.pt", "legacy_views.pt"}) {
    const std::string file = bytes(name);
    const TorchFile f = read_torch_file(file);
    ASSERT_EQ(f.records.size(), 1u) << name;
    EXPECT_EQ(f.records[0].numel, 16384) << name;  // 64 KiB of float32
    const bool zip = name == "views.pt";
    EXPECT_EQ(f.tensors.size(), zip ? 2002u : 2000u) << name;
    for (uint32_t t : f.tensors) EXPECT_EQ(f.record_of(f.pickle.tensor(t).storage), 0u) << f.name_of(t);
    // views[j] is flat[8j : 8j + 8]; flat is arange.
    const auto& views = f.pickle.items(zip ? entry(f, "views") : f.pickle.root);
    ASSERT_EQ(views.size(), 2000u);
    const std::string data = f.read_storage(0);
    for (size_t j = 0; j < views.size(); j += 499) {
      const TensorLayout& v = f.pickle.tensor(views[j]);
      EXPECT_EQ(v.offset, static_cast<int64_t>(8 * j));
      EXPECT_EQ(v.sizes, std::vector<int64_t>{8});
      float first = 0;
      std::memcpy(&first, data.data() + 4 * v.offset, 4);
      EXPECT_EQ(first, static_cast<float>(8 * j));
    }
    if (zip) EXPECT_EQ(f.pickle.tensor(entry(f, "t")).strides, (std::vector<int64_t>{1, 8}));
  }
}

TEST_F(TorchFileScale, ThePickleMachineHoldsLessPerValueThanPython) {
  ASSERT_TRUE(ok_);
  // 20000 steps of float, int, 0.1 and "train"/"eval" histories: 80000 values in 460 KB. Python's
  // torch.load holds 2.2 MB for them (tracemalloc; a float is 24 bytes and a list slot 8); here a
  // value is a 16-byte node (None, booleans and integers below 65536 are one node each) and a
  // 4-byte item.
  const std::string file = bytes("history.pt");
  const size_t before = heap_in_use();
  {
    const TorchFile f = read_torch_file(file);
    const size_t held = heap_in_use() - before;
    EXPECT_EQ(f.pickle.items(entry(f, "loss")).size(), 20000u);
    EXPECT_LT(held, 4 * file.size()) << held << " bytes held for a " << file.size() << "-byte file";
  }
  // A CIFAR batch as published (Python 2 strings) and as Python 3 pickles it (its pixels are
  // _codecs.encode of a latin-1 text, freed once encoded, as in Python): the pixels once and little
  // more for 500 labels and file names. Python's pickle.load holds 1.6 MB.
  for (const std::string name : {"cifar_batch", "cifar_batch_py3"}) {
    const std::string batch = bytes(name);
    const size_t at = heap_in_use();
    const Pickle p = read_pickle(batch);
    const size_t held = heap_in_use() - at;
    EXPECT_LT(held, 500 * 3072 + (512 << 10)) << name << ": " << held << " bytes held for " << batch.size();
  }
}

TEST_F(TorchFileScale, AOneMebibyteKeyOverFiftyThousandNonesIsOneNodeAndOneShortName) {
  ASSERT_TRUE(ok_);
  const std::string file = bytes("long_key.pt");
  const size_t before = heap_in_use();
  const TorchFile f = read_torch_file(file);
  EXPECT_LT(heap_in_use() - before, 2 * file.size());
  const auto& root = f.pickle.items(f.pickle.root);
  ASSERT_EQ(root.size(), 2u);
  const auto& nones = f.pickle.items(root[1]);
  ASSERT_EQ(nones.size(), 50000u);
  EXPECT_LT(f.pickle.nodes.size(), 16u);  // None is one node, as in Python
  for (uint32_t n : nones) ASSERT_EQ(n, nones[0]);
  EXPECT_EQ(f.name_of(root[1]), "['" + std::string(80, 'k') + "... (1048576 bytes)']");
}

TEST_F(TorchFileScale, ATensorNestedAMillionDeepIsReadInLinearTimeAndNamedShortly) {
  ASSERT_TRUE(ok_);
  const TorchFile f = read_torch_file(bytes("deep.pt"));
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.name_of(f.tensors[0]), "[0][0][0][0][0][0]...(999988 more)...[0][0][0][0][0][0]");
  EXPECT_EQ(f.read_storage(f.record_of(f.pickle.tensor(f.tensors[0]).storage)).size(), 16u);
}

TEST_F(TorchFileScale, ADictThatSetsOneKeyAHundredThousandTimesKeepsOneKeyNode) {
  ASSERT_TRUE(ok_);
  const TorchFile f = read_torch_file(bytes("repeated_key.pt"));
  const auto& items = f.pickle.items(f.pickle.root);
  ASSERT_EQ(items.size(), 200000u);
  for (size_t i = 0; i < items.size(); i += 2) ASSERT_EQ(items[i], items[0]);
  EXPECT_EQ(f.tensors.size(), 1u);
}

TEST(TorchFile, ErrorsAreOneShortLineWhateverTheFileHolds) {
  using namespace std::string_literals;
  const std::string huge(1 << 20, 'x');
  const std::string len = "\x00\x00\x10\x00"s;  // 1 MiB, little-endian
  auto error_in = [](const std::string& pkl) {
    try {
      read_pickle(pkl);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::vector<std::string> errors = {
      error_in("\x80\x02" "cos\n" + huge + "\n."),                                               // a global
      error_in("\x80\x02" "cnumpy\ndtype\nX" + len + huge + "\x85R."),                           // a dtype code
      error_in("\x80\x02" "c_codecs\nencode\nX\x01\x00\x00\x00" "aX" + len + huge + "\x86R."),  // an encoding
      error_in("\x80\x02" "c" + huge + "\nx\n)\x81."),                                           // a class
  };
  for (const auto& e : errors) {
    EXPECT_FALSE(e.empty());
    EXPECT_LT(e.size(), 300u) << e.substr(0, 300);
    EXPECT_EQ(e.find('\n'), std::string::npos) << e.substr(0, 300);
  }
  EXPECT_NE(errors[0].find("unsupported global 'os.xxxxxxxx"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("... (1048579 bytes)'"), std::string::npos) << errors[0];
  // Control bytes in a key are escaped, so the message stays one line.
  EXPECT_EQ(shown("a\nb\\c"), "a\\x0ab\\x5cc");
  EXPECT_EQ(shown(std::string(100, 'z'), 10), "zzzzzzzzzz... (100 bytes)");
  EXPECT_NE(error_of("not a torch file"), "");
}
