#pragma once
// `crosstrain migrate` as a library call: finds the Python files under the given paths, migrates
// each (in parallel), writes the results the way the options ask, and returns the data every
// report is rendered from.
//
// Output modes:
//   copy (default)  a migrated copy of each input tree under out_dir (all regular files copied,
//                   Python files rewritten); the inputs are not touched
//   in-place        rewritten files replace the originals; only with `backup` (FILE.orig kept) or
//                   when the inputs sit in a clean git work tree (git can restore them)
//   check           nothing is written
// Every write is atomic (temp file + rename) and keeps the original's permission bits.
#include "tools/migrate/file_migration.h"
#include "tools/migrate/rule_table.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace crosstrain::migrate {

inline constexpr size_t kDefaultMaxFileBytes = size_t{4} << 20;  // 4 MiB

struct MigrateOptions {
  std::vector<std::string> inputs;  // files or directories
  Target target = Target::DeviceAgnostic;
  std::string out_dir;              // copy mode; empty = kDefaultOutDir
  bool in_place = false;
  bool backup = false;              // with in_place
  bool check = false;
  bool keep_text = false;           // keep original and migrated text of each file (for --diff)
  unsigned jobs = 0;                // worker threads; 0 = one per hardware thread
  // Larger files are skipped (and fail --check): parsing and diffing take memory in proportion.
  size_t max_file_bytes = kDefaultMaxFileBytes;
  std::function<void(size_t done, size_t total)> progress;  // called from the calling thread
};

inline constexpr const char* kDefaultOutDir = "crosstrain-migrated";

struct FamilyCount {
  size_t converted = 0;
  size_t left = 0;
};

struct MigratedFile {
  FileMigration result;
  std::string output_path;  // where the migrated text went (copy/in-place), empty otherwise
  std::string original;     // only with keep_text
  size_t lines = 0;          // newline count of the original
};

struct MigrationSummary {
  Target target = Target::DeviceAgnostic;
  std::string mode;     // "copy", "in-place", "check"
  std::string out_dir;  // copy mode
  std::vector<MigratedFile> files;  // Python and CUDA source files, sorted by path
  size_t files_scanned = 0, files_migrated = 0, files_skipped = 0, files_syntax_error = 0,
         files_rewrite_failed = 0, files_copied = 0;
  size_t converted = 0, left = 0, lines_changed = 0, lines_scanned = 0;
  size_t files_too_large = 0;  // part of files_skipped: above max_file_bytes, so not checked
  size_t files_unreadable = 0;  // part of files_skipped: not a regular file, or reading failed
  size_t left_harmless = 0;  // part of `left` that does not fail --check (finding_fails_check)
  std::map<std::string, FamilyCount> families;
  double seconds = 0;

  // converted / (converted + left); 1 when there was nothing CUDA-specific.
  double conversion_fraction() const;
  // The --check verdict: something would be converted, a finding that matters remains, or some
  // file could not be checked.
  bool cuda_code_remains() const;
};

// Throws std::invalid_argument for unusable options (missing inputs, conflicting modes, in-place
// without a backup outside a clean git tree) and std::runtime_error when writing fails.
MigrationSummary run_migration(const MigrateOptions& options);

}  // namespace crosstrain::migrate
