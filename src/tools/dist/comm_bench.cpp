#include "tools/dist/comm_bench.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>

#include "core/device.h"
#include "report/terminal.h"
#include "report/units.h"
#include "tools/dist/group.h"
#include "tools/dist/worker_env.h"

namespace crosstrain::dist {

namespace {

using Clock = std::chrono::steady_clock;

at::ScalarType parse_dtype(const std::string& name) {
  static const std::map<std::string, at::ScalarType> types = {
      {"float32", at::kFloat}, {"float64", at::kDouble}, {"float16", at::kHalf},
      {"bfloat16", at::kBFloat16}, {"int32", at::kInt}, {"int64", at::kLong}};
  const auto it = types.find(name);
  if (it == types.end())
    throw std::invalid_argument("unknown --dtype '" + name + "' (float32, float64, float16, bfloat16, int32, int64)");
  return it->second;
}

// The values each rank contributes: (rank + 1) * (i % 3 + 1), so a sum, a misplaced chunk or a
// stale buffer shows. Every expected value is a small integer, exact in every supported dtype for
// the world sizes a host runs (bfloat16: sums up to 256).
at::Tensor pattern(int64_t n, int64_t offset, int64_t scale, const at::TensorOptions& o) {
  return at::arange(offset, offset + n, at::kLong).remainder_(3).add_(1).mul_(scale).to(o);
}

// One collective on its buffers: `in` and `out` are the same tensor for the in-place ones.
struct Buffers {
  at::Tensor in, out;
};

c10::intrusive_ptr<c10d::Work> issue(const std::string& op, c10d::ProcessGroup& pg, Buffers& b) {
  if (op == "all-reduce") {
    std::vector<at::Tensor> v{b.in};
    return pg.allreduce(v);
  }
  if (op == "broadcast") {
    std::vector<at::Tensor> v{b.in};
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    return pg.broadcast(v, o);
  }
  if (op == "all-gather") return pg._allgather_base(b.out, b.in);
  if (op == "reduce-scatter") return pg._reduce_scatter_base(b.out, b.in);
  throw std::invalid_argument("unknown collective '" + op + "'");
}

// Buffers for `elements` (the row's size in elements) on this rank, filled for the check, and the
// result every rank must see.
struct Case {
  Buffers buffers;
  at::Tensor expected;
};

Case make_case(const std::string& op, int64_t elements, int rank, int n, const at::TensorOptions& o) {
  const int64_t r1 = rank + 1, sum = static_cast<int64_t>(n) * (n + 1) / 2;
  Case c;
  if (op == "all-reduce" || op == "broadcast") {
    c.buffers.in = pattern(elements, 0, r1, o);
    c.buffers.out = c.buffers.in;
    c.expected = pattern(elements, 0, op == "all-reduce" ? sum : 1, o);
  } else if (op == "all-gather") {
    const int64_t chunk = elements / n;
    c.buffers.in = pattern(chunk, 0, r1, o);
    c.buffers.out = at::zeros({chunk * n}, o);
    std::vector<at::Tensor> parts;
    for (int q = 0; q < n; ++q) parts.push_back(pattern(chunk, 0, q + 1, o));
    c.expected = at::cat(parts);
  } else {  // reduce-scatter
    const int64_t chunk = elements / n;
    c.buffers.in = pattern(chunk * n, 0, r1, o);
    c.buffers.out = at::zeros({chunk}, o);
    c.expected = pattern(chunk, chunk * rank, sum, o);
  }
  return c;
}

// The elements a row of `bytes` moves: all-gather and reduce-scatter need whole chunks per rank.
int64_t row_elements(const std::string& op, int64_t bytes, int64_t element_size, int n) {
  const int64_t e = bytes / element_size;
  return op == "all-gather" || op == "reduce-scatter" ? e / n * n : e;
}

// Elements of `got` that are not `expected`.
int64_t count_wrong(const at::Tensor& got, const at::Tensor& expected) {
  return at::ne(got, expected).sum().item<int64_t>();
}

// Best of five memcpy's of `bytes`, in GB/s, after one that faults the pages in.
double memcpy_gbps(int64_t bytes) {
  const auto n = static_cast<size_t>(bytes);
  std::unique_ptr<char[]> a(new char[n]), b(new char[n]);
  std::memset(a.get(), 1, n);
  std::memset(b.get(), 2, n);
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = Clock::now();
    std::memcpy(b.get(), a.get(), n);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (i > 0) best = std::max(best, static_cast<double>(bytes) / s / 1e9);
    a.swap(b);
  }
  return best;
}

// Rank 0's view of a per-rank maximum (time) and sum (wrong elements), on every rank.
std::pair<double, int64_t> reduce_over_ranks(Group& g, double seconds, int64_t wrong) {
  at::Tensor t = at::tensor({seconds}, at::kDouble);
  at::Tensor w = at::tensor({wrong}, at::kLong);
  g.guarded("taking the slowest rank's time", [&] {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::MAX;
    g.process_group()->allreduce(v, o)->wait(g.timeout());
  });
  g.all_reduce_sum(w, "summing wrong elements over ranks");
  return {t.item<double>(), w.item<int64_t>()};
}

// Whether the backend takes `op` at all: one tiny call; a refusal when it is issued (not a failure
// while it runs) means unsupported. Every rank learns what any rank was refused.
std::map<std::string, std::string> probe_support(Group& g, const std::vector<std::string>& ops,
                                                 const at::TensorOptions& o) {
  std::map<std::string, std::string> refused;
  at::Tensor flags = at::zeros({static_cast<int64_t>(ops.size())}, at::kLong);
  for (size_t i = 0; i < ops.size(); ++i) {
    Case c = make_case(ops[i], g.size(), g.rank(), g.size(), o);
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = issue(ops[i], *g.process_group(), c.buffers);
    } catch (const std::exception& e) {
      std::string what = e.what();
      refused[ops[i]] = what.substr(0, what.find('\n'));
      flags[static_cast<int64_t>(i)] = 1;
      continue;
    }
    g.guarded(ops[i] + " of " + std::to_string(g.size()) + " elements", [&] { work->wait(g.timeout()); });
  }
  g.all_reduce_sum(flags, "agreeing on the collectives the backend supports");
  for (size_t i = 0; i < ops.size(); ++i)
    if (flags[static_cast<int64_t>(i)].item<int64_t>() > 0 && !refused.count(ops[i]))
      refused[ops[i]] = "refused on another rank";
  return refused;
}

