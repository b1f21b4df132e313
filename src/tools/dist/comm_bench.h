#pragma once
// `crosstrain comm-bench`: collective bandwidth of a process group, measured the way nccl-tests
// measures it, with every result checked.
//
//   auto r = dist::run_comm_bench(options);   // joins the group (torchrun's variables, or 1 process)
//   if (r.rank == 0) std::cout << dist::render_comm_bench(r);
//
// For each collective and message size: one untimed run on rank-dependent values, checked exactly;
// `warmup` untimed runs; `iters` timed runs, each waited for. A rank's time is its mean per run;
// the reported time is the largest over ranks (the collective is as slow as its slowest rank).
//
//   size       all-reduce, broadcast: the buffer; all-gather: the gathered output; reduce-scatter:
//              the input (each rank holds size / n). Sizes with less than one element per rank are
//              left out for all-gather and reduce-scatter.
//   algbw      size / time
//   busbw      algbw * factor: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n,
//              broadcast 1. With these factors a ring's busbw is the bandwidth each link carried,
//              comparable across collectives and world sizes.
//
// The run also copies a large buffer with memcpy on rank 0 alone (the others wait), so busbw can be
// compared with what this host's memory does. Torch-free header; the run itself is libtorch's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace crosstrain::dist {

struct CommBenchOptions {
  std::vector<std::string> ops = {"all-reduce", "all-gather", "reduce-scatter", "broadcast"};
  int64_t min_bytes = 8;
  int64_t max_bytes = 64ll << 20;  // 64 MiB: every size on 2 CPU processes in well under a minute
  int64_t factor = 2;              // each size is the previous one times this
  int iters = 10;
  int warmup = 3;
  std::string dtype = "float32";   // float32 | float64 | float16 | bfloat16 | int32 | int64
  std::string device = "cpu";
  std::string backend = "auto";    // as dist::Group picks: gloo on the CPU
  double timeout_s = 300;          // every collective and the rendezvous
  int64_t memcpy_bytes = 128ll << 20;
};

// The collectives comm-bench knows, in its order, and their bus bandwidth factor for n ranks.
const std::vector<std::string>& comm_bench_ops();
double bus_factor(const std::string& op, int world_size);
// min_bytes, min_bytes * factor, ... up to max_bytes, each rounded down to whole elements.
std::vector<int64_t> comm_bench_sizes(int64_t min_bytes, int64_t max_bytes, int64_t factor, int64_t element_size);

struct CommBenchRow {
  std::string op;
  int64_t bytes = 0;               // see "size" above
  int64_t elements = 0;            // of the buffer `bytes` describes
  bool supported = true;           // false: the backend refused this collective (see `note`)
  std::string note;
  double time_us = 0;              // mean per run, largest over ranks
  double algbw_gbps = 0;           // GB/s, 1e9 bytes
  double busbw_gbps = 0;
  int64_t wrong = 0;               // elements that differed from the expected value, all ranks
};

struct CommBenchResult {
  int rank = 0;
  int world_size = 1;
  std::string backend, device, dtype;
  std::vector<std::string> hosts;  // one per rank
  int iters = 0, warmup = 0;
  int64_t memcpy_bytes = 0;
  std::optional<double> memcpy_gbps;  // best of several copies on rank 0
  std::vector<CommBenchRow> rows;
  bool ok() const;                 // every supported row is exact
};

// Joins the group (std::runtime_error when it cannot), runs every size of every op, and returns the
// same result on every rank. std::invalid_argument for an unknown op or dtype, or bad sizes.
CommBenchResult run_comm_bench(const CommBenchOptions& options);

// Console: a header, one table with every row, the memcpy line.
std::string render_comm_bench(const CommBenchResult& result);
// The command's keys (the caller adds the envelope).
nlohmann::json comm_bench_to_json(const CommBenchResult& result);

}  // namespace crosstrain::dist
