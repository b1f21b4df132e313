// Hostile files against every command that reads files, through the binary: FIFOs, links to
// /dev/zero, symbolic-link loops, gzip bombs, truncated files and (as root) a full disk. For each:
// the documented exit status and message (docs/RELIABILITY.md), an end within a time limit,
// bounded memory (the child's peak RSS), and nothing touched outside the command's target.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "test_support.h"

namespace fs = std::filesystem;
using crosstrain::testing::binary;
using crosstrain::testing::run_command;
using crosstrain::testing::scratch_dir;

namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;
  long max_rss_mib = -1;
};

// Runs `crosstrain ARGS` with stdin closed, killed after `limit_s`, its peak RSS measured.
Outcome run_bounded(const std::string& args, const fs::path& work, int limit_s = 30) {
  const fs::path rss = work / ".rss";
  const auto r = run_command("cd " + work.string() + " && /usr/bin/time -f %M -o " + rss.string() + " timeout -k 5 " +
                             std::to_string(limit_s) + " " + binary() + " " + args + " </dev/null");
  Outcome o{r.exit_code, r.output, -1};
  std::ifstream in(rss);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;  // "Command exited with non-zero status N" comes first
  if (!last.empty()) o.max_rss_mib = std::stol(last) / 1024;
  return o;
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// An IDX pair of n 2x2 images; labels cut to `labels_kept` records.
void write_idx(const fs::path& dir, uint32_t n, uint32_t labels_kept) {
  fs::create_directories(dir);
  write(dir / "train-images-idx3-ubyte", be32(0x803) + be32(n) + be32(2) + be32(2) + std::string(n * 4, '\x40'));
  std::string labels = be32(0x801) + be32(n);
  for (uint32_t i = 0; i < labels_kept; ++i) labels += static_cast<char>(i % 3);
  write(dir / "train-labels-idx1-ubyte", labels);
}

// Every file under `dir` with its size and modification time.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> s;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    s[e.path().string()] = std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
                           std::to_string(st.st_mtim.tv_nsec);
  }
  return s;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// The hostile files, built once: root/in holds them, root/outside is what no command may touch.
struct Hostile {
  fs::path root, in, outside;
  Hostile() {
    root = scratch_dir("hostile_inputs");
    in = root / "in";
    outside = root / "outside";
    fs::create_directories(in);
    fs::create_directories(outside);
    write(outside / "keep.json", "{\"keep\": true}\n");
    write(outside / "keep.py", "import torch\nx = torch.zeros(1).cuda()\n");
    ::mkfifo((in / "fifo.json").c_str(), 0644);
    ::mkfifo((in / "fifo.py").c_str(), 0644);
    ::mkfifo((in / "fifo.pt").c_str(), 0644);
    fs::create_symlink("/dev/zero", in / "zero.json");
    fs::create_symlink("/dev/zero", in / "zero.py");
    fs::create_symlink("/dev/zero", in / "zero.pt");
    fs::create_symlink("loop_b", in / "loop_a");
    fs::create_symlink("loop_a", in / "loop_b");
    fs::create_symlink("self.json", in / "self.json");
    // 64 MiB of spaces in 64 KiB of gzip: a trace that inflates past --max-inflated-mib 8.
    run_command("head -c 67108864 /dev/zero | tr '\\0' ' ' | gzip -1 > " + (in / "bomb.json.gz").string());
    write(in / "truncated.json", "{\"traceEvents\": [{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 1, \"du");
    write(in / "truncated.pt", read_prefix_of_zip());
    // A migrate tree: a real file, a FIFO, a /dev/zero link, a loop and a link out of the tree.
    const fs::path py = in / "py";
    fs::create_directories(py);
    write(py / "train.py", "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n");
    ::mkfifo((py / "fifo.py").c_str(), 0644);
    fs::create_symlink("/dev/zero", py / "zero.py");
    fs::create_symlink("loop.py", py / "loop.py");
    fs::create_symlink(outside / "keep.py", py / "outside.py");
    // Datasets: IDX with 10 images and 4 labels; IDX with a header cut short; an IDX gzip bomb;
    // CIFAR whose batch is a FIFO; an image folder whose images are a FIFO, /dev/zero and a loop.
    write_idx(in / "idx_short_labels", 10, 4);
    fs::create_directories(in / "idx_short_header");
    write(in / "idx_short_header" / "train-images-idx3-ubyte", be32(0x803) + be32(10));
    write(in / "idx_short_header" / "train-labels-idx1-ubyte", be32(0x801) + be32(10) + std::string(10, '\1'));
    fs::create_directories(in / "idx_bomb");
    run_command("(printf '\\000\\000\\010\\003\\000\\001\\000\\000\\000\\000\\004\\000\\000\\000\\004\\000'; head -c "
                "67108864 /dev/zero) | gzip -1 > " + (in / "idx_bomb" / "train-images-idx3-ubyte.gz").string());
    write(in / "idx_bomb" / "train-labels-idx1-ubyte", be32(0x801) + be32(65536) + std::string(65536, '\1'));
    fs::create_directories(in / "cifar");
    ::mkfifo((in / "cifar" / "data_batch_1.bin").c_str(), 0644);
    const fs::path cls = in / "folder" / "train" / "cls";
    fs::create_directories(cls);
    ::mkfifo((cls / "fifo.jpg").c_str(), 0644);
    fs::create_symlink("/dev/zero", cls / "zero.jpg");
    fs::create_symlink("loop.jpg", cls / "loop.jpg");
    fs::create_symlink(outside, cls / "outside_dir");
    // A dump whose index is cut mid-record and whose loss log is a FIFO.
    fs::create_directories(in / "dump");
    write(in / "dump" / "index.jsonl", "{\"seq\": 0, \"name\": \"forward/conv1\", \"step\": 0, \"sha");
    ::mkfifo((in / "dump" / "loss.jsonl").c_str(), 0644);
  }
  // The first 100 bytes of a zip: torch.save's layout, cut off.
  static std::string read_prefix_of_zip() { return std::string("PK\x03\x04", 4) + std::string(96, '\0'); }
};

}  // namespace

