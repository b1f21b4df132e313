// write_file_atomic() against what can sit at a target path: regular files, symbolic links,
// FIFOs, directories, planted links at temporary names, and temporary files of crashed writers.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "report/input_file.h"
#include "report/output.h"

namespace fs = std::filesystem;
using crosstrain::report::check_writable;
using crosstrain::report::write_file_atomic;
using crosstrain::report::write_stdout;

namespace {

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("crosstrain_atomic_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }
  fs::path dir_;
};

TEST_F(AtomicFile, ReplacesRegularFileKeepingItsModeAndLeavesNoTemporary) {
  const auto p = path("r.json");
  write_file_atomic(p, "old");
  ::chmod(p.c_str(), 0640);
  write_file_atomic(p, "new");
  EXPECT_EQ(slurp(p), "new");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, RefusesASymlinkToARegularFileAndKeepsBoth) {
  const auto target = path("real.json"), link = path("latest.json");
  write_file_atomic(target, "v1");
  fs::create_symlink(target, link);
  EXPECT_THROW(write_file_atomic(link, "v2"), std::runtime_error);
  EXPECT_THROW(check_writable(link), std::runtime_error);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "v1");
}

TEST_F(AtomicFile, WritesThroughASymlinkToADevice) {
  const auto link = path("sink");
  fs::create_symlink("/dev/null", link);
  EXPECT_NO_THROW(write_file_atomic(link, "discarded"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(AtomicFile, RefusesDanglingSymlinkAndDirectory) {
  const auto link = path("dangling");
  fs::create_symlink(path("nowhere/x"), link);
  EXPECT_THROW(write_file_atomic(link, "x"), std::runtime_error);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_THROW(write_file_atomic(dir_.string(), "x"), std::runtime_error);
  EXPECT_THROW(check_writable(link), std::runtime_error);
  EXPECT_THROW(check_writable(path("no/such/dir/x.json")), std::runtime_error);
  EXPECT_NO_THROW(check_writable(path("fresh.json")));
}

TEST_F(AtomicFile, WritesIntoAFifoInsteadOfReplacingIt) {
  const auto fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    got = ss.str();
  });
  // The writer refuses a FIFO nobody reads yet; retry until the reader has it open.
  bool written = false;
  for (int i = 0; i < 500 && !written; ++i) {
    try {
      write_file_atomic(fifo, "through the pipe");
      written = true;
    } catch (const std::runtime_error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  reader.join();
  EXPECT_TRUE(written);
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST_F(AtomicFile, FifoWithoutReaderFailsInsteadOfHanging) {
  const auto fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    write_file_atomic(fifo, "x");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("FIFO"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST_F(AtomicFile, PlantedLinksAtOldTemporaryNamesAreNotFollowed) {
  const auto victim = path("victim");
  write_file_atomic(victim, "keep me");
  const auto p = path("r.json");
  fs::create_symlink(victim, p + ".tmp." + std::to_string(::getpid()));
  fs::create_symlink(victim, p + ".tmp");
  write_file_atomic(p, "report");
  EXPECT_EQ(slurp(victim), "keep me");
  EXPECT_EQ(slurp(p), "report");
}

TEST_F(AtomicFile, RemovesTemporariesOfDeadWritersOnly) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // now a pid that no longer runs
  const auto p = path("r.json");
  const auto stale = path(".r.json.tmp-" + std::to_string(child) + "-abcdef");
  const auto alive = path(".r.json.tmp-" + std::to_string(::getppid()) + "-abcdef");
  const auto other = path(".other.json.tmp-" + std::to_string(child) + "-abcdef");
  for (const auto& f : {stale, alive, other}) std::ofstream(f) << "partial";
  write_file_atomic(p, "done");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(other));
}

// stdout on /dev/full: the write must be reported, not lost. Runs in a child so that the test's
// own stdout stays intact.
TEST(CheckedStdout, FullDeviceIsAnError) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int full = ::open("/dev/full", O_WRONLY);
    if (full < 0 || ::dup2(full, 1) < 0) ::_exit(3);
    try {
      write_stdout(std::string(100, 'x'));
    } catch (const std::runtime_error& e) {
      ::_exit(std::string(e.what()).find("standard output") != std::string::npos ? 0 : 4);
    }
    ::_exit(1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: write to /dev/full reported success";
}

}  // namespace

// An output that is one of the inputs, by its own name, through a linked folder, a symbolic link
// or another hard link, is refused; a new file or another file is not.
TEST_F(AtomicFile, AnOutputThatIsAnInputIsRefused) {
  using crosstrain::report::refuse_input_as_output;
  using crosstrain::report::path_within;
  std::ofstream(path("trace.json")) << "{}";
  std::ofstream(path("other.json")) << "{}";
  fs::create_directories(dir_ / "run");
  fs::create_symlink(dir_, dir_ / "run" / "up");
  fs::create_symlink(path("trace.json"), path("link.json"));
  fs::create_hard_link(path("trace.json"), path("hard.json"));
  const std::vector<std::string> inputs = {path("other.json"), path("trace.json")};
  for (const auto& out : {path("trace.json"), (dir_ / "run" / "up" / "trace.json").string(), path("link.json"),
                          path("hard.json"), path("./trace.json")}) {
    EXPECT_TRUE(path_within(out, path("trace.json"))) << out;
    try {
      refuse_input_as_output("--html", out, inputs);
      ADD_FAILURE() << out << " was not refused";
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("--html " + out + " would write into the input ", 0), 0u) << msg;
      EXPECT_NE(msg.find("one of the files read"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  EXPECT_NO_THROW(refuse_input_as_output("--html", path("new.html"), inputs));
  EXPECT_NO_THROW(refuse_input_as_output("--json", "-", inputs));
  EXPECT_FALSE(path_within(path("other.json"), path("trace.json")));
  // A folder read as an input is replaced only by writing the folder itself; a new report inside it is not.
  EXPECT_THROW(refuse_input_as_output("--json", (dir_ / "run").string(), {(dir_ / "run").string()}), std::invalid_argument);
  EXPECT_NO_THROW(refuse_input_as_output("--json", path("run/new.json"), {(dir_ / "run").string()}));
  EXPECT_EQ(slurp(path("trace.json")), "{}");
}
