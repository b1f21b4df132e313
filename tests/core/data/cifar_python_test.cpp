// CIFAR's "python version" (the folders torchvision downloads): batches written by
// tests/python/cifar_python_batches.py as the published files were pickled (Python 2) and as
// Python 3 pickles them (protocols 2 and 5), read back pixel for pixel against the images
// torchvision's CIFAR10 and ToTensor make of them (CHW); a batch holding an os.system call is refused, not run.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <iterator>

#include "core/data/dataset.h"
#include "core/torchsave/pickle_reader.h"
#include "test_support.h"

namespace ct = crosstrain::testing;
using namespace crosstrain::data;

namespace {

class CifarPython : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ct::scratch_dir("cifar_python").string();
    auto r = ct::run_python_script("cifar_python_batches.py", dir_);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static DatasetOptions raw(Split split) {
    DatasetOptions o;
    o.split = split;
    o.transform.size = 0;
    o.transform.output = SampleType::UInt8;
    return o;
  }
  // Every sample equals the reference: label byte, then 3x32x32 pixels, in file order.
  static void expect_matches(const std::string& spec, Split split, const std::string& ref_name) {
    auto d = open_dataset(spec, raw(split));
    const std::string ref = ct::read_bytes(dir_ + "/" + ref_name);
    constexpr size_t kRecord = 1 + 32 * 32 * 3;
    ASSERT_EQ(ref.size() % kRecord, 0u);
    ASSERT_EQ(d->size(), ref.size() / kRecord) << spec;
    EXPECT_TRUE(d->skipped().empty()) << d->skipped().front().reason;
    std::vector<uint8_t> out(d->sample_layout().bytes());
    ASSERT_EQ(out.size(), kRecord - 1);
    for (size_t i = 0; i < d->size(); ++i) {
      SampleRng rng(1);
      d->decode(i, rng, out.data());
      EXPECT_EQ(d->label(i), static_cast<uint8_t>(ref[i * kRecord])) << spec << " sample " << i;
      EXPECT_TRUE(std::string(out.begin(), out.end()) == ref.substr(i * kRecord + 1, kRecord - 1))
          << spec << " sample " << i << ": pixels differ";
    }
  }
  static std::string dir_;
};
std::string CifarPython::dir_;

TEST_F(CifarPython, Python2PicklesAsPublished) {
  expect_matches("cifar:" + dir_ + "/py2", Split::Train, "c10_train.ref");
  expect_matches("cifar:" + dir_ + "/py2/cifar-10-batches-py", Split::Val, "c10_test.ref");
  EXPECT_EQ(open_dataset("cifar:" + dir_ + "/py2", raw(Split::Train))->num_classes(), 10);
}

TEST_F(CifarPython, Python3PicklesProtocolsTwoAndFive) {
  expect_matches("cifar:" + dir_ + "/py3", Split::Train, "c10_train.ref");  // _codecs.encode bytes
  expect_matches("cifar:" + dir_ + "/py3", Split::Val, "c10_test.ref");     // numpy _frombuffer
}

TEST_F(CifarPython, Cifar100UsesTheFineLabels) {
  expect_matches("cifar:" + dir_ + "/c100", Split::Train, "c100_train.ref");
  EXPECT_EQ(open_dataset("cifar:" + dir_ + "/c100", raw(Split::Train))->num_classes(), 100);
}

TEST_F(CifarPython, AnyOtherGlobalIsRefusedNotCalled) {
  DatasetOptions o = raw(Split::Val);
  try {
    open_dataset("cifar:" + dir_ + "/hostile", o);
    FAIL() << "a batch without usable samples opened";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("not a CIFAR python batch"), std::string::npos) << what;
    EXPECT_NE(what.find("posix.system"), std::string::npos) << what;
  }
  o.strict = true;
  EXPECT_THROW(open_dataset("cifar:" + dir_ + "/hostile", o), std::runtime_error);
}

// The same pickle machine reads numpy scalars as numbers and keeps an array's memory order.
TEST_F(CifarPython, NumpyScalarsAndFortranArrays) {
  namespace ts = crosstrain::torchsave;
  const std::string bytes = ct::read_bytes(dir_ + "/scalars.pkl");
  const ts::Pickle p = ts::read_pickle(bytes);
  ASSERT_EQ(p.node(p.root).kind, ts::NodeKind::Dict);
  std::map<std::string, const ts::Node*> by_key;
  uint32_t fortran = 0;
  const auto& items = p.items(p.root);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    by_key[std::string(p.text(items[i]))] = &p.node(items[i + 1]);
    if (p.text(items[i]) == "fortran") fortran = items[i + 1];
  }
  ASSERT_EQ(by_key.size(), 6u);
  EXPECT_EQ(by_key["f8"]->kind, ts::NodeKind::Float);
  EXPECT_EQ(by_key["f8"]->real, 0.25);
  EXPECT_EQ(by_key["f4"]->real, -1.5);
  EXPECT_EQ(by_key["i8"]->kind, ts::NodeKind::Int);
  EXPECT_EQ(by_key["i8"]->integer, -3);
  EXPECT_EQ(by_key["u1"]->integer, 200);
  EXPECT_EQ(by_key["b"]->kind, ts::NodeKind::Bool);
  EXPECT_EQ(by_key["b"]->integer, 1);
  const ts::Node& f = *by_key["fortran"];
  ASSERT_EQ(f.kind, ts::NodeKind::Array);
  EXPECT_TRUE(f.flag);
  EXPECT_EQ(p.array(fortran).sizes, (std::vector<int64_t>{2, 3}));
  std::vector<int32_t> values(6);
  ASSERT_EQ(p.text(fortran).size(), sizeof(int32_t) * 6);
  std::memcpy(values.data(), p.text(fortran).data(), p.text(fortran).size());
  EXPECT_EQ(values, (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));  // column by column
}

}  // namespace
