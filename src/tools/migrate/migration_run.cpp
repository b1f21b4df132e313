#include "tools/migrate/migration_run.h"

#include "tools/migrate/line_endings.h"

#include "tools/migrate/safe_files.h"

#include "report/input_file.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <filesystem>
#include <unistd.h>

namespace crosstrain::migrate {

namespace fs = std::filesystem;

double MigrationSummary::conversion_fraction() const {
  size_t total = converted + left;
  return total == 0 ? 1.0 : static_cast<double>(converted) / static_cast<double>(total);
}

bool MigrationSummary::cuda_code_remains() const {
  return converted + (left - left_harmless) > 0 || files_syntax_error > 0 || files_rewrite_failed > 0 ||
         files_too_large > 0 || files_unreadable > 0;
}

namespace {

struct SourceFile {
  fs::path path;        // on disk
  std::string label;    // for reports: the input as given, joined with the relative path
  fs::path relative;    // below the output root
  bool python = true;   // false: a CUDA source (.cu/.cuh), reported only
  bool copy_only = false;  // another file, copied verbatim in copy mode
  std::string skip;        // why it is reported and left alone (a link in-place, not a regular file)
};

bool skipped_directory(const fs::path& p) {
  std::string name = p.filename().string();
  return (name.size() > 1 && name[0] == '.') || name == "__pycache__";
}

std::string run_git(const fs::path& dir, const std::string& args, int& status) {
  std::string cmd = "git -C '" + dir.string() + "' " + args + " 2>/dev/null";
  std::string out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) {
    status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  status = ::pclose(pipe);
  return out;
}

// In-place without backups is allowed only where git can restore every file we might touch.
// Returns the ignored paths under the inputs (git status does not list them): a file among them
// has no committed copy either (refuse_ignored).
std::vector<fs::path> require_clean_git(const std::vector<std::string>& inputs) {
  std::vector<fs::path> ignored;
  for (const auto& input : inputs) {
    if (input.find('\'') != std::string::npos) throw std::invalid_argument("--in-place: unusual path, use --backup");
    fs::path p(input);
    fs::path dir = fs::is_directory(p) ? p : (p.has_parent_path() ? p.parent_path() : fs::path("."));
    int status = 0;
    std::string inside = run_git(dir, "rev-parse --is-inside-work-tree", status);
    if (status != 0 || inside.rfind("true", 0) != 0)
      throw std::invalid_argument("--in-place needs --backup, or inputs in a clean git work tree ('" + input +
                                  "' is not in one)");
    std::string pathspec = fs::is_directory(p) ? "." : p.filename().string();
    std::string dirty = run_git(dir, "status --porcelain -- '" + pathspec + "'", status);
    if (status != 0 || !dirty.empty())
      throw std::invalid_argument("--in-place needs --backup, or a clean git work tree ('" + input +
                                  "' has uncommitted or untracked changes)");
    // Paths relative to `dir`, NUL-separated; an ignored folder once, with a trailing '/'.
    std::string listed =
        run_git(dir, "ls-files -z --others --ignored --exclude-standard --directory -- '" + pathspec + "'", status);
    if (status != 0) throw std::invalid_argument("--in-place: cannot ask git which files it ignores under '" + input + "'");
    for (size_t at = 0; at < listed.size();) {
      const size_t end = std::min(listed.find('\0', at), listed.size());
      std::string entry = listed.substr(at, end - at);
      if (!entry.empty() && entry.back() == '/') entry.pop_back();
      if (!entry.empty()) ignored.push_back(fs::weakly_canonical(dir / entry));
      at = end + 1;
    }
  }
  return ignored;
}

// A file git ignores has no committed copy to restore: rewriting it in place needs --backup.
void refuse_ignored(const std::vector<SourceFile>& files, const std::vector<fs::path>& ignored) {
  if (ignored.empty()) return;
  for (const auto& f : files) {
    if (!f.python || !f.skip.empty()) continue;
    const fs::path real = fs::weakly_canonical(f.path);
    for (const auto& i : ignored)
      if (real == i || report::path_within(real, i))
        throw std::invalid_argument("--in-place needs --backup: git ignores " + f.label +
                                    ", so it has no committed copy to restore");
  }
}

// --backup keeps each changed file as FILE.orig; one that exists already (an earlier run's
// backup, or the user's own file) is never overwritten.
void refuse_existing_backups(const std::vector<SourceFile>& files) {
  std::error_code ec;
  for (const auto& f : files) {
    if (!f.python || !f.skip.empty()) continue;
    fs::path backup = f.path;
    backup += ".orig";
    if (fs::exists(fs::symlink_status(backup, ec)))
      throw std::invalid_argument("--backup would overwrite " + backup.generic_string() +
                                  ": move the earlier backups away first");
  }
}

// Two inputs whose copies would land on the same path under --out (two files of one name, two
// folders of one name): the second would replace the first.
void refuse_colliding_copies(const std::vector<SourceFile>& files, const fs::path& out_dir) {
  std::map<fs::path, const SourceFile*> seen;
  for (const auto& f : files) {
    if (!f.skip.empty()) continue;  // never written
    auto [it, fresh] = seen.emplace(f.relative, &f);
    if (!fresh)
      throw std::invalid_argument("the inputs " + it->second->label + " and " + f.label + " would both be copied to " +
                                  (out_dir / f.relative).generic_string() +
                                  ": migrate them in separate runs or to separate --out folders");
  }
}

std::vector<SourceFile> collect(const MigrateOptions& options, const fs::path& out_dir) {
  std::vector<SourceFile> files;
  const bool single = options.inputs.size() == 1;
  fs::path out_canonical = out_dir.empty() ? fs::path() : fs::weakly_canonical(out_dir);
  for (const auto& input : options.inputs) {
    fs::path root = fs::path(input).lexically_normal();
    if (root.filename().empty() && root.has_parent_path()) root = root.parent_path();  // "dir/"
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(root, ec))) throw std::invalid_argument("no such file or directory: " + input);
    // The copy must not land in the tree it is made from, nor around it (it would overwrite or mix
    // with the inputs).
    if (!out_canonical.empty()) {
      if (fs::is_directory(root, ec)) {
        if (report::path_within(out_dir, root))
          throw std::invalid_argument("--out " + out_dir.string() + " lies inside the input " + input +
                                      ": choose a directory outside it (or --in-place)");
      } else {
        // A single file is copied to --out/NAME: only its own folder as --out would overwrite it.
        const fs::path parent = root.has_parent_path() ? root.parent_path() : fs::path(".");
        if (fs::weakly_canonical(out_dir, ec) == fs::weakly_canonical(parent, ec))
          throw std::invalid_argument("--out " + out_dir.string() + " is the folder of the input " + input +
                                      ": the copy would overwrite it; choose another directory (or --in-place)");
      }
      if (report::path_within(root, out_dir))
        throw std::invalid_argument("the input " + input + " lies inside --out " + out_dir.string() +
                                    ": choose an output directory that does not contain it");
    }
    auto classify = [](const fs::path& p, SourceFile& f) {
      std::string ext = p.extension().string();
      if (ext == ".py") return true;
      if (ext == ".cu" || ext == ".cuh") {
        f.python = false;
        return true;
      }
      f.copy_only = true;
      return false;
    };
    if (!fs::is_directory(root, ec)) {
      SourceFile f{root, root.generic_string(), root.filename(), true, false, {}};
      classify(root, f);
      // Rewriting a link in place would replace it by a regular file; a FIFO or device would block.
      if (options.in_place && fs::is_symlink(fs::symlink_status(root, ec)))
        f.skip = "a symbolic link: left alone (migrate its target)";
      else if (!fs::is_regular_file(root, ec))
        f.skip = "not a regular file: skipped";
      if (f.copy_only && !options.check && !options.in_place) files.push_back(f);
      else if (!f.copy_only) files.push_back(f);
      continue;
    }
    // One input directory is the output root; several keep their names apart below it.
    fs::path prefix = single ? fs::path() : fs::weakly_canonical(root).filename();
    auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
    if (ec) throw std::runtime_error("cannot list " + input + ": " + ec.message());
    for (auto end = fs::recursive_directory_iterator(); it != end; it.increment(ec)) {
      if (ec) throw std::runtime_error("cannot list " + input + ": " + ec.message());
      const auto& entry = *it;
      if (entry.is_directory(ec)) {
        if (skipped_directory(entry.path()) ||
            (!out_canonical.empty() && fs::weakly_canonical(entry.path()) == out_canonical))
          it.disable_recursion_pending();
        continue;
      }
      // Rewriting in place through a symlink would replace the link with a file: leave links alone.
      if (options.in_place && entry.is_symlink(ec)) continue;
      if (!entry.is_regular_file(ec)) {
        // A FIFO, device, dangling link or link loop named like source code is never opened, but
        // listed as skipped: --check cannot say the tree is clean without reading it.
        SourceFile f{entry.path(), entry.path().lexically_normal().generic_string(), {}, true, false, {}};
        if (classify(entry.path(), f)) {
          f.skip = "not a regular file: skipped";
          files.push_back(std::move(f));
        }
        continue;
      }
      // A link that leads out of the input tree is not followed.
      if (entry.is_symlink(ec) && !report::path_within(entry.path(), root)) continue;
      fs::path rel = entry.path().lexically_relative(root);
      SourceFile f{entry.path(), (root / rel).lexically_normal().generic_string(), prefix / rel, true, false, {}};
      classify(entry.path(), f);
      if (f.copy_only && (options.check || options.in_place)) continue;
      files.push_back(std::move(f));
    }
  }
  std::sort(files.begin(), files.end(), [](const SourceFile& a, const SourceFile& b) { return a.label < b.label; });
  return files;
}

}  // namespace

