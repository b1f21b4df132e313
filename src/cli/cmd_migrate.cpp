// `crosstrain migrate`: rewrite CUDA-specific PyTorch code for another device, with reports.
#include "cli/command.h"
#include "cli/flag_checks.h"
#include "report/envelope.h"
#include "report/output.h"
#include "report/terminal.h"
#include "tools/migrate/migration_report.h"
#include "tools/migrate/migration_run.h"

#include <filesystem>
#include <iostream>
#include <memory>

namespace crosstrain::cli {

namespace {

// The regular files a migration reads: the paths given, and those below the given folders.
std::vector<std::string> files_under(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    for (fs::recursive_directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) out.push_back(it->path().string());
  }
  return out;
}

struct MigrateArgs {
  std::vector<std::string> paths;
  std::string target = "device-agnostic";
  std::string out_dir;
  bool in_place = false;
  bool backup = false;
  bool check = false;
  bool diff = false;
  bool list_rules = false;
  std::string report_dir;
  std::string json_path;
  unsigned jobs = 0;
  size_t max_file_size = migrate::kDefaultMaxFileBytes;
};

void print_rules(std::ostream& out, migrate::Target target) {
  migrate::TemplateValues shown;  // placeholders for the matched code, as the table shows them
  shown.index = "i";
  shown.value = "<value>";
  for (const auto& rule : migrate::rule_table()) {
    std::string_view what = rule.per_target[static_cast<size_t>(target)];
    bool inserted = rule.id == "device-definition" || rule.id == "import-torch-npu";
    const char* action = rule.action == migrate::RuleAction::Report ? "report"
                         : !what.empty()                               ? "rewrite"
                         : inserted                                    ? "not used for this target"
                                                                       : "report (not provable for this target)";
    out << rule.id << "  [" << rule.family << ", " << action << "]\n"
        << "    matches: " << rule.matches << "\n";
    if (what == "{keep}")
      out << "    kept:    portable on this target, left as written\n";
    else if (!what.empty())
      out << (rule.action == migrate::RuleAction::Rewrite ? "    becomes: " : "    advice:  ")
          << migrate::expand_template(what, target, shown) << "\n";
    if (!rule.message.empty()) out << "    note:    " << rule.message << "\n";
  }
}

void run(const MigrateArgs& args) {
  migrate::MigrateOptions options;
  options.target = migrate::parse_target(args.target);
  if (args.list_rules) {
    print_rules(std::cout, options.target);
    return;
  }
  if (args.paths.empty()) throw std::invalid_argument("migrate needs at least one PATH");
  options.inputs = args.paths;
  options.out_dir = args.out_dir;
  options.in_place = args.in_place;
  options.backup = args.backup;
  options.check = args.check;
  options.keep_text = args.diff;
  options.jobs = args.jobs;
  options.max_file_bytes = args.max_file_size;

  const bool json_stdout = report::json_to_stdout(args.json_path);
  if (json_stdout && args.diff) throw std::invalid_argument("--diff and --json - both write to stdout");
  auto progress = std::make_shared<report::ProgressLine>();
  if (progress->enabled())
    options.progress = [progress](size_t done, size_t total) {
      progress->update("migrate: " + std::to_string(done) + "/" + std::to_string(total) + " files");
    };

  // The reports never replace a file read or written: the inputs before the run, the migrated
  // copies after it, before any report is written.
  std::vector<std::string> reports;
  if (!args.json_path.empty()) reports.push_back(args.json_path);
  if (!args.report_dir.empty())
    for (const char* name : {"change_list.csv", "unsupported.csv", "summary.json"})
      reports.push_back((std::filesystem::path(args.report_dir) / name).string());
  auto refuse = [&](const std::vector<std::string>& files) {
    for (const auto& r : reports) report::refuse_input_as_output(r == args.json_path ? "--json" : "--report", r, files);
  };
  refuse(files_under(args.paths));

  migrate::MigrationSummary summary = migrate::run_migration(options);
  progress->clear();
  std::vector<std::string> written;
  for (const auto& f : summary.files)
    if (!f.output_path.empty()) written.push_back(f.output_path);
  refuse(written);

  if (args.diff) std::cout << migrate::migration_diff(summary);
  if (!args.report_dir.empty()) migrate::write_report_dir(summary, args.report_dir);
  if (!args.json_path.empty()) report::write_json(report::with_envelope("migrate", migrate::summary_json(summary)), args.json_path);
  // The summary goes to stderr when stdout carries the diff or the JSON document.
  std::ostream& human = (args.diff || json_stdout) ? std::cerr : std::cout;
  human << migrate::console_summary(summary);
  if (args.check && summary.cuda_code_remains()) throw ExitStatus{1};
}

}  // namespace

void add_migrate_command(CLI::App& app) {
  auto args = std::make_shared<MigrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "migrate", "Rewrite CUDA-specific PyTorch Python code for another device and report what needs a human");
  cmd->add_option("paths", args->paths, "Python files or directories (recursing into *.py)")->type_name("PATH");
  cmd->add_option("--to", args->target, "Target: device-agnostic (torch.accelerator), npu (torch_npu) or cpu")
      ->type_name("TARGET")
      ->capture_default_str();
  cmd->add_option("--out", args->out_dir,
                  std::string("Write the migrated copy of the inputs here (default: ") + migrate::kDefaultOutDir + ")")
      ->type_name("DIR");
  cmd->add_flag("--in-place", args->in_place,
                "Rewrite files where they are (needs --backup, or the inputs in a clean git work tree)");
  cmd->add_flag("--backup", args->backup, "With --in-place: keep each changed file as FILE.orig");
  cmd->add_flag("--check", args->check, "Change nothing; exit 1 when CUDA-specific code remains (a CI gate)");
  cmd->add_flag("--diff", args->diff, "Print a unified diff of the changes to stdout");
  cmd->add_option("--report", args->report_dir, "Write change_list.csv, unsupported.csv and summary.json to DIR")
      ->type_name("DIR");
  cmd->add_option("--jobs,-j", args->jobs, "Worker threads (default: one per hardware thread)")->type_name("N")
      ->check(int_range(0, 1024));
  cmd->add_flag("--list-rules", args->list_rules, "Print the rule table for --to and exit");
  cmd->add_option("--max-file-size", args->max_file_size,
                  "Skip (and fail --check on) files larger than this many bytes (default 4 MiB)")
      ->type_name("BYTES")
      ->check(int_range(1, 1073741824.0));
  add_json_option(cmd, args->json_path);
  cmd->callback([args]() { run(*args); });
}

}  // namespace crosstrain::cli