CommBenchRow measure(Group& g, const core::DeviceContext& dev, const std::string& op, int64_t bytes,
                     const CommBenchOptions& opt, const at::TensorOptions& o) {
  const int n = g.size();
  const int64_t elem = static_cast<int64_t>(c10::elementSize(o.dtype().toScalarType()));
  CommBenchRow row;
  row.op = op;
  row.elements = row_elements(op, bytes, elem, n);
  row.bytes = row.elements * elem;
  const std::string what = op + " of " + report::format_bytes(row.bytes);
  Case c = make_case(op, row.elements, g.rank(), n, o);
  g.guarded(what + " (checked run)", [&] { issue(op, *g.process_group(), c.buffers)->wait(g.timeout()); });
  dev.synchronize();
  const int64_t wrong = count_wrong(c.buffers.out, c.expected);
  c.expected.reset();
  if (op == "all-reduce") c.buffers.in.zero_();  // sums of zeros stay put over the timed runs
  for (int i = 0; i < opt.warmup; ++i)
    g.guarded(what + " (warm-up)", [&] { issue(op, *g.process_group(), c.buffers)->wait(g.timeout()); });
  g.barrier("the barrier before timing " + what);
  dev.synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < opt.iters; ++i)
    g.guarded(what, [&] { issue(op, *g.process_group(), c.buffers)->wait(g.timeout()); });
  dev.synchronize();
  const double mean_s = std::chrono::duration<double>(Clock::now() - t0).count() / opt.iters;
  const auto [slowest, all_wrong] = reduce_over_ranks(g, mean_s, wrong);
  row.time_us = slowest * 1e6;
  row.algbw_gbps = static_cast<double>(row.bytes) / slowest / 1e9;
  row.busbw_gbps = row.algbw_gbps * bus_factor(op, n);
  row.wrong = all_wrong;
  return row;
}

}  // namespace

CommBenchResult run_comm_bench(const CommBenchOptions& opt) {
  for (const auto& op : opt.ops)
    if (std::find(comm_bench_ops().begin(), comm_bench_ops().end(), op) == comm_bench_ops().end())
      throw std::invalid_argument("unknown collective '" + op + "' (all-reduce, all-gather, reduce-scatter, broadcast)");
  if (opt.iters < 1 || opt.warmup < 0) throw std::invalid_argument("--iters must be positive and --warmup not negative");
  const at::ScalarType dtype = parse_dtype(opt.dtype);
  const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
  const auto sizes = comm_bench_sizes(opt.min_bytes, opt.max_bytes, opt.factor, elem);

  auto env = WorkerEnv::from_environment();
  if (!env) {
    env = WorkerEnv::single();
    env->master_port = 0;  // a store of its own, on any free port
  }
  const auto dev = core::DeviceContext::open(opt.device);
  GroupOptions go;
  go.backend = opt.backend;
  go.timeout = std::chrono::milliseconds(static_cast<int64_t>(opt.timeout_s * 1000));
  auto g = Group::join(*env, dev, go);
  const at::TensorOptions o = at::TensorOptions().dtype(dtype).device(dev.device());

  CommBenchResult r;
  r.rank = g->rank();
  r.world_size = g->size();
  r.backend = g->backend_name();
  r.device = dev.name();
  r.dtype = opt.dtype;
  r.iters = opt.iters;
  r.warmup = opt.warmup;
  for (const auto& p : g->peers()) r.hosts.push_back(p.host);

  r.memcpy_bytes = opt.memcpy_bytes;
  g->barrier("the barrier before the memcpy measurement");
  double copy = g->rank() == 0 && opt.memcpy_bytes > 0 ? memcpy_gbps(opt.memcpy_bytes) : 0.0;
  at::Tensor shared = at::tensor({copy}, at::kDouble);
  g->all_reduce_sum(shared, "sharing the memcpy bandwidth");
  if (opt.memcpy_bytes > 0) r.memcpy_gbps = shared.item<double>();

  const auto refused = probe_support(*g, opt.ops, o);
  report::ProgressLine progress(g->rank() == 0 && report::stderr_is_terminal());
  for (const auto& op : comm_bench_ops()) {
    if (std::find(opt.ops.begin(), opt.ops.end(), op) == opt.ops.end()) continue;
    for (const int64_t bytes : sizes) {
      progress.update("comm-bench: " + op + " " + report::format_bytes(bytes), true);
      if (row_elements(op, bytes, elem, r.world_size) == 0) continue;  // less than one element per rank
      if (const auto it = refused.find(op); it != refused.end()) {
        CommBenchRow row;
        row.op = op;
        row.elements = row_elements(op, bytes, elem, r.world_size);
        row.bytes = row.elements * elem;
        row.supported = false;
        row.note = it->second;
        r.rows.push_back(row);
        continue;
      }
      r.rows.push_back(measure(*g, dev, op, bytes, opt, o));
    }
  }
  progress.clear();
  g->barrier("the final barrier");
  return r;
}

}  // namespace crosstrain::dist
