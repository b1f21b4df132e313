// `align` in the engine: run_align, then the verdict on the terminal, in JSON and in HTML.
#include <iostream>

#include "report/envelope.h"
#include "report/output.h"
#include "tools/align/compare_report.h"
#include "tools/commands/commands.h"

namespace crosstrain::commands {

int align_command(const AlignArgs& args) {
  const AlignOptions& o = args.options;
  const AlignRun run = run_align(o, std::cerr);
  if (!args.json.empty()) {
    auto doc = align::compare_to_json(run.result);
    doc["a"] = o.a;
    doc["b"] = o.b;
    doc["out"] = run.out_dir;
    report::write_json(report::with_envelope("align", std::move(doc)), args.json);
  }
  if (!args.html.empty()) report::write_file_atomic(args.html, align::compare_to_html(run.result));
  std::ostream& os = report::json_to_stdout(args.json) ? std::cerr : std::cout;
  os << "A: " << o.a << "\nB: " << o.b << "\n" << align::render_compare_console(run.result);
  os << (run.result.agree ? "align: the runs agree\n" : "align: the runs differ\n");
  return run.result.agree ? 0 : 1;
}

}  // namespace crosstrain::commands
