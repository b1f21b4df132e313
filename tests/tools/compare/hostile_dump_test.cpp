// Dumps and loss logs written by someone else: paths in an index stay inside the dump directory,
// special files are refused without blocking, hostile nesting and shapes are errors, not crashes.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "tools/compare/dump_compare.h"
#include "tools/dump/dump_reader.h"
#include "tools/dump/dump_writer.h"
#include "tools/dump/npy.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using namespace crosstrain::compare;
using crosstrain::testing::TempDir;
namespace fs = std::filesystem;

namespace {

void write_run(const std::string& dir) {
  DumpWriter w;
  w.open(dir, DumpMode::Tensors);
  std::vector<float> v(64, 1.5f);
  for (int64_t step = 0; step < 2; ++step) {
    w.write_tensor(step, "fc", RecordKind::Forward, DType::Float32, {8, 8}, v.data());
    w.log_loss(step, 1.0);
  }
  w.close();
}

std::vector<nlohmann::json> index_lines(const std::string& dir) {
  std::ifstream in(dir + "/index.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  return lines;
}

void rewrite_index(const std::string& dir, const std::vector<nlohmann::json>& lines) {
  std::ofstream out(dir + "/index.jsonl", std::ios::trunc);
  for (const auto& l : lines) out << l.dump() << "\n";
}

std::string all_text(const CompareResult& r) {
  std::string s;
  for (const auto& p : r.problems) s += p + "\n";
  for (const auto& t : r.tensors) s += t.reason + "\n";
  return s;
}

// Record 1 (step 0, "fc") of A now names `file`; returns the comparison.
CompareResult compare_with_file(const TempDir& a, const TempDir& b, const std::string& file) {
  auto lines = index_lines(a.str());
  lines[1]["file"] = file;
  rewrite_index(a.str(), lines);
  return compare_paths(a.str(), b.str(), {});
}

}  // namespace

TEST(HostileDump, IndexPathsLeavingTheDumpAreRefused) {
  for (const std::string file : {"../outside.npy", "tensors/../../outside.npy", "/etc/passwd"}) {
    TempDir a("hostile"), b("hostile");
    write_run(a.str());
    write_run(b.str());
    const auto stolen = fs::path(a.str()).parent_path() / "outside.npy";
    const auto lines = index_lines(b.str());
    fs::copy_file(b.str() + "/" + lines[1]["file"].get<std::string>(), stolen, fs::copy_options::overwrite_existing);
    const auto r = compare_with_file(a, b, file);
    fs::remove(stolen);
    EXPECT_FALSE(r.agree) << file;
    EXPECT_NE(all_text(r).find("leads out of the dump directory"), std::string::npos) << file << "\n" << all_text(r);
    EXPECT_LT(r.counts.pass, 2) << file << ": the record naming an outside file was compared";
  }
}

TEST(HostileDump, SymlinkOutOfTheDumpIsRefused) {
  TempDir a("hostile"), b("hostile"), elsewhere("hostile");
  write_run(a.str());
  write_run(b.str());
  const std::string file = index_lines(a.str())[1]["file"];
  const std::string outside = elsewhere / "t.npy";
  fs::copy_file(a.str() + "/" + file, outside);
  fs::remove(a.str() + "/" + file);
  fs::create_symlink(outside, a.str() + "/" + file);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_FALSE(r.agree);
  EXPECT_EQ(r.counts.unreadable, 1);
  EXPECT_NE(all_text(r).find("symbolic link leads out"), std::string::npos) << all_text(r);
}

TEST(HostileDump, FifosAndDevicesAreRefusedWithoutBlocking) {
  TempDir a("hostile"), b("hostile");
  write_run(a.str());
  write_run(b.str());
  const std::string file = index_lines(a.str())[1]["file"];
  fs::remove(a.str() + "/" + file);
  ASSERT_EQ(::mkfifo((a.str() + "/" + file).c_str(), 0600), 0);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_EQ(r.counts.unreadable, 1);
  EXPECT_NE(all_text(r).find("FIFO"), std::string::npos) << all_text(r);

  fs::remove(b.str() + "/loss.jsonl");
  ASSERT_EQ(::mkfifo((b.str() + "/loss.jsonl").c_str(), 0600), 0);
  EXPECT_THROW(read_dump(b.str()), std::runtime_error);
  EXPECT_THROW(read_loss_log(b.str() + "/loss.jsonl"), std::runtime_error);
  fs::remove(b.str() + "/index.jsonl");
  ASSERT_EQ(::mkfifo((b.str() + "/index.jsonl").c_str(), 0600), 0);
  EXPECT_THROW(read_dump(b.str()), std::runtime_error);
  EXPECT_THROW(NpyArray::open("/dev/zero"), std::runtime_error);
}

TEST(HostileDump, DeeplyNestedLossValueIsAProblemNotACrash) {
  TempDir d("hostile");
  const std::string path = d / "loss.jsonl";
  {
    std::ofstream out(path);
    out << "{\"step\":0,\"loss\":1.0}\n{\"step\":1,\"loss\":" << std::string(200000, '[') << std::string(200000, ']')
        << "}\n";
  }
  const LossLog log = read_loss_log(path);
  EXPECT_EQ(log.points.size(), 1u);
  ASSERT_EQ(log.problems.size(), 1u);
  EXPECT_LT(log.problems[0].size(), 300u);
  const auto r = compare_paths(path, path, {});
  EXPECT_FALSE(r.problems.empty());
}

TEST(HostileDump, ShapesBeyondInt64AreRefusedAndZeroDimensionsGiveZero) {
  const int64_t big = int64_t{1} << 32;
  EXPECT_EQ(shape_numel({big, big, 0}), 0);
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({big, 4}), 4 * big);
  EXPECT_THROW(shape_numel({big, big}), std::invalid_argument);
  EXPECT_THROW(shape_numel({big, big, 1, 0, -1}), std::invalid_argument);
  nlohmann::json rec = {{"seq", 0}, {"step", 0}, {"name", "forward/x"}, {"dtype", "float32"},
                        {"shape", {big, big, 3}}, {"stats", nlohmann::json::object()}};
  EXPECT_THROW(record_from_json(rec), std::invalid_argument);
  rec["shape"] = {big, big, 0};
  EXPECT_EQ(record_from_json(rec).stats.numel, 0);
}

