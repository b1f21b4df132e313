// Whole runs over a directory tree: output modes, file selection, safety, reports.
#include "report/output.h"
#include "tools/migrate/migration_report.h"
#include "tools/migrate/migration_run.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace crosstrain::migrate;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

const std::string kTrain = "import torch\n\ndef step(x):\n    torch.backends.cudnn.benchmark = True\n    return x.cuda()\n";
const std::string kPlain = "import os\nprint(os.getcwd())\n";
const std::string kBroken = "def f(:\n    return x.cuda()\n";
const std::string kLatin1 = "s = '\xe9'\nx.cuda()\n";

class MigrationRun : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("crosstrain_migrate_run_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    src = root / "proj";
    spit(src / "train.py", kTrain);
    spit(src / "sub" / "plain.py", kPlain);
    spit(src / "broken.py", kBroken);
    spit(src / "latin.py", kLatin1);
    spit(src / "csrc" / "kernel.cu", "__global__ void k() {}\n");
    spit(src / "README.txt", "notes\n");
    spit(src / ".git" / "hook.py", "x.cuda()\n");
    spit(src / "__pycache__" / "c.py", "x.cuda()\n");
  }
  void TearDown() override { fs::remove_all(root); }
  MigrateOptions options(Target target = Target::DeviceAgnostic) {
    MigrateOptions o;
    o.inputs = {src.string()};
    o.target = target;
    o.jobs = 2;
    return o;
  }
  fs::path root, src;
};

TEST_F(MigrationRun, CopyModeWritesAMigratedTreeAndLeavesTheInputAlone) {
  MigrateOptions o = options(Target::Cpu);
  o.out_dir = (root / "out").string();
  MigrationSummary s = run_migration(o);
  EXPECT_EQ(s.files_scanned, 5u);  // 4 Python files + the .cu source
  EXPECT_EQ(s.files_migrated, 1u);
  EXPECT_EQ(s.files_syntax_error, 1u);
  EXPECT_EQ(s.files_skipped, 1u);
  EXPECT_EQ(s.converted, 1u);
  EXPECT_EQ(s.left, 2u);  // cudnn setting + kernel.cu
  EXPECT_EQ(s.families.at("cudnn").left, 1u);
  EXPECT_EQ(s.families.at("device-placement").converted, 1u);

  EXPECT_EQ(slurp(root / "out" / "train.py"), "import torch\n\ndef step(x):\n    torch.backends.cudnn.benchmark = True\n"
                                               "    return x.to(\"cpu\")\n");
  EXPECT_EQ(slurp(root / "out" / "sub" / "plain.py"), kPlain);
  EXPECT_EQ(slurp(root / "out" / "broken.py"), kBroken);  // left unchanged, not half-rewritten
  EXPECT_EQ(slurp(root / "out" / "latin.py"), kLatin1);
  EXPECT_EQ(slurp(root / "out" / "README.txt"), "notes\n");
  EXPECT_FALSE(fs::exists(root / "out" / ".git"));
  EXPECT_FALSE(fs::exists(root / "out" / "__pycache__"));
  EXPECT_EQ(slurp(src / "train.py"), kTrain);

  // Second run over the migrated copy: nothing more to convert.
  MigrateOptions again = options(Target::Cpu);
  again.inputs = {(root / "out").string()};
  again.check = true;
  MigrationSummary s2 = run_migration(again);
  EXPECT_EQ(s2.converted, 0u);
  EXPECT_EQ(s2.files_migrated, 0u);
}

TEST_F(MigrationRun, CheckWritesNothingAndSaysCudaRemains) {
  MigrateOptions o = options();
  o.check = true;
  MigrationSummary s = run_migration(o);
  EXPECT_TRUE(s.cuda_code_remains());
  EXPECT_EQ(s.mode, "check");
  EXPECT_EQ(slurp(src / "train.py"), kTrain);
  EXPECT_FALSE(fs::exists(fs::path(kDefaultOutDir)));

  fs::remove(src / "broken.py");
  fs::remove(src / "csrc" / "kernel.cu");
  spit(src / "train.py", "import torch\nx = torch.ones(2).to('cpu')\ntorch.backends.cudnn.benchmark = True\n");
  spit(src / "latin.py", "x = 1\n");
  MigrationSummary clean = run_migration(o);
  EXPECT_EQ(clean.left, 1u);  // the cudnn setting: reported, but other devices ignore it
  EXPECT_FALSE(clean.cuda_code_remains());
  spit(src / "latin.py", "import apex\n");
  EXPECT_TRUE(run_migration(o).cuda_code_remains());
}

