// `crosstrain comm-bench`: bandwidth of the collectives over a process group, under a launcher
// (torchrun's variables; one process without them). Every result is checked; exits 1 on a wrong one.
#include <memory>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "tools/commands/commands.h"

namespace crosstrain::cli {

namespace {
// A message or copy buffer of 1 TiB is beyond any device's memory; larger values are typos.
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 40;
}  // namespace

void add_comm_bench_command(CLI::App& app) {
  auto args = std::make_shared<commands::CommBenchArgs>();
  auto& o = args->options;
  CLI::App* cmd = app.add_subcommand(
      "comm-bench", "Collective bandwidth (all-reduce, all-gather, reduce-scatter, broadcast) per message size, checked");
  cmd->add_option("--ops", o.ops, "Collectives, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({"all-reduce", "all-gather", "reduce-scatter", "broadcast"}))
      ->capture_default_str();
  cmd->add_option("--min-bytes", o.min_bytes, "Smallest message (bytes; K, M, G suffixes are powers of 1024)")
      ->transform(byte_count(1, kMaxMessageBytes))
      ->capture_default_str();
  cmd->add_option("--max-bytes", o.max_bytes, "Largest message (default 64 MiB: 2 CPU processes finish in well under a minute)")
      ->transform(byte_count(1, kMaxMessageBytes))
      ->capture_default_str();
  cmd->add_option("--factor", o.factor, "Each size is the previous one times this")->capture_default_str()
      ->check(int_range(2, 1024));
  cmd->add_option("--iters", o.iters, "Timed runs per size")->capture_default_str()->check(int_range(1, 1000000));
  cmd->add_option("--warmup", o.warmup, "Untimed runs per size before them")->capture_default_str()
      ->check(int_range(0, 1000000));
  cmd->add_option("--dtype", o.dtype, "Element type")->capture_default_str()
      ->check(CLI::IsMember({"float32", "float64", "float16", "bfloat16", "int32", "int64"}));
  cmd->add_option("--device", o.device, "Device of the buffers")->capture_default_str();
  cmd->add_option("--dist-backend", o.backend, "auto (gloo on the CPU) | gloo | nccl | hccl")->capture_default_str();
  cmd->add_option("--dist-timeout", o.timeout_s, "Seconds any collective (and the rendezvous) may take")
      ->capture_default_str()->check(real_range(1, 86400));
  cmd->add_option("--memcpy-bytes", o.memcpy_bytes, "Buffer for the host memcpy bandwidth (0: skip)")
      ->transform(byte_count(0, kMaxMessageBytes))
      ->capture_default_str();
  add_json_option(cmd, args->json);
  cmd->callback([args] { exit_with(commands::comm_bench_command(*args)); });
}

}  // namespace crosstrain::cli