// Files that are not regular files, or never end, or point back at themselves: refused at once,
// naming the path, in bounded memory; nothing outside the inputs changes.
TEST(HostileInputs, EveryFileReadingCommandRefusesWithoutHangingOrGrowing) {
  Hostile h;
  const auto before = snapshot(h.outside);
  const std::string in = h.in.string();
  struct Case {
    std::string args;
    int exit_code;
    std::string message;
    long max_rss_mib;
  };
  std::vector<Case> cases = {
      {"analyze " + in + "/fifo.json", 1, "fifo.json: not a regular file", 256},
      {"analyze " + in + "/zero.json", 1, "zero.json: not a regular file", 256},
      {"analyze " + in + "/self.json", 1, "self.json", 256},
      {"analyze " + in + "/loop_a", 1, "loop_a", 256},
      {"analyze --max-inflated-mib 8 " + in + "/bomb.json.gz", 1, "more than 8388608 bytes", 256},
      {"analyze " + in + "/truncated.json", 1, "truncated.json", 256},
      // compare gives no verdict on inputs it cannot read (exit 3), naming the first.
      {"compare " + in + "/fifo.json " + in + "/zero.json", 3, "cannot read A: " + in + "/fifo.json: is a FIFO", 256},
      {"compare " + in + "/zero.json " + in + "/fifo.json", 3, "zero.json: is a character device", 256},
      {"compare " + in + "/loop_a " + in + "/self.json", 3, "Too many levels of symbolic links", 256},
      {"compare " + in + "/dump " + in + "/dump", 3, "index.jsonl: line 1 is not a JSON header", 256},
      {"migrate --check " + in + "/fifo.py", 1, "not a regular file", 256},
      {"migrate --check " + in + "/zero.py", 1, "not a regular file", 256},
      {"migrate --check " + in + "/py/loop.py", 1, "loop.py: not a regular file", 256},
      {"migrate --check " + in + "/py", 1, "fifo.py", 256},
      {"data-bench --data idx:" + in + "/idx_short_header --workers 1", 1, "truncated header", 256},
      {"data-bench --data idx:" + in + "/idx_bomb --max-file-bytes 1048576 --workers 1", 1, "limit", 256},
      {"data-bench --data cifar:" + in + "/cifar --workers 1", 1, "data_batch_1.bin", 256},
      {"data-bench --data imagefolder:" + in + "/folder --strict --workers 1", 1, "not a regular file", 256},
      {"make-imagefolder --from cifar:" + in + "/cifar --out " + h.root.string() + "/mk1", 1, "data_batch_1.bin", 256},
      {"make-imagefolder --from idx:" + in + "/idx_short_header --out " + h.root.string() + "/mk2", 1,
       "truncated header", 256},
      {"make-imagefolder --out " + in + "/loop_a/tree --train 2 --val 1", 1, "Too many levels of symbolic links", 256},
  };
#ifdef CROSSTRAIN_CLI_WITH_TORCH
  const std::string tiny = " --device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16 --batch-size 2"
                           " --steps 1 --warmup-steps 0 --threads 1 --no-progress";
  const std::string align_tiny = " --device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16"
                                 " --batch-size 2 --steps 1 --threads 1 --no-progress";
  std::vector<Case> engine = {
      {"train" + tiny + " --weights " + in + "/truncated.pt", 1, "truncated.pt", 2048},
      {"train" + tiny + " --data idx:" + in + "/idx_short_header", 1, "truncated header", 2048},
      {"train" + tiny + " --data cifar:" + in + "/cifar", 1, "data_batch_1.bin", 2048},
      {"train" + tiny + " --data imagefolder:" + in + "/folder --strict", 1, "not a regular file", 2048},
      {"align --a device=cpu --b device=cpu --out " + h.root.string() + "/al" + align_tiny + " --weights " + in +
           "/truncated.pt", 3, "run A (device=cpu) failed", 2048},
  };
  cases.insert(cases.end(), engine.begin(), engine.end());
#endif
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const Outcome o = run_bounded(c.args, h.root);
    EXPECT_EQ(o.exit_code, c.exit_code) << o.output;
    EXPECT_TRUE(contains(o.output, c.message)) << "expected '" << c.message << "' in\n" << o.output;
    const bool listed = c.args.rfind("migrate", 0) == 0;  // in the report
    EXPECT_TRUE(contains(o.output, "crosstrain: error: ") || listed) << o.output;
    EXPECT_FALSE(contains(o.output, "frame #")) << o.output;
    EXPECT_FALSE(contains(o.output, "DIFFER")) << o.output;  // an unread input is no difference
    EXPECT_GT(o.max_rss_mib, 0);
    EXPECT_LE(o.max_rss_mib, c.max_rss_mib) << "MiB";
  }
  EXPECT_EQ(snapshot(h.outside), before);
  EXPECT_EQ(read(h.outside / "keep.py"), "import torch\nx = torch.zeros(1).cuda()\n");
}