TEST(HostileDump, IntegersOutOfRangeOrFractionalAreRefused) {
  nlohmann::json rec = {{"seq", 1e300}, {"step", 0}, {"name", "forward/x"}, {"dtype", "float32"},
                        {"shape", {2}}, {"stats", nlohmann::json::object()}};
  EXPECT_THROW(record_from_json(rec), std::invalid_argument);
  rec["seq"] = 0;
  rec["shape"] = {1.5};
  EXPECT_THROW(record_from_json(rec), std::invalid_argument);
  rec["shape"] = {uint64_t{1} << 63};
  EXPECT_THROW(record_from_json(rec), std::invalid_argument);
  rec["shape"] = {2};
  rec["stats"] = {{"nan_count", -1e300}};
  EXPECT_THROW(record_from_json(rec), std::invalid_argument);
  const LossLog log = parse_loss_log("{\"step\":1e300,\"loss\":1}\n{\"step\":2,\"loss\":1}\n", "x");
  EXPECT_EQ(log.points.size(), 1u);
  EXPECT_EQ(log.problems.size(), 1u);
  EXPECT_THROW(parse_dump_index("{\"format\":\"crosstrain-dump\",\"version\":1e300}\n", "x"), std::runtime_error);
  EXPECT_THROW(parse_dump_index("{\"format\":7,\"version\":1}\n", "x"), std::runtime_error);
}

// A version below 1 is a damaged header, said as such: never "newer than this crosstrain reads".
TEST(HostileDump, VersionsBelowOneAreDamagedNotNewer) {
  for (const std::string v : {"-1", "0", "-5"}) {
    try {
      parse_dump_index("{\"format\":\"crosstrain-dump\",\"version\":" + v + "}\n", "x/index.jsonl");
      ADD_FAILURE() << v;
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("newer"), std::string::npos) << what;
      EXPECT_NE(what.find("x/index.jsonl: format version " + v + " is no version of the dump format"), std::string::npos)
          << what;
    }
  }
  EXPECT_THROW(parse_dump_index("{\"format\":\"crosstrain-dump\",\"version\":\"1\"}\n", "x"), std::runtime_error);
  EXPECT_THROW(parse_dump_index("{\"format\":\"crosstrain-dump\",\"version\":1} trailing\n", "x"), std::runtime_error);
  // The header's meta keeps its scalars (compare reads meta.precision) and skips what nests.
  const DumpIndex idx = parse_dump_index(
      "{\"format\":\"crosstrain-dump\",\"version\":1,\"meta\":{\"precision\":\"bf16\",\"seed\":3,\"x\":[[1]]}}\n", "x");
  EXPECT_EQ(idx.meta["precision"], "bf16");
  EXPECT_EQ(idx.meta["seed"], 3);
  EXPECT_FALSE(idx.meta.contains("x"));
}

// A loss line nested deep under any key is a problem of that line, named with its column and the
// nesting limit; the other lines are read.
TEST(HostileDump, DeepLossLineUnderAnyKeyIsAProblem) {
  const std::string text = "{\"step\":0,\"loss\":1.0}\n{\"step\":1,\"x\":" + std::string(100000, '[') + "\n{\"step\":2,\"loss\":\"nan\"}\n";
  const LossLog log = parse_loss_log(text, "loss.jsonl");
  ASSERT_EQ(log.points.size(), 2u);
  EXPECT_TRUE(std::isnan(log.points[1].loss));
  ASSERT_EQ(log.problems.size(), 1u);
  EXPECT_NE(log.problems[0].find("loss.jsonl line 2: column 272: JSON nested deeper than 256 levels"), std::string::npos)
      << log.problems[0];
}
