// `crosstrain compare A B`: two dumps (or loss logs, or folders of rank dumps) -> agreement report;
// exit 0 agree, 1 differ (or nothing compared), 2 an input that names nothing comparable or an
// output that would write into an input, 3 an input that cannot be read (no verdict).
#include <iostream>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "report/envelope.h"
#include "report/input_file.h"
#include "report/json_stream.h"
#include "report/output.h"
#include "report/terminal.h"
#include "tools/compare/compare_report.h"
#include "tools/compare/dump_compare.h"
#include "tools/compare/rank_compare.h"
#include "tools/compare/rank_report.h"

namespace crosstrain::cli {

namespace {

struct CompareFlags {
  std::string a, b, json_path, csv_path, html_path, precision;
  double loss_rtol = 0;
  CLI::Option* loss_rtol_option = nullptr;  // given on the command line?
  compare::CompareOptions options;
  compare::ConsoleOptions console;
};

// The report is written record by record: a million records need no tree of a million entries.
void write_streamed(const std::string& kind, report::StreamedJson doc, const std::string& path) {
  doc.skeleton = report::with_envelope(kind, std::move(doc.skeleton));
  report::write_json_streamed(doc, path);
}

void run_compare(const CompareFlags& f) {
  compare::CompareOptions opt = f.options;
  if (!f.precision.empty()) {
    auto t = dump::parse_precision(f.precision);
    if (!t)
      throw std::invalid_argument("--precision: expected fp64, fp32, fp16 or bf16 (or float64, ...), got '" +
                                  f.precision + "'");
    opt.precision = t;
  }
  if (f.loss_rtol_option && f.loss_rtol_option->count() > 0) {
    if (!(f.loss_rtol >= 0)) throw std::invalid_argument("--loss-rtol must be >= 0");
    opt.loss_rtol = f.loss_rtol;
  }
  // An output never replaces an input (a report written into a dump would damage it), and a typo
  // in an output path fails before the work, not after it.
  for (auto [path, flag] : {std::pair{&f.json_path, "--json"}, std::pair{&f.csv_path, "--csv"},
                            std::pair{&f.html_path, "--html"}}) {
    if (path->empty() || report::json_to_stdout(*path)) continue;
    // Stricter than refuse_input_as_output: nothing is written inside a dump folder at all (its
    // tensors and side files are read by name).
    for (auto [input, side] : {std::pair{&f.a, "A"}, std::pair{&f.b, "B"}})
      if (report::path_within(*path, *input))
        throw std::invalid_argument(std::string(flag) + " " + *path + " would write into the input " + side + " (" +
                                    *input + "): choose a path outside both inputs");
  }
  for (const auto* path : {&f.json_path, &f.csv_path, &f.html_path})
    if (!path->empty()) report::check_writable(*path);
  report::ProgressLine progress;
  const auto on_progress = [&](size_t done, size_t total) {
    progress.update("comparing " + std::to_string(done) + "/" + std::to_string(total));
  };
  const auto ranks_a = compare::rank_dump_folders(f.a), ranks_b = compare::rank_dump_folders(f.b);
  if (ranks_a.has_value() != ranks_b.has_value()) {
    const std::string& ranked = ranks_a ? f.a : f.b;
    throw std::invalid_argument((ranks_a ? "A" : "B") + std::string(" (") + ranked + ") is a folder of rank dumps but " +
                                (ranks_a ? "B" : "A") + " is not: compare it with " + ranked + "/rank<N>, or two folders of ranks");
  }
  std::ostream& console = report::json_to_stdout(f.json_path) ? std::cerr : std::cout;  // JSON on stdout: text to stderr
  bool agree = false;
  try {
    if (ranks_a) {
      const compare::RanksResult result = compare::compare_rank_paths(f.a, f.b, opt, on_progress);
      progress.clear();
      if (!f.json_path.empty()) write_streamed("compare", compare::ranks_to_streamed_json(result), f.json_path);
      if (!f.csv_path.empty()) report::write_file_atomic(f.csv_path, compare::ranks_to_csv(result));
      if (!f.html_path.empty()) report::write_file_atomic(f.html_path, compare::ranks_to_html(result));
      console << compare::render_ranks_console(result, f.console);
      agree = result.agree;
    } else {
      const compare::CompareResult result = compare::compare_paths(f.a, f.b, opt, on_progress);
      progress.clear();
      if (!f.json_path.empty()) write_streamed("compare", compare::compare_to_streamed_json(result), f.json_path);
      if (!f.csv_path.empty()) report::write_file_atomic(f.csv_path, compare::compare_to_csv(result));
      if (!f.html_path.empty()) report::write_file_atomic(f.html_path, compare::compare_to_html(result));
      console << compare::render_compare_console(result, f.console);
      agree = result.agree;
    }
  } catch (const compare::UnreadableInput& e) {
    // No verdict, so no report: "differ" (1) would blame the runs for what the file system did.
    progress.clear();
    std::cerr << "crosstrain: error: " << e.what() << "\n";
    throw ExitStatus{compare::kNoVerdictExit};
  }
  if (!agree) throw ExitStatus{1};
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto flags = std::make_shared<CompareFlags>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare two dumps (or loss logs) tensor by tensor: metrics, verdicts, the first divergence. "
      "A and B may be folders of rank dumps (rank0/, rank1/, ...): compared rank by rank. Exit 0 when the "
      "runs agree, 1 when they differ or nothing could be compared, 2 when A or B is no dump or loss log "
      "(or an output would write into one), 3 when one cannot be read.");
  cmd->add_option("A", flags->a, "Reference: a dump directory or a loss log")->required();
  cmd->add_option("B", flags->b, "Candidate: a dump directory or a loss log")->required();
  add_json_option(cmd, flags->json_path);
  cmd->add_option("--csv", flags->csv_path, "Write one CSV row per record to PATH")->type_name("PATH");
  cmd->add_option("--html", flags->html_path, "Write a self-contained HTML report to PATH")->type_name("PATH");
  flags->loss_rtol_option = cmd->add_option("--loss-rtol", flags->loss_rtol,
                  "Tolerated relative loss difference per step (default: 1e-2 for float32 runs, 5e-2 for "
                  "bfloat16/float16 runs)");
  flags->loss_rtol_option->check(real_range(0, 1e9));
  cmd->add_option("--context", flags->options.context, "Records shown before the first divergence")
      ->capture_default_str()->check(int_range(0, 1000000));
  cmd->add_option("--threads", flags->options.threads, "Threads per large tensor (0 = all cores)")
      ->capture_default_str()->check(int_range(0, 1024));
  cmd->add_option("--precision", flags->precision,
                  "Compute precision of both runs, for the thresholds: fp32, bf16, fp16, fp64; default: "
                  "from the dumps' meta.precision");
  cmd->add_flag("--stats-only", flags->options.stats_only, "Compare statistics even where tensor files exist");
  cmd->add_flag("--allow-missing", flags->options.allow_missing, "Records on one side only do not make runs differ");
  cmd->add_flag("--strict", flags->options.strict, "Warnings make the runs differ");
  cmd->add_flag("--all", flags->console.all_rows, "Show every record in the terminal table");
  cmd->add_option("--max-rows", flags->console.max_rows, "Rows in the terminal table of records that did not pass")
      ->capture_default_str()->check(int_range(0, 1e9));
  cmd->callback([flags] { run_compare(*flags); });
}

}  // namespace crosstrain::cli
