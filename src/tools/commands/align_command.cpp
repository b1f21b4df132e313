// `align` in the engine: run_align, then the verdict on the terminal, in JSON and in HTML.
#include <iostream>

#include "report/envelope.h"
#include "report/output.h"
#include "tools/align/align_ranks.h"
#include "tools/commands/commands.h"
#include "tools/commands/torch_errors.h"
#include "tools/compare/compare_report.h"

namespace crosstrain::commands {

using align::AlignOptions;
using align::AlignRun;
using align::AlignSideFailed;
using align::kAlignRankStoppedExit;
using align::kAlignSideFailedExit;
using align::run_align;

namespace {

int align_body(const AlignArgs& args) {
  const AlignOptions& o = args.options;
  AlignRun run;
  try {
    run = run_align(o, std::cerr);
  } catch (const AlignSideFailed& e) {
    // Not a verdict: neither "agree" nor "differ" (exit 1) can be said about a run that did not happen.
    std::cerr << "crosstrain: error: " << e.what() << "\n";
    return kAlignSideFailedExit;
  }
  if (run.worker) {  // one rank of a side: the align process that started it gives the verdict
    for (const auto& p : run.result.problems) std::cerr << p << "\n";
    return run.result.agree ? 0 : kAlignRankStoppedExit;
  }
  if (!args.json.empty()) {
    auto doc = compare::compare_to_json(run.result);
    doc["a"] = o.a;
    doc["b"] = o.b;
    doc["out"] = run.out_dir;
    report::write_json(report::with_envelope("align", std::move(doc)), args.json);
  }
  if (!args.html.empty()) report::write_file_atomic(args.html, compare::compare_to_html(run.result));
  std::ostream& os = report::json_to_stdout(args.json) ? std::cerr : std::cout;
  os << "A: " << o.a << "\nB: " << o.b << "\n" << compare::render_compare_console(run.result);
  os << (run.result.agree ? "align: the runs agree\n" : "align: the runs differ\n");
  return run.result.agree ? 0 : 1;
}

}  // namespace

int align_command(const AlignArgs& args) {
  return with_torch_errors([&] { return align_body(args); });
}

}  // namespace crosstrain::commands