TEST_F(MigrationRun, InPlaceWithBackupKeepsOriginalAndPermissions) {
  fs::permissions(src / "train.py", fs::perms::owner_all | fs::perms::group_read);
  MigrateOptions o = options(Target::Npu);
  o.in_place = true;
  o.backup = true;
  MigrationSummary s = run_migration(o);
  EXPECT_EQ(s.files_migrated, 1u);
  EXPECT_EQ(slurp(src / "train.py.orig"), kTrain);
  EXPECT_NE(slurp(src / "train.py").find("return x.to(\"npu\")"), std::string::npos);
  EXPECT_EQ(fs::status(src / "train.py").permissions(), fs::perms::owner_all | fs::perms::group_read);
  EXPECT_FALSE(fs::exists(src / "sub" / "plain.py.orig"));  // unchanged files get no backup
  EXPECT_EQ(slurp(src / "broken.py"), kBroken);
  for (const auto& e : fs::recursive_directory_iterator(src))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "temp file left: " << e.path();
}

TEST_F(MigrationRun, InPlaceWithoutBackupNeedsACleanGitTree) {
  MigrateOptions o = options();
  o.in_place = true;
  EXPECT_THROW(run_migration(o), std::invalid_argument);  // not a git work tree
  EXPECT_EQ(slurp(src / "train.py"), kTrain);

  if (std::system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "git not installed";
  std::string git = "git -C '" + src.string() + "' -c user.email=t@t -c user.name=t ";
  ASSERT_EQ(std::system((git + "init -q && " + git + "add -A && " + git + "commit -qm init").c_str()), 0);
  spit(src / "untracked.py", "x = 1\n");
  EXPECT_THROW(run_migration(o), std::invalid_argument);  // untracked file: git could not restore it
  fs::remove(src / "untracked.py");
  MigrationSummary s = run_migration(o);
  EXPECT_EQ(s.files_migrated, 1u);
  EXPECT_FALSE(fs::exists(src / "train.py.orig"));
}

// A file git ignores (a generated module, a virtualenv inside the project) has no committed copy:
// in place without --backup is refused before anything is written, naming it.
TEST_F(MigrationRun, InPlaceWithoutBackupRefusesFilesGitIgnores) {
  if (std::system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "git not installed";
  spit(src / "venv" / "lib" / "site.py", "x.cuda()\n");
  spit(src / "gen.py", "y.cuda()\n");
  spit(src / ".gitignore", "venv/\ngen.py\n");
  std::string git = "git -C '" + src.string() + "' -c user.email=t@t -c user.name=t ";
  ASSERT_EQ(std::system((git + "init -q && " + git + "add -A && " + git + "commit -qm init").c_str()), 0);
  MigrateOptions o = options();
  o.in_place = true;
  try {
    run_migration(o);
    ADD_FAILURE() << "in place over ignored files was not refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("git ignores"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(src / "train.py"), kTrain);  // nothing written
  EXPECT_EQ(slurp(src / "gen.py"), "y.cuda()\n");
  fs::remove_all(src / "venv");
  EXPECT_THROW(run_migration(o), std::invalid_argument);  // gen.py alone
  fs::remove(src / "gen.py");
  MigrationSummary s = run_migration(o);  // ignored names with no file behind them are no obstacle
  EXPECT_EQ(s.files_migrated, 1u);
}

// --backup never replaces an existing FILE.orig (an earlier run's backup holds the only original).
TEST_F(MigrationRun, BackupNeverOverwritesAnExistingOrig) {
  spit(src / "train.py.orig", "the user's own notes\n");
  MigrateOptions o = options(Target::Cpu);
  o.in_place = true;
  o.backup = true;
  EXPECT_THROW(run_migration(o), std::invalid_argument);
  EXPECT_EQ(slurp(src / "train.py.orig"), "the user's own notes\n");
  EXPECT_EQ(slurp(src / "train.py"), kTrain);
  fs::remove(src / "train.py.orig");
  EXPECT_EQ(run_migration(o).files_migrated, 1u);
  EXPECT_EQ(slurp(src / "train.py.orig"), kTrain);
  EXPECT_THROW(run_migration(o), std::invalid_argument);  // a second run would replace the original
  EXPECT_EQ(slurp(src / "train.py.orig"), kTrain);
}

// Two inputs that would land on one path under --out (files or folders of the same name) are
// refused before anything is copied.
TEST_F(MigrationRun, InputsWhoseCopiesCollideAreRefused) {
  spit(root / "a" / "train.py", "a.cuda()\n");
  spit(root / "b" / "train.py", "b.cuda()\n");
  spit(root / "e1" / "pkg" / "m.py", "x = 1\n");
  spit(root / "e2" / "pkg" / "m.py", "x = 2\n");
  for (const auto& inputs : std::vector<std::vector<std::string>>{
           {(root / "a" / "train.py").string(), (root / "b" / "train.py").string()},
           {(root / "e1" / "pkg").string(), (root / "e2" / "pkg").string()}}) {
    MigrateOptions o = options();
    o.inputs = inputs;
    o.out_dir = (root / "copies").string();
    try {
      run_migration(o);
      ADD_FAILURE() << "colliding copies were not refused: " << inputs[0];
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("would both be copied to"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(root / "copies"));
  }
  MigrateOptions apart = options();
  apart.inputs = {(root / "a" / "train.py").string(), (root / "e1" / "pkg").string()};
  apart.out_dir = (root / "copies").string();
  EXPECT_NO_THROW(run_migration(apart));
}

TEST_F(MigrationRun, UnreadableFileIsSkippedNotFatal) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files regardless of permissions";
  fs::permissions(src / "sub" / "plain.py", fs::perms::none);
  MigrateOptions o = options();
  o.check = true;
  MigrationSummary s = run_migration(o);
  EXPECT_EQ(s.files_skipped, 2u);  // latin.py and the unreadable one
  fs::permissions(src / "sub" / "plain.py", fs::perms::owner_all);
}

TEST_F(MigrationRun, InPlaceLeavesSymlinksAlone) {
  fs::create_symlink(src / "train.py", src / "link.py");
  MigrateOptions o = options(Target::Cpu);
  o.in_place = true;
  o.backup = true;
  run_migration(o);
  EXPECT_TRUE(fs::is_symlink(src / "link.py"));
  EXPECT_NE(slurp(src / "link.py").find(".to(\"cpu\")"), std::string::npos);  // through the real file
}

// The copy never goes into the tree it is made from, nor around it.
TEST_F(MigrationRun, OutInsideOrAboveTheInputIsRefused) {
  for (const fs::path& out : {src / "migrated", src / "sub" / "deeper", root, src / ".."}) {
    MigrateOptions o = options();
    o.out_dir = out.string();
    EXPECT_THROW(run_migration(o), std::invalid_argument) << out;
  }
  MigrateOptions file_input = options();  // a file input: only its own folder would overwrite it
  file_input.inputs = {(src / "train.py").string()};
  file_input.out_dir = src.string();
  EXPECT_THROW(run_migration(file_input), std::invalid_argument);
  EXPECT_EQ(slurp(src / "train.py"), kTrain);
  // A file's copy goes to --out/NAME: a folder next to it (or below its folder) is fine.
  file_input.out_dir = (src / "migrated_copy").string();
  EXPECT_NO_THROW(run_migration(file_input));
  EXPECT_EQ(slurp(src / "train.py"), kTrain);
  EXPECT_TRUE(fs::exists(src / "migrated_copy" / "train.py"));
  fs::remove_all(src / "migrated_copy");
  MigrateOptions beside = options();
  beside.out_dir = (root / "out").string();
  EXPECT_NO_THROW(run_migration(beside));
}

// A link inside the input that leads out of it is not followed (its target is neither read nor copied).
TEST_F(MigrationRun, LinksOutOfTheTreeAreNotFollowed) {
  spit(root / "secret" / "key.py", "x.cuda()  # outside\n");
  fs::create_symlink(root / "secret" / "key.py", src / "key.py");
  fs::create_symlink(src / "train.py", src / "inside.py");
  MigrateOptions o = options(Target::Cpu);
  o.out_dir = (root / "out").string();
  MigrationSummary s = run_migration(o);
  EXPECT_FALSE(fs::exists(root / "out" / "key.py"));
  EXPECT_TRUE(fs::exists(root / "out" / "inside.py"));
  for (const auto& f : s.files) EXPECT_EQ(f.result.path.find("key.py"), std::string::npos) << f.result.path;
}

// A link already in the output tree is replaced or refused, never written through.
TEST_F(MigrationRun, NeverWritesThroughLinksInTheOutput) {
  fs::path out = root / "out";
  spit(root / "victim.py", "untouched\n");
  spit(root / "victim_dir" / "keep.txt", "untouched\n");
  fs::create_directories(out);
  fs::create_symlink(root / "victim.py", out / "train.py");
  MigrateOptions o = options(Target::Cpu);
  o.out_dir = out.string();
  run_migration(o);
  EXPECT_EQ(slurp(root / "victim.py"), "untouched\n");
  EXPECT_FALSE(fs::is_symlink(out / "train.py"));
  EXPECT_NE(slurp(out / "train.py").find(".to(\"cpu\")"), std::string::npos);
  // A linked directory in the output: the run fails instead of writing into the link's target.
  fs::remove_all(out);
  fs::create_directories(out);
  fs::create_symlink(root / "victim_dir", out / "sub");
  EXPECT_THROW(run_migration(o), std::runtime_error);
  EXPECT_FALSE(fs::exists(root / "victim_dir" / "plain.py"));
}

// --in-place with a link given as the input leaves the link a link (and its target alone).
TEST_F(MigrationRun, InPlaceKeepsALinkGivenAsInput) {
  fs::create_symlink(src / "train.py", root / "link.py");
  MigrateOptions o = options(Target::Cpu);
  o.inputs = {(root / "link.py").string()};
  o.in_place = true;
  o.backup = true;
  MigrationSummary s = run_migration(o);
  EXPECT_TRUE(fs::is_symlink(root / "link.py"));
  ASSERT_EQ(s.files.size(), 1u);
  EXPECT_NE(s.files[0].result.detail.find("symbolic link"), std::string::npos);
}

// A FIFO given as input is reported at once, not waited on.
TEST_F(MigrationRun, FifoInputDoesNotBlock) {
  fs::path fifo = root / "pipe.py";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  MigrateOptions o = options();
  o.inputs = {fifo.string()};
  o.check = true;
  MigrationSummary s = run_migration(o);
  ASSERT_EQ(s.files.size(), 1u);
  EXPECT_EQ(s.files[0].result.status, FileStatus::ReadError);
  EXPECT_NE(s.files[0].result.detail.find("not a regular file"), std::string::npos);
}

// Files above the size limit are skipped and fail --check; at the limit they are migrated.
TEST_F(MigrationRun, SizeLimitSkipsLargerFiles) {
  MigrateOptions o = options();
  o.inputs = {(src / "train.py").string()};
  o.check = true;
  o.max_file_bytes = kTrain.size();
  MigrationSummary at = run_migration(o);
  ASSERT_EQ(at.files.size(), 1u);
  EXPECT_EQ(at.files[0].result.status, FileStatus::Migrated);  // check mode: planned, not written
  EXPECT_GT(at.converted, 0u);
  o.max_file_bytes = kTrain.size() - 1;
  MigrationSummary over = run_migration(o);
  ASSERT_EQ(over.files.size(), 1u);
  EXPECT_EQ(over.files[0].result.status, FileStatus::TooLarge);
  EXPECT_NE(over.files[0].result.detail.find("--max-file-size"), std::string::npos);
  EXPECT_TRUE(over.cuda_code_remains());
  EXPECT_EQ(over.converted, 0u);
}

TEST_F(MigrationRun, BadOptionsAreCallerMistakes) {
  MigrateOptions o = options();
  o.check = true;
  o.in_place = true;
  EXPECT_THROW(run_migration(o), std::invalid_argument);
  MigrateOptions missing = options();
  missing.inputs = {(root / "nope").string()};
  missing.check = true;
  EXPECT_THROW(run_migration(missing), std::invalid_argument);
  MigrateOptions onto_itself = options();
  onto_itself.out_dir = src.string();
  EXPECT_THROW(run_migration(onto_itself), std::invalid_argument);
  MigrateOptions backup_alone = options();
  backup_alone.backup = true;
  EXPECT_THROW(run_migration(backup_alone), std::invalid_argument);
}

TEST_F(MigrationRun, ReportFilesHaveTheDocumentedColumns) {
  MigrateOptions o = options();
  o.check = true;
  o.keep_text = true;
  MigrationSummary s = run_migration(o);
  fs::path dir = root / "report";
  write_report_dir(s, dir.string());

  std::string changes = slurp(dir / "change_list.csv");
  EXPECT_EQ(changes.substr(0, changes.find('\n')), "file,start_line,end_line,operation,rule,message");
  EXPECT_NE(changes.find("train.py,5,5,replace,tensor.cuda,"), std::string::npos) << changes;
  EXPECT_NE(changes.find(",insert,device-definition,"), std::string::npos) << changes;
  std::string unsupported = slurp(dir / "unsupported.csv");
  EXPECT_EQ(unsupported.substr(0, unsupported.find('\n')), "file,line,api,advice,rule");
  EXPECT_NE(unsupported.find("train.py,4,torch.backends.cudnn.benchmark,"), std::string::npos) << unsupported;
  EXPECT_NE(unsupported.find("kernel.cu,1,kernel.cu,"), std::string::npos) << unsupported;

  auto doc = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(doc["schema_version"], crosstrain::report::kJsonSchemaVersion);
  EXPECT_EQ(doc["totals"]["references_converted"], 1);
  EXPECT_EQ(doc["totals"]["references_left"], 2);
  EXPECT_DOUBLE_EQ(doc["totals"]["conversion_percent"].get<double>(), 100.0 / 3.0);
  EXPECT_EQ(doc["totals"]["lines_changed"], 2);  // the .cuda() line + the inserted definition
  EXPECT_EQ(doc["families"]["cudnn"]["left"], 1);

  std::string diff = migration_diff(s);
  EXPECT_NE(diff.find("+    return x.to(_accel_device)\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find("-    return x.cuda()\n"), std::string::npos) << diff;

  std::string console = console_summary(s);
  EXPECT_NE(console.find("33.3%"), std::string::npos) << console;
  EXPECT_NE(console.find("syntax error"), std::string::npos) << console;
}

// A file that cannot be read as text is never a pass; one that declares its encoding is migrated
// and written back in it, and its diff is UTF-8.
TEST_F(MigrationRun, UndecodableFilesFailTheCheckAndDeclaredEncodingsRoundTrip) {
  fs::remove(src / "broken.py");
  fs::remove(src / "train.py");
  MigrateOptions check = options(Target::Cpu);
  check.check = true;
  MigrationSummary refused = run_migration(check);  // latin.py: latin-1 bytes, no coding line
  EXPECT_TRUE(refused.cuda_code_remains());
  EXPECT_EQ(refused.files_unreadable, 1u);

  spit(src / "latin.py", "# coding: latin-1\n" + kLatin1);
  MigrateOptions copy = options(Target::Cpu);
  copy.out_dir = (root / "out").string();
  copy.keep_text = true;
  MigrationSummary s = run_migration(copy);
  EXPECT_EQ(s.files_migrated, 1u);
  EXPECT_EQ(slurp(root / "out" / "latin.py"), "# coding: latin-1\ns = '\xe9'\nx.to(\"cpu\")\n");
  std::string diff = migration_diff(s);
  EXPECT_NE(diff.find(" s = '\xc3\xa9'\n"), std::string::npos) << diff;  // UTF-8 context line
  check.inputs = {(root / "out" / "latin.py").string()};
  EXPECT_FALSE(run_migration(check).cuda_code_remains());
}

}  // namespace
