#pragma once
// Small things tests share: a scratch directory per test and running commands.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace crosstrain::testing {

// Scratch directories of this test process, removed when it exits if every test passed (a failed
// test's files stay for a look; CROSSTRAIN_KEEP_TEST_DIRS=1 keeps them all). Dumps, checkpoints and
// weights of a whole suite would otherwise fill /tmp.
class ScratchDirs {
 public:
  static ScratchDirs& instance() {
    static ScratchDirs dirs;
    return dirs;
  }
  void add(const std::filesystem::path& dir) { dirs_.push_back(dir); }
  ~ScratchDirs() {
    const char* keep = std::getenv("CROSSTRAIN_KEEP_TEST_DIRS");
    if (keep && std::string(keep) == "1") return;
    if (::testing::UnitTest::GetInstance()->failed_test_count() > 0) return;
    std::error_code ec;
    for (const auto& d : dirs_) std::filesystem::remove_all(d, ec);  // best effort
  }

 private:
  std::vector<std::filesystem::path> dirs_;
};

inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("crosstrain_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ScratchDirs::instance().add(dir);
  return dir;
}

struct CommandResult {
  int exit_code;
  std::string output;  // stdout (and stderr when merged)
};

// Runs a shell command; merge_stderr appends 2>&1.
inline CommandResult run_command(const std::string& cmd, bool merge_stderr = true) {
  std::string full = cmd + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline std::string python() { return CROSSTRAIN_PYTHON; }
inline std::string source_dir() { return CROSSTRAIN_SOURCE_DIR; }
inline std::string binary() { return CROSSTRAIN_BINARY; }

// Runs tests/python/SCRIPT with its arguments (usually the folder it writes into) under the
// project's Python; the output is what the script printed, stderr included.
inline CommandResult run_python_script(const std::string& script, const std::string& args) {
  return run_command(python() + " " + source_dir() + "/tests/python/" + script + " " + args);
}

// An installed Chromium for rendering HTML pages headless, or "" when there is none.
inline std::string chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (std::filesystem::exists(c)) return c;
  return "";
}

// The DOM `browser` builds from `page` after layout (--dump-dom); its state goes to state_dir.
inline std::string rendered_dom(const std::string& browser, const std::filesystem::path& page,
                                const std::filesystem::path& state_dir) {
  return run_command(browser + " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
                               " --user-data-dir=" + state_dir.string() + " --dump-dom file://" + page.string(),
                     /*merge_stderr=*/false)
      .output;
}

// The whole file as bytes; empty when it cannot be opened.
inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace crosstrain::testing
