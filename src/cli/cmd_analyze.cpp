// `crosstrain analyze PATH...`: operator table, step breakdown, idle/sync/fallback/memory checks
// and the advisor for profiler traces; `--diff A B` compares two traces.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "report/envelope.h"
#include "report/output.h"
#include "report/terminal.h"
#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis_report.h"
#include "tools/analyze/ascend_output.h"
#include "tools/analyze/rank_compare.h"
#include "tools/analyze/trace_reader.h"

namespace crosstrain::cli {

namespace {

struct AnalyzeArgs {
  std::vector<std::string> paths;
  std::vector<std::string> diff;
  size_t top = 20;
  std::string group_by = "name";
  std::string sort = "auto";
  double idle_gap_us = 20;
  uint64_t max_inflated_mib = 16384;
  std::string json, csv, html;
};

// Every output path the flags name, with its flag.
std::vector<std::pair<std::string, std::string>> outputs_of(const AnalyzeArgs& args) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!args.json.empty()) out.emplace_back("--json", args.json);
  if (!args.csv.empty()) {
    out.emplace_back("--csv", args.csv);
    for (const auto& p : analyze::analysis_csv_paths(args.csv)) out.emplace_back("--csv", p);
  }
  if (!args.html.empty()) out.emplace_back("--html", args.html);
  return out;
}

void refuse_inputs_as_outputs(const AnalyzeArgs& args, const std::vector<std::string>& inputs) {
  for (const auto& [flag, path] : outputs_of(args)) report::refuse_input_as_output(flag, path, inputs);
}

// The files a trace was read with: the trace, its call-site side file, and for an Ascend output
// folder the profiler's summaries beside it and the rank files a level up.
void add_files_read(const std::string& trace_path, std::vector<std::string>& files) {
  files.push_back(trace_path);
  files.push_back(analyze::call_sites_path_of(trace_path));
  const std::string ascend = analyze::ascend_output_dir_of(trace_path);
  if (ascend.empty()) return;
  std::error_code ec;
  for (const auto& dir : {std::filesystem::path(ascend), std::filesystem::path(ascend).parent_path()})
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) files.push_back(it->path().string());
}

std::vector<analyze::TraceAnalysis> analyze_paths(const std::vector<std::string>& paths,
                                                  const analyze::AnalyzeOptions& opt, const std::string& sort,
                                                  const analyze::ReadOptions& read, std::vector<std::string>& files_read) {
  std::vector<analyze::TraceAnalysis> out;
  report::ProgressLine progress;  // big traces take seconds; silent unless stderr is a terminal
  for (const auto& p : paths) {
    progress.update("analyze: reading " + report::terminal_safe(p, false), true);
    std::vector<std::string> notes;
    auto traces = analyze::read_traces(p, read, &notes);
    for (const auto& n : notes) {
      progress.clear();
      std::cerr << "analyze: " << report::terminal_safe(n) << "\n";
    }
    for (auto& trace : traces) {
      progress.update("analyze: analyzing " + report::terminal_safe(trace.path, false), true);
      add_files_read(trace.path, files_read);
      auto a = analyze::analyze_trace(trace, opt);
      // A trace nothing was recognised in has no result to show, not an empty one.
      if (std::string why = a.unrecognised(); !why.empty()) throw std::runtime_error(why);
      a.findings = analyze::run_advisor(a);
      if (sort != "auto") analyze::sort_operators(a.operators, analyze::parse_operator_sort(sort));
      out.push_back(std::move(a));
    }
  }
  progress.clear();
  return out;
}

// Traces by run folder, in order of first appearance, when two traces claim the same rank (two runs
// of one job side by side); otherwise one group, whatever folders the traces came from.
std::vector<std::pair<std::string, std::vector<size_t>>> group_by_run(const std::vector<analyze::TraceAnalysis>& all) {
  std::vector<int> ranks;
  for (const auto& a : all)
    if (a.rank >= 0) ranks.push_back(a.rank);
  std::sort(ranks.begin(), ranks.end());
  const bool repeated = std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end();
  std::vector<std::pair<std::string, std::vector<size_t>>> runs;
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string run = repeated ? analyze::run_folder_of(all[i].path) : "";
    auto it = std::find_if(runs.begin(), runs.end(), [&](const auto& r) { return r.first == run; });
    if (it == runs.end()) it = runs.insert(runs.end(), {run, {}});
    it->second.push_back(i);
  }
  return runs;
}

