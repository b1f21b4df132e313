// JSON inputs cost memory in proportion to their size, however they nest, and outputs never
// overwrite inputs: hostile files made here, each command run through the binary under
// /usr/bin/time for its peak RSS.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int code = -1;
  std::string out;  // stdout and stderr
  long peak_kib = -1;
};

Outcome run(const std::string& args) {
  const fs::path rss = fs::temp_directory_path() / ("crosstrain_json_bounds_rss_" + std::to_string(::getpid()));
  const std::string cmd = "timeout 120 /usr/bin/time -f %M -o " + rss.string() + " " + CROSSTRAIN_BINARY + " " + args +
                          " 2>&1";
  Outcome r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(rss);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) r.peak_kib = std::stol(line);
  fs::remove(rss);
  return r;
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("crosstrain_json_bounds_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const char* kHeader = R"({"format":"crosstrain-dump","version":1,"mode":"stats","producer":"test","meta":{"precision":"fp32"}})";

std::string record(int seq, int step, const std::string& name, double max) {
  return R"({"seq":)" + std::to_string(seq) + R"(,"step":)" + std::to_string(step) + R"(,"name":")" + name +
         R"(","kind":"forward","dtype":"float32","shape":[8,64],"stats":{"max":)" + std::to_string(max) +
         R"(,"min":-1.25,"mean":0.01,"norm":12.5,"nan_count":0,"inf_count":0}})";
}

// A stats dump of `records` records (1000 per step), its header and loss line replaceable.
fs::path write_dump(const fs::path& dir, int records, const std::string& header = kHeader,
                    const std::string& loss = R"({"step":0,"loss":1.5})") {
  fs::create_directories(dir);
  std::ofstream index(dir / "index.jsonl");
  index << header << "\n";
  for (int i = 0; i < records; ++i) index << record(i, i / 1000, "forward/layer" + std::to_string(i % 1000), i % 7) << "\n";
  std::ofstream(dir / "loss.jsonl") << loss << "\n";
  return dir;
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

const std::string kDeep(size_t{16} << 20, '[');  // 16 MiB of nesting: 1.3 GB as a tree

}  // namespace

TEST(JsonBounds, ADeepIndexHeaderIsOneLineInLittleMemory) {
  const auto d = temp_dir("header");
  const auto b = write_dump(d / "b", 3);
  const std::string meta = R"({"format":"crosstrain-dump","version":1,"meta":)";
  for (const auto& [name, header, says] :
       {std::tuple{"bare", kDeep, std::string("line 1 does not say format")},
        std::tuple{"meta", meta + kDeep, std::string("line 1 is not a JSON header: byte 304: JSON nested deeper than 256 levels")}}) {
    const auto a = write_dump(d / name, 3, header);
    const Outcome r = run("compare " + a.string() + " " + b.string());
    EXPECT_EQ(r.code, 3) << r.out;  // an input that cannot be read: no verdict
    EXPECT_EQ(lines(r.out), 1u) << r.out;
    EXPECT_NE(r.out.find((a / "index.jsonl").string() + ": " + says), std::string::npos) << r.out;
    EXPECT_GT(r.peak_kib, 0);
    EXPECT_LT(r.peak_kib, 160 * 1024) << "peak RSS, KiB";
  }
  fs::remove_all(d);
}

TEST(JsonBounds, ADeepLossLineIsAProblemInLittleMemory) {
  const auto d = temp_dir("loss");
  const auto a = write_dump(d / "a", 3, kHeader, R"({"step":0,"loss":1.5,"extra":)" + kDeep);
  const auto b = write_dump(d / "b", 3);
  const Outcome r = run("compare " + a.string() + " " + b.string());
  EXPECT_EQ(r.code, 1) << r.out;  // a bad loss line is a problem of the dump: the runs differ
  EXPECT_NE(r.out.find("loss.jsonl line 1: column "), std::string::npos) << r.out.substr(0, 3000);
  EXPECT_NE(r.out.find(": JSON nested deeper than 256 levels"), std::string::npos) << r.out.substr(0, 3000);
  EXPECT_LT(r.peak_kib, 160 * 1024) << "peak RSS, KiB";
  fs::remove_all(d);
}

TEST(JsonBounds, ADeepCallSiteFileIsANoteInLittleMemory) {
  const auto d = temp_dir("sources");
  const fs::path trace = d / "trace.json";
  fs::copy_file(std::string(CROSSTRAIN_SOURCE_DIR) + "/tests/data/traces/torch_cpu_small.json", trace);
  std::ofstream(d / "trace.sources.json") << R"({"format":"crosstrain-call-sites","version":1,"extra":)" << kDeep;
  const Outcome r = run("analyze " + trace.string());
  EXPECT_EQ(r.code, 0) << r.out.substr(0, 3000);  // a side file never stops the analysis
  EXPECT_NE(r.out.find("trace.sources.json: not used, no source lines for its trace (byte "), std::string::npos)
      << r.out.substr(0, 3000);
  EXPECT_NE(r.out.find("JSON nested deeper than 256 levels"), std::string::npos) << r.out.substr(0, 3000);
  EXPECT_LT(r.peak_kib, 160 * 1024) << "peak RSS, KiB";
  fs::remove_all(d);
}

