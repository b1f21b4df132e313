// Every numeric flag of every command refuses values no run can use (negative counts, 1e308,
// 99999999999, nan, inf, text) as a usage error: exit 2, one line, the allowed range in plain
// numbers, before anything runs (the front parses every command's flags, so no libtorch is loaded).
#include <string>
#include <vector>

#include "test_support.h"

using crosstrain::testing::binary;
using crosstrain::testing::run_command;

namespace {

struct FlagCase {
  std::string command;  // the command and any flags it requires
  std::string flag;
  std::vector<std::string> bad;
};

const std::vector<std::string> kCounts = {"-1", "1e308", "99999999999", "nan", "inf", "2.5", "many"};
// Seeds take every 64-bit value: 99999999999 is a seed, "-1" must not wrap around to 2^64 - 1.
const std::vector<std::string> kSeeds = {"-1", "1e308", "nan", "inf", "2.5", "many", "0x10", "+-1"};
// Sample counts and byte limits go up to 2^40: 99999999999 is a valid value there.
const std::vector<std::string> kLarge = {"-1", "1e308", "1e13", "nan", "inf", "2.5", "many"};

// The longest run of digits: CLI11's own checks printed the largest double, 310 digits.
size_t longest_digit_run(const std::string& s) {
  size_t best = 0, run = 0;
  for (char c : s) {
    run = (c >= '0' && c <= '9') ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::vector<FlagCase> cases() {
  const std::string align = "align --a device=cpu --b device=cpu";
  std::vector<FlagCase> v;
  for (const std::string& cmd : {std::string("train"), std::string("bench"), align})
    for (const char* flag : {"--threads", "--num-classes", "--base-width", "--batch-size", "--image-size", "--steps",
                             "--scale-growth-interval", "--lr-warmup-steps", "--lr-step-size", "--profile-active",
                             "--profile-wait"})
      v.push_back({cmd, flag, kCounts});
  for (const std::string& cmd : {std::string("train"), align})
    for (const char* flag : {"--lr", "--momentum", "--weight-decay", "--lr-gamma", "--clip-grad-norm", "--label-smoothing",
                             "--peak-tflops"})
      v.push_back({cmd, flag, {"-1", "1e308", "nan", "inf", "-inf", "fast"}});
  for (const char* flag : {"--workers", "--prefetch", "--epochs", "--eval-every", "--accumulate-steps",
                           "--checkpoint-every", "--checkpoint-keep"})
    v.push_back({"train", flag, kCounts});
  for (const char* flag : {"--max-samples", "--val-max-samples"}) v.push_back({"train", flag, kLarge});
  v.push_back({"train", "--min-crop-scale", {"0", "1.5", "nan", "inf", "1e308"}});
  v.push_back({"train", "--dist-timeout", {"0", "-1", "nan", "inf", "1e308", "fast"}});
  v.push_back({"train", "--bucket-cap-mb", {"0", "-1", "nan", "inf", "1e308", "fast"}});
  v.push_back({"bench", "--warmup-steps", kCounts});
  v.push_back({"models", "--num-classes", kCounts});
  v.push_back({"models", "--image-size", kCounts});
  v.push_back({"op-check", "--perf-iterations", kCounts});
  v.push_back({"op-check", "--top", kCounts});
  for (const char* flag : {"--workers", "--batch-size", "--prefetch", "--size", "--resize", "--images",
                           "--max-image-pixels", "--channels"})
    v.push_back({"data-bench", flag, kCounts});
  for (const char* flag : {"--max-samples", "--max-image-bytes", "--max-file-bytes"})
    v.push_back({"data-bench", flag, kLarge});
  v.push_back({"data-bench", "--std", {"0", "-1", "nan", "inf", "1e308"}});
  for (const char* flag : {"--train", "--val", "--classes", "--quality", "--threads"})
    v.push_back({"make-imagefolder --out /nonexistent_dir_for_test/x", flag, kCounts});
  for (const char* flag : {"--threads", "--context", "--max-rows"}) v.push_back({"compare a b", flag, kCounts});
  v.push_back({"compare a b", "--loss-rtol", {"-1", "1e308", "nan", "inf"}});
  for (const char* flag : {"--top", "--max-inflated-mib"}) v.push_back({"analyze t.json", flag, kCounts});
  v.push_back({"analyze t.json", "--idle-gap-us", {"-1", "1e308", "nan", "inf"}});
  for (const char* flag : {"--jobs", "--max-file-size"}) v.push_back({"migrate x.py", flag, kCounts});
  for (const char* flag : {"--factor", "--iters", "--warmup"}) v.push_back({"comm-bench", flag, kCounts});
  // Byte counts with units, up to 1 TiB: CLI11's own parser printed 2^64 - 1 in twenty digits.
  for (const char* flag : {"--min-bytes", "--max-bytes", "--memcpy-bytes"})
    v.push_back({"comm-bench", flag, {"-1", "1e308", "2000000000000", "2T", "nan", "inf", "2.5", "many", "1X", "9999999999G"}});
  // A nan timeout used to pass and make the rendezvous wait -9223372036854775808 ms.
  v.push_back({"comm-bench", "--dist-timeout", {"0", "-1", "nan", "inf", "1e308", "fast"}});
  for (const char* flag : {"--nproc-per-node", "--node-rank", "--master-port", "--max-restarts"})
    v.push_back({"launch", flag, kCounts});
  v.push_back({"launch", "--kill-timeout", {"-1", "nan", "inf", "1e308", "fast"}});
  for (const std::string& cmd : {std::string("train"), std::string("bench"), align, std::string("data-bench"),
                                 std::string("op-check")})
    v.push_back({cmd, "--seed", kSeeds});
  return v;
}

}  // namespace

TEST(FlagBounds, EveryNumericFlagRefusesHostileValuesInOneLine) {
  for (const auto& c : cases())
    for (const auto& value : c.bad) {
      // A value that slipped through would start the command: the time limit keeps the test short.
      const std::string cmd = "timeout 20 " + binary() + " " + c.command + " " + c.flag + " '" + value + "'";
      auto r = run_command(cmd);
      SCOPED_TRACE(cmd);
      EXPECT_EQ(r.exit_code, 2) << r.output;
      EXPECT_EQ(lines(r.output), 1u) << r.output;
      EXPECT_EQ(r.output.rfind("crosstrain: error: " + c.flag, 0), 0u) << r.output;
      EXPECT_LT(longest_digit_run(r.output), 15u) << r.output;
    }
}

TEST(FlagBounds, TheMessageSaysTheAllowedRange) {
  auto r = run_command("timeout 20 " + binary() + " train --threads 10000");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--threads: must be an integer between 0 and 1024 (got '10000')"), std::string::npos)
      << r.output;
  r = run_command(binary() + " train --batch-size -1");
  EXPECT_NE(r.output.find("between 1 and 65536"), std::string::npos) << r.output;
  r = run_command(binary() + " train --lr nan");
  EXPECT_NE(r.output.find("--lr: must be a number between 0 and 1000000000 (got 'nan')"), std::string::npos)
      << r.output;
}

// A seed is any unsigned 64-bit integer, exactly: 2^64 - 1 parses, 2^64 and beyond are refused
// with the range in words (twenty digits of it would be unreadable), like every other flag.
TEST(FlagBounds, SeedsTakeEverySixtyFourBitValueAndNoMore) {
  for (const std::string cmd : {"train", "data-bench", "op-check"}) {
    for (const std::string big : {"18446744073709551616", "99999999999999999999999"}) {
      auto r = run_command("timeout 20 " + binary() + " " + cmd + " --seed " + big);
      SCOPED_TRACE(cmd + " --seed " + big);
      EXPECT_EQ(r.exit_code, 2) << r.output;
      EXPECT_EQ(lines(r.output), 1u) << r.output;
      EXPECT_NE(r.output.find("crosstrain: error: --seed: must be an integer between 0 and 2^64 - 1 (got '" + big + "')"),
                std::string::npos)
          << r.output;
    }
    auto r = run_command(binary() + " " + cmd + " --seed 18446744073709551615 --help");
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
  }
}

TEST(FlagBounds, ValuesAtTheLimitsStillParse) {
  // --help after the flag: parsing succeeds, nothing runs.
  for (const std::string args : {"train --threads 0 --batch-size 65536 --image-size 4096 --num-classes 1000000",
                                 "train --lr 0 --momentum 0.9 --min-crop-scale 1", "models --image-size 8",
                                 "data-bench --workers 0,1024 --prefetch 1024", "migrate --jobs 1024",
                                 "compare a b --threads 1024", "comm-bench --max-bytes 1T --min-bytes 1 --memcpy-bytes 0",
                                 "comm-bench --max-bytes 1024GiB --min-bytes 2kb --memcpy-bytes 1m"}) {
    auto r = run_command(binary() + " " + args + " --help");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
  }
}