void run_analyze(const AnalyzeArgs& args) {
  if (args.sort != "auto") analyze::parse_operator_sort(args.sort);  // reject bad values before reading
  if (args.group_by != "name" && args.group_by != "shape")
    throw std::invalid_argument("unknown --group-by '" + args.group_by + "' (valid: name, shape)");
  if (args.diff.empty() == args.paths.empty())
    throw std::invalid_argument("give trace paths, or --diff A B (not both)");
  analyze::AnalyzeOptions opt;
  opt.group_by_shape = args.group_by == "shape";
  opt.idle_gap_min_us = args.idle_gap_us;
  const bool quiet = report::json_to_stdout(args.json);
  analyze::ReadOptions read;
  read.max_inflated_bytes = args.max_inflated_mib << 20;
  // An output never replaces an input: the files named on the command line are refused before
  // anything is read, the files found in folders once they are known, before anything is written.
  std::vector<std::string> files_read = args.diff.empty() ? args.paths : args.diff;
  refuse_inputs_as_outputs(args, files_read);

  if (!args.diff.empty()) {
    auto a = analyze_paths({args.diff[0]}, opt, args.sort, read, files_read);
    auto b = analyze_paths({args.diff[1]}, opt, args.sort, read, files_read);
    if (a.size() != 1 || b.size() != 1) throw std::invalid_argument("--diff compares two trace files, not folders");
    refuse_inputs_as_outputs(args, files_read);
    auto d = analyze::diff_analyses(a[0], b[0]);
    if (!quiet) std::cout << report::terminal_safe(analyze::render_diff_console(d, args.top));
    if (!args.json.empty()) report::write_json(report::with_envelope("analyze", analyze::diff_to_json(d)), args.json);
    return;
  }

  auto all = analyze_paths(args.paths, opt, args.sort, read, files_read);
  refuse_inputs_as_outputs(args, files_read);
  // Ascend output folders: the profiler's own summaries next to each trace_view.json.
  std::vector<analyze::AscendOutput> ascend(all.size());
  std::vector<bool> has_ascend(all.size(), false);
  for (size_t i = 0; i < all.size(); ++i) {
    std::string dir = analyze::ascend_output_dir_of(all[i].path);
    if (dir.empty()) continue;
    ascend[i] = analyze::read_ascend_output(dir);
    analyze::compare_with_trace(ascend[i], all[i]);
    has_ascend[i] = true;
  }
  // Ranks are compared within a run (a folder of rank folders): level0/ and level1/ side by side
  // are two runs of the same ranks, not four ranks.
  const auto runs = group_by_run(all);
  nlohmann::json across_json = nlohmann::json::array();
  std::string console;
  for (const auto& [run, members] : runs) {
    std::vector<analyze::TraceAnalysis> group;
    for (size_t i : members) group.push_back(all[i]);
    auto across = analyze::rank_findings(group);
    if (runs.size() > 1)
      for (auto& f : across) f.title += " (run " + run + ")";
    for (const auto& f : analyze::findings_to_json(across)) across_json.push_back(f);
    if (quiet) continue;
    const std::string head = runs.size() > 1 ? "Run " + run + ": " : "";
    if (group.size() > 1)
      console += head + analyze::render_rank_summary(group) + analyze::render_rank_findings(across) + "\n";
    for (const auto& a : group) console += analyze::render_console(a, {args.top}) + "\n";
    std::vector<analyze::AscendOutput> side;
    std::vector<int> side_ranks;
    for (size_t i : members)
      if (has_ascend[i]) {
        side.push_back(ascend[i]);
        side_ranks.push_back(all[i].rank >= 0 ? all[i].rank : static_cast<int>(side.size() - 1));
      }
    if (!side.empty()) console += analyze::render_ascend_console(side, side_ranks) + "\n";
  }
  // Names, code lines and file names come from files others wrote: escaped, never obeyed.
  if (!quiet) std::cout << report::terminal_safe(console);
  if (!args.json.empty()) {
    auto j = analyze::analyses_to_json(all);
    if (all.size() > 1) j["rank_findings"] = across_json;
    for (size_t k = 0; k < all.size(); ++k) {
      if (runs.size() > 1) j["traces"][k]["run"] = analyze::run_folder_of(all[k].path);
      if (has_ascend[k]) j["traces"][k]["ascend"] = analyze::ascend_output_to_json(ascend[k]);
    }
    report::write_json(report::with_envelope("analyze", j), args.json);
  }
  if (!args.csv.empty()) analyze::write_analysis_csv(all, args.csv);
  if (!args.html.empty()) report::write_file_atomic(args.html, analyze::render_analysis_html(all));
}

}  // namespace

void add_analyze_command(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand("analyze", "Analyze profiler traces (torch.profiler/Kineto, crosstrain, "
                                            "legacy autograd, Ascend trace_view.json; .json or .json.gz, a "
                                            "folder of per-rank traces, Ascend *_ascend_pt folders, or a "
                                            "`crosstrain run --profile` folder, whose findings name your lines)");
  cmd->add_option("paths", args->paths, "Trace files or folders")->type_name("PATH...");
  cmd->add_option("--diff", args->diff, "Compare two traces: what appeared, vanished, got slower or faster")
      ->expected(2)
      ->type_name("A B");
  cmd->add_option("--top", args->top, "Operator rows to show")->check(int_range(1, 1000000))->capture_default_str();
  cmd->add_option("--group-by", args->group_by, "Operator rows by 'name' or 'shape' (name + input shapes)")
      ->capture_default_str();
  cmd->add_option("--sort", args->sort, "Sort operators by device, host-self, host-total or calls (auto: device "
                                        "self time, then host self time)")
      ->capture_default_str();
  cmd->add_option("--idle-gap-us", args->idle_gap_us, "Shortest device idle gap reported, in us")
      ->check(real_range(0, 1e12))
      ->capture_default_str();
  cmd->add_option("--max-inflated-mib", args->max_inflated_mib,
                  "Refuse a .gz trace that inflates past this many MiB (guards against gzip bombs)")
      ->check(int_range(1, 1073741824.0))
      ->capture_default_str();
  add_json_option(cmd, args->json);
  cmd->add_option("--csv", args->csv, "Write operators.csv and steps.csv to DIR")->type_name("DIR");
  cmd->add_option("--html", args->html, "Write a self-contained HTML report to PATH")->type_name("PATH");
  cmd->callback([args] { run_analyze(*args); });
}

}  // namespace crosstrain::cli