// The report is written record by record: --json costs no memory per record beyond the comparison
// itself (it held about 5 KB per record as a tree), and the file is the same document as before:
// nlohmann's 2-space dump of itself, every record in it.
TEST(JsonBounds, CompareJsonIsStreamed) {
  const auto d = temp_dir("stream");
  const int n = 100000;
  const auto a = write_dump(d / "a", n), b = write_dump(d / "b", n);
  const Outcome plain = run("compare " + a.string() + " " + b.string());
  ASSERT_EQ(plain.code, 0) << plain.out.substr(0, 2000);
  const fs::path out = d / "report.json";
  const Outcome streamed = run("compare " + a.string() + " " + b.string() + " --json " + out.string());
  ASSERT_EQ(streamed.code, 0) << streamed.out.substr(0, 2000);
  EXPECT_LT(streamed.peak_kib, plain.peak_kib + 64 * 1024) << "peak RSS with --json vs without, KiB";
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_EQ(text, doc.dump(2) + "\n");
  EXPECT_EQ(doc["kind"], "compare");
  EXPECT_EQ(doc["tensors"].size(), static_cast<size_t>(n));
  EXPECT_EQ(doc["counts"]["records"], n);
  EXPECT_EQ(doc["tensors"][n - 1]["name"], "forward/layer999");
  EXPECT_EQ(doc["loss"]["curve"].size(), 1u);
  EXPECT_TRUE(doc["tensors"][0].contains("metrics"));
  fs::remove_all(d);
}

// A version below 1 is a damaged header, not a newer format.
TEST(JsonBounds, AVersionBelowOneIsNotCalledNewer) {
  const auto d = temp_dir("version");
  const auto b = write_dump(d / "b", 3);
  for (const std::string v : {"-1", "0"}) {
    std::string header = kHeader;
    header.replace(header.find("\"version\":1"), 11, "\"version\":" + v);
    const auto a = write_dump(d / ("a" + v), 3, header);
    const Outcome r = run("compare " + a.string() + " " + b.string());
    EXPECT_EQ(r.code, 3) << r.out;
    EXPECT_EQ(r.out.find("newer"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("format version " + v + " is no version of the dump format"), std::string::npos) << r.out;
  }
  fs::remove_all(d);
}

// A name written twice in one step is said to be duplicated, with its counts, not "only in B".
TEST(JsonBounds, ADuplicatedRecordNameIsNamedSo) {
  const auto d = temp_dir("duplicated");
  const auto a = write_dump(d / "a", 2);
  const auto b = write_dump(d / "b", 2);
  std::ofstream(b / "index.jsonl", std::ios::app) << record(2, 0, "forward/layer1", 1) << "\n";
  const Outcome r = run("compare " + a.string() + " " + b.string() + " --all");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("duplicated name: B holds it 2 times in this step, A 1 time"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("only in B"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// train and op-check refuse an output that is one of their inputs, in the front, before the
// engine starts: one line, exit 2, the input unchanged.
TEST(JsonBounds, TrainOutputsNeverOverwriteInputs) {
  const auto d = temp_dir("train_outputs");
  const fs::path w = d / "w.pt";
  std::ofstream(w) << "weights";
  fs::create_symlink(w, d / "link.pt");
  fs::create_hard_link(w, d / "hard.pt");
  fs::create_directories(d / "data");
  std::ofstream(d / "data" / "train-images-idx3-ubyte") << "idx";
  const auto dump = write_dump(d / "dump", 3);
  const std::string W = w.string(), D = d.string();
  for (const std::string& flags :
       {"train --weights " + W + " --save-weights " + W, "train --weights " + W + " --save-weights " + D + "/link.pt",
        "train --weights " + W + " --step-log " + D + "/hard.pt", "train --resume " + W + " --json " + W,
        "train --weights " + W + " --dump " + D, "train --weights " + W + " --profile " + D,
        "train --data idx:" + D + "/data --checkpoint-dir " + D + "/data",
        "train --data idx:" + D + "/data --save-weights " + D + "/data/train-images-idx3-ubyte",
        "op-check --from-dump " + dump.string() + " --json " + dump.string() + "/index.jsonl",
        "op-check --from-dump " + dump.string() + " --json " + dump.string() + "/new.json"}) {
    const Outcome r = run(flags);
    EXPECT_EQ(r.code, 2) << flags << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1u) << flags << "\n" << r.out;
    EXPECT_NE(r.out.find("would write into"), std::string::npos) << flags << "\n" << r.out;
  }
  std::ifstream in(w);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "weights");
  fs::remove_all(d);
}

// --jpeg-cache fills a folder with .jpg files: inside the dataset they would become samples of it.
TEST(JsonBounds, JpegCacheStaysOutOfTheDataset) {
  const auto d = temp_dir("jpeg_cache");
  fs::create_directories(d / "data" / "cat");
  const std::string D = d.string();
  for (const std::string& flags :
       {"train --data imagefolder:" + D + "/data --jpeg-cache " + D + "/data/cache",
        "train --data imagefolder:" + D + "/data --jpeg-cache " + D + "/data/cat",
        "train --data imagefolder:" + D + "/data --jpeg-cache " + D + "/data",
        "data-bench --data imagefolder:" + D + "/data --jpeg-cache " + D + "/data/cache",
        "train --jpeg-cache " + D + "/cache", "data-bench --data synthetic:64 --jpeg-cache " + D + "/cache"}) {
    const Outcome r = run(flags);
    EXPECT_EQ(r.code, 2) << flags << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1u) << flags << "\n" << r.out;
    EXPECT_NE(r.out.find("--jpeg-cache"), std::string::npos) << flags << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(d / "data" / "cache"));
  EXPECT_FALSE(fs::exists(d / "cache"));
  fs::remove_all(d);
}
