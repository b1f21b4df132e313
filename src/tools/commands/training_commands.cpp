// `train` and `bench` in the engine: run, print the summary, write the JSON report.
#include <filesystem>
#include <iostream>

#include "report/envelope.h"
#include "report/output.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_report.h"
#include "tools/commands/commands.h"
#include "tools/commands/torch_errors.h"
#include "tools/train/train.h"
#include "tools/train/train_report.h"

namespace crosstrain::commands {

using dump::attach_dump;
using dump::DumpAttachment;
using dump::DumpOptions;

namespace {

int train(const TrainArgs& args) {
  const bool quiet = report::json_to_stdout(args.json);
  train::TrainHooks hooks;
  hooks.messages = &std::cerr;
  const train::CheckedConfig checked = train::check_config(args.config);
  // A typo in an output path must not cost the run: every output location is checked first.
  for (const auto* path : {&args.json, &args.config.weights_out, &args.config.log_path})
    if (!path->empty()) report::check_writable(*path);
  // Data-parallel workers dump one folder each: DIR/rank<N> (as --profile does).
  std::string dump_dir = args.dump.dir;
  if (checked.config().world_size > 1 && !dump_dir.empty())
    dump_dir = (std::filesystem::path(dump_dir) / ("rank" + std::to_string(checked.config().rank))).string();
  DumpAttachment dump = attach_dump(args.dump, dump_dir, args.config, hooks, /*host_batches=*/false);
  const auto result = train::run_training(checked, hooks);
  if (dump.dumping()) {
    dump.close();
    std::cerr << "dump: " << dump.dir() << " (" << dump.records_written() << " records)\n";
  }
  if (result.rank != 0) return result.stop_signal ? 128 + result.stop_signal : 0;  // rank 0 reports the job
  if (!quiet) std::cout << train::render_train_summary(result);
  if (!args.json.empty()) report::write_json(report::with_envelope("train", train::train_result_to_json(result)), args.json);
  // Preempted: the checkpoint is written; 128 + the signal, as if the signal had ended the process.
  return result.stop_signal ? 128 + result.stop_signal : 0;
}

int bench(const BenchArgs& args) {
  const auto runs = bench::run_bench(args.options, &std::cerr);
  if (!report::json_to_stdout(args.json)) {
    const auto& f = runs.front();
    std::cout << f.config.model << ", batch " << f.config.batch_size << " x " << f.config.image_size << "px, "
              << f.config.steps << " steps (" << f.measured_steps << " measured) on " << f.device << " ("
              << f.device_description << ")\n\n"
              << bench::render_comparison(runs);
  }
  if (!args.json.empty()) report::write_json(report::with_envelope("bench", bench::bench_to_json(runs)), args.json);
  return 0;
}

}  // namespace

int train_command(const TrainArgs& args) {
  return with_torch_errors([&] { return train(args); });
}

int bench_command(const BenchArgs& args) {
  return with_torch_errors([&] { return bench(args); });
}

}  // namespace crosstrain::commands
