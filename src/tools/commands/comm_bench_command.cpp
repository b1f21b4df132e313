// `comm-bench` in the engine: every rank measures, rank 0 reports.
#include <iostream>

#include "report/envelope.h"
#include "report/output.h"
#include "tools/commands/commands.h"
#include "tools/dist/comm_bench.h"

namespace crosstrain::commands {

int comm_bench_command(const CommBenchArgs& args) {
  const auto r = dist::run_comm_bench(args.options);
  if (r.rank != 0) return r.ok() ? 0 : 1;
  if (!report::json_to_stdout(args.json)) std::cout << dist::render_comm_bench(r);
  if (!args.json.empty())
    report::write_json(report::with_envelope("comm-bench", dist::comm_bench_to_json(r)), args.json);
  return r.ok() ? 0 : 1;
}

}  // namespace crosstrain::commands