MigrationSummary run_migration(const MigrateOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  if (options.inputs.empty()) throw std::invalid_argument("no input paths");
  int modes = (options.check ? 1 : 0) + (options.in_place ? 1 : 0) + (!options.out_dir.empty() ? 1 : 0);
  if (modes > 1) throw std::invalid_argument("--check, --in-place and --out exclude each other");
  if (options.backup && !options.in_place) throw std::invalid_argument("--backup only applies to --in-place");

  MigrationSummary summary;
  summary.target = options.target;
  summary.mode = options.check ? "check" : options.in_place ? "in-place" : "copy";
  fs::path out_dir;
  if (summary.mode == "copy") {
    out_dir = options.out_dir.empty() ? fs::path(kDefaultOutDir) : fs::path(options.out_dir);
    summary.out_dir = out_dir.generic_string();
  }
  std::vector<fs::path> ignored;
  if (options.in_place && !options.backup) ignored = require_clean_git(options.inputs);

  std::vector<SourceFile> files = collect(options, out_dir);
  // Everything that could lose a file is refused before the first one is written.
  if (options.in_place && !options.backup) refuse_ignored(files, ignored);
  if (options.in_place && options.backup) refuse_existing_backups(files);
  if (summary.mode == "copy") refuse_colliding_copies(files, out_dir);
  std::vector<MigratedFile> results(files.size());
  std::vector<std::string> errors(files.size());
  std::atomic<size_t> next{0}, done{0};

  auto work = [&]() {
    for (size_t i = next++; i < files.size(); i = next++) {
      const SourceFile& f = files[i];
      MigratedFile& r = results[i];
      try {
        fs::path target_path = summary.mode == "copy" ? out_dir / f.relative : f.path;
        if (!f.skip.empty()) {
          r.result.path = f.label;
          r.result.status = FileStatus::ReadError;
          r.result.detail = f.skip;
        } else if (f.copy_only) {
          make_real_directories(out_dir, f.relative.parent_path());
          write_atomic(target_path, read_regular_file(f.path, options.max_file_bytes), f.path);
          r.output_path = target_path.generic_string();
          r.result.path = f.label;
          r.result.detail = "copied";
        } else {
          std::string source;
          try {
            source = read_regular_file(f.path, options.max_file_bytes);
          } catch (const FileTooLarge& e) {
            r.result.path = f.label;
            r.result.status = FileStatus::TooLarge;
            r.result.detail = std::string(e.what()) + ": skipped";
            ++done;
            continue;
          } catch (const std::runtime_error& e) {
            r.result.path = f.label;
            r.result.status = FileStatus::ReadError;
            r.result.detail = std::string(e.what()) + ": skipped";
            ++done;
            continue;
          }
          r.lines = line_breaks(source);
          if (f.python) {
            r.result = migrate_source(f.label, source, options.target);
          } else {
            r.result.path = f.label;
            Finding finding;
            finding.rule = &rule_by_id("cuda-extension");
            finding.line = 1;
            finding.api = f.path.filename().string();
            finding.advice = std::string(finding.rule->per_target[static_cast<size_t>(options.target)]);
            r.result.findings.push_back(finding);
          }
          bool changed = r.result.status == FileStatus::Migrated;
          if (summary.mode == "copy") {
            make_real_directories(out_dir, f.relative.parent_path());
            write_atomic(target_path, changed ? r.result.bytes_to_write() : source, f.path);
            r.output_path = target_path.generic_string();
          } else if (summary.mode == "in-place" && changed) {
            if (options.backup) {
              fs::path backup = f.path;
              backup += ".orig";
              write_atomic(backup, source, f.path);
            }
            write_atomic(f.path, r.result.bytes_to_write(), f.path);
            r.output_path = f.path.generic_string();
          }
          // The diff is of the text the changes' offsets refer to: the decoded one.
          if (options.keep_text) r.original = r.result.encoding.empty() ? std::move(source) : std::move(r.result.decoded);
          else r.result.migrated.clear();
          r.result.encoded.clear();
          r.result.decoded.clear();
        }
      } catch (const std::exception& e) {
        errors[i] = f.label + ": " + e.what();
      }
      ++done;
    }
  };
  unsigned jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<size_t>(jobs, std::max<size_t>(1, files.size())));
  // With a progress callback the calling thread only reports; otherwise it works too.
  std::vector<std::thread> workers;
  for (unsigned j = options.progress ? 0 : 1; j < jobs; ++j) workers.emplace_back(work);
  if (options.progress) {
    while (done < files.size()) {
      options.progress(done, files.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  } else {
    work();
  }
  for (auto& w : workers) w.join();
  if (options.progress) options.progress(files.size(), files.size());

  for (size_t i = 0; i < files.size(); ++i) {
    if (!errors[i].empty()) throw std::runtime_error(errors[i]);
    MigratedFile& r = results[i];
    if (files[i].copy_only) {
      ++summary.files_copied;
      continue;
    }
    ++summary.files_scanned;
    switch (r.result.status) {
      case FileStatus::Migrated: ++summary.files_migrated; break;
      case FileStatus::SyntaxError: ++summary.files_syntax_error; break;
      case FileStatus::RewriteFailed: ++summary.files_rewrite_failed; break;
      case FileStatus::NotUtf8:  // never a pass: what cannot be read cannot be checked
      case FileStatus::ReadError:
        ++summary.files_skipped;
        ++summary.files_unreadable;
        break;
      case FileStatus::TooLarge:
        ++summary.files_skipped;
        ++summary.files_too_large;
        break;
      case FileStatus::Unchanged: break;
    }
    summary.lines_changed += r.result.lines_changed;
    for (const auto& c : r.result.changes) {
      if (c.inserted_line) continue;
      ++summary.converted;
      ++summary.families[std::string(c.rule->family)].converted;
    }
    for (const auto& f : r.result.findings) {
      ++summary.left;
      if (!finding_fails_check(*f.rule)) ++summary.left_harmless;
      ++summary.families[std::string(f.rule->family)].left;
    }
    summary.lines_scanned += r.lines;
    summary.files.push_back(std::move(r));
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

}  // namespace crosstrain::migrate
