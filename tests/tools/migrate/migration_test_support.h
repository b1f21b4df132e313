#pragma once
// What the migrate tests read off one file's migration: its findings as (rule id, line), whether
// --check would fail on it, and the text it leaves (the rewrite, or the input when unchanged);
// run_python runs such a text with the .venv Python on the CPU.
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "tools/migrate/file_migration.h"

namespace crosstrain::migrate::testing {

inline std::vector<std::pair<std::string, size_t>> flagged(const FileMigration& m) {
  std::vector<std::pair<std::string, size_t>> out;
  for (const auto& f : m.findings) out.emplace_back(f.rule->id, f.line);
  return out;
}

inline bool fails_check(const FileMigration& m) {
  for (const auto& f : m.findings)
    if (finding_fails_check(*f.rule)) return true;
  return false;
}

inline std::string output(const FileMigration& m, const std::string& input) {
  return m.status == FileStatus::Migrated ? m.migrated : input;
}

// Runs `source` as a script with CROSSTRAIN_PYTHON, no GPU visible, in a fresh temporary folder
// (its working directory); returns the exit status, with stdout and stderr in `out`.
inline int run_python(const std::string& source, std::string& out) {
  char dir[] = "/tmp/crosstrain_migrate_run_XXXXXX";
  if (!::mkdtemp(dir)) return -1;
  const std::string script = std::string(dir) + "/script.py";
  std::ofstream(script, std::ios::binary) << source;
  const std::string cmd = "cd '" + std::string(dir) + "' && CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1 '" CROSSTRAIN_PYTHON
                          "' -W ignore script.py 2>&1; status=$?; rm -rf '" + std::string(dir) + "'; exit $status";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace crosstrain::migrate::testing