#ifdef CROSSTRAIN_CLI_WITH_TORCH
// Weights that are a FIFO or /dev/zero: refused in one line before anything is read (a FIFO used
// to block, /dev/zero to be read until 8 GiB of RSS).
TEST(HostileInputs, WeightsThatAreNotRegularFilesAreRefused) {
  Hostile h;
  const std::string tiny = " --device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16 --batch-size 2"
                           " --steps 1 --warmup-steps 0 --threads 1 --no-progress";
  for (const char* name : {"fifo.pt", "zero.pt"}) {
    const Outcome o = run_bounded("train" + tiny + " --weights " + (h.in / name).string(), h.root, 20);
    EXPECT_EQ(o.exit_code, 1) << o.output;
    EXPECT_TRUE(contains(o.output, name)) << o.output;
    EXPECT_LE(o.max_rss_mib, 2048) << "MiB";
  }
}
#endif

// Records missing from a truncated IDX file are counted one by one, and the run goes on with the
// records that are whole.
TEST(HostileInputs, DroppedIdxRecordsAreCountedOneByOne) {
  Hostile h;
  const Outcome o =
      run_bounded("data-bench --data idx:" + h.in.string() + "/idx_short_labels --workers 1 --json -", h.root);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "\"skipped_at_open\": 6")) << o.output;
  EXPECT_TRUE(contains(o.output, "\"dataset_size\": 4")) << o.output;
}

// A disk that fills up: the command fails naming the reason, and a report that was there before
// is still whole (written to a temporary file and renamed, never truncated in place).
TEST(HostileInputs, AFullDiskFailsTheWriteAndKeepsThePreviousFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  Hostile h;
  const fs::path disk = h.root / "disk";
  fs::create_directories(disk);
  if (run_command("mount -t tmpfs -o size=2m tmpfs " + disk.string()).exit_code != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here";
  struct Unmount {
    fs::path dir;
    ~Unmount() { run_command("umount " + dir.string()); }
  } unmount{disk};
  const std::string old_report = "{\"previous\": true}\n";
  write(disk / "report.json", old_report);
  run_command("head -c 4000000 /dev/zero > " + (disk / "filler").string() + " 2>/dev/null");
  // A trace worth analysing: crosstrain's own format is any Chrome trace with operator events.
  write(h.in / "trace.json",
        "{\"traceEvents\": [{\"name\": \"aten::mm\", \"cat\": \"cpu_op\", \"ph\": \"X\", \"ts\": 1, \"dur\": 5, "
        "\"pid\": 1, \"tid\": 1}]}");
  const std::string big_report = h.in.string() + "/trace.json";
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : {Case{"make-imagefolder --out " + disk.string() + "/tree --train 200 --val 0 --size 256x256",
                             "No space left on device"},
                        Case{"migrate " + h.in.string() + "/py --out " + disk.string() + "/migrated",
                             "No space left on device"},
                        Case{"analyze " + big_report + " --json " + disk.string() + "/report.json",
                             "No space left on device"}}) {
    SCOPED_TRACE(c.args);
    const Outcome o = run_bounded(c.args, h.root);
    EXPECT_EQ(o.exit_code, 1) << o.output;
    EXPECT_TRUE(contains(o.output, c.message)) << o.output;
    EXPECT_EQ(read(disk / "report.json"), old_report);
  }
}
