// Diagnostic-only CUDA calls (memory summaries, device names, peak resets) whose value is printed,
// logged or dropped: guarded so the program keeps running off CUDA, and named in the report.
#include "tools/migrate/file_migration.h"
#include "tools/migrate/migration_report.h"
#include "tools/migrate/migration_run.h"

#include <gtest/gtest.h>

using namespace crosstrain::migrate;

namespace {

const std::string kDefinition =
    "_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\n";
const std::string kModule = "torch.get_device_module(_accel_device)";

std::string guarded(const std::string& module, const std::string& name, const std::string& args,
                    const std::string& fallback, char quote = '"') {
  const std::string q(1, quote);
  return "(" + module + "." + name + "(" + args + ") if hasattr(" + module + ", " + q + name + q + ") else " + fallback + ")";
}

std::string migrated(const std::string& src, Target target, FileMigration* out = nullptr) {
  FileMigration m = migrate_source("f.py", src, target);
  EXPECT_TRUE(m.findings.empty()) << m.findings[0].rule->id << " line " << m.findings[0].line;
  std::string text = m.status == FileStatus::Migrated ? m.migrated : src;
  FileMigration again = migrate_source("f.py", text, target);
  EXPECT_EQ(again.status, FileStatus::Unchanged) << again.migrated;
  if (out) *out = std::move(m);
  return text;
}

TEST(DiagnosticGuard, PrintedSummaryRunsOnTheDeviceModuleOrSaysNa) {
  EXPECT_EQ(migrated("import torch\nprint(torch.cuda.memory_summary())\n", Target::DeviceAgnostic),
            "import torch\n" + kDefinition + "print(" + guarded(kModule, "memory_summary", "", "\"n/a\"") + ")\n");
  EXPECT_EQ(migrated("import torch\nprint(torch.cuda.memory_summary())\n", Target::Cpu),
            "import torch\nprint(" + guarded("torch.cpu", "memory_summary", "", "\"n/a\"") + ")\n");
  // torch_npu has memory_summary: its own call; an index argument means the NPU of that index.
  EXPECT_EQ(migrated("import torch\nprint(torch.cuda.memory_summary(device=0, abbreviated=True))\n", Target::Npu),
            "import torch\nimport torch_npu\nprint(torch.npu.memory_summary(device=torch.device(\"npu\", 0), abbreviated=True))\n");
}

TEST(DiagnosticGuard, LogLinesFStringsAndStatements) {
  const std::string src =
      "import torch\n"
      "def report(log, step):\n"
      "    log.info(f\"step {step} on {torch.cuda.get_device_name(0)}\")\n"
      "    print('free/total', torch.cuda.mem_get_info(), str(torch.cuda.get_device_properties(0)))\n"
      "    torch.cuda.reset_peak_memory_stats()\n";
  std::string out = migrated(src, Target::DeviceAgnostic);
  // Inside a "-quoted f-string the guard quotes with ' (Python before 3.12 ends the f-string at ").
  EXPECT_NE(out.find("{" + guarded(kModule, "get_device_name", "0", "'n/a'", '\'') + "}\")"), std::string::npos) << out;
  EXPECT_NE(out.find("print('free/total', " + guarded(kModule, "mem_get_info", "", "\"n/a\"") + ", str(" +
                     guarded(kModule, "get_device_properties", "0", "\"n/a\"") + "))"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("    " + guarded(kModule, "reset_peak_memory_stats", "", "None") + "\n"), std::string::npos) << out;
}

TEST(DiagnosticGuard, ValuesTheProgramComputesWithStayFlagged) {
  const std::string src =
      "import torch\n"
      "props = torch.cuda.get_device_properties(0)\n"            // 2: kept in a name
      "print(f\"{torch.cuda.mem_get_info()[0] / 2**30:.1f}\")\n"  // 3: arithmetic on it
      "print(\"gpu: \" + torch.cuda.get_device_name())\n"         // 4: an operand
      "print(f\"{torch.cuda.utilization():>3}\")\n";              // 5: a format spec
  for (Target t : {Target::DeviceAgnostic, Target::Npu, Target::Cpu}) {
    FileMigration m = migrate_source("f.py", src, t);
    std::vector<size_t> lines;
    for (const auto& f : m.findings) lines.push_back(f.line);
    EXPECT_EQ(lines, (std::vector<size_t>{2, 3, 4, 5})) << target_name(t);
  }
}

TEST(DiagnosticGuard, ReportNamesEachGuardedCallWithItsLine) {
  MigrationSummary s;
  s.target = Target::DeviceAgnostic;
  MigratedFile f;
  migrated("import torch\nx = 1\nprint(torch.cuda.memory_summary())\ntorch.cuda.reset_peak_memory_stats()\n",
           Target::DeviceAgnostic, &f.result);
  s.files.push_back(std::move(f));
  std::string console = console_summary(s);
  EXPECT_NE(console.find("  guarded, line 3 `torch.cuda.memory_summary()`: runs where " + kModule +
                         " has memory_summary, else \"n/a\"\n"),
            std::string::npos)
      << console;
  EXPECT_NE(console.find("  guarded, line 4 `torch.cuda.reset_peak_memory_stats()`"), std::string::npos) << console;
}

}  // namespace
