// comm-bench's definitions (ops, bus factors, sizes) and renderers; torch-free.
#include <algorithm>
#include <set>
#include <stdexcept>

#include "report/table.h"
#include "report/units.h"
#include "tools/dist/comm_bench.h"

namespace crosstrain::dist {

const std::vector<std::string>& comm_bench_ops() {
  static const std::vector<std::string> ops = {"all-reduce", "all-gather", "reduce-scatter", "broadcast"};
  return ops;
}

double bus_factor(const std::string& op, int n) {
  if (n < 1) throw std::invalid_argument("world size must be positive");
  if (op == "all-reduce") return 2.0 * (n - 1) / n;
  if (op == "all-gather" || op == "reduce-scatter") return static_cast<double>(n - 1) / n;
  if (op == "broadcast") return 1.0;
  throw std::invalid_argument("unknown collective '" + op + "'");
}

std::vector<int64_t> comm_bench_sizes(int64_t min_bytes, int64_t max_bytes, int64_t factor, int64_t element_size) {
  if (element_size < 1) throw std::invalid_argument("element size must be positive");
  if (min_bytes < element_size)
    throw std::invalid_argument("--min-bytes " + std::to_string(min_bytes) + " is less than one element (" +
                                std::to_string(element_size) + " bytes)");
  if (max_bytes < min_bytes)
    throw std::invalid_argument("--max-bytes " + std::to_string(max_bytes) + " is less than --min-bytes " +
                                std::to_string(min_bytes));
  if (factor < 2) throw std::invalid_argument("--factor must be at least 2");
  std::vector<int64_t> out;
  for (int64_t s = min_bytes; s <= max_bytes; s *= factor) {
    const int64_t whole = s / element_size * element_size;
    if (out.empty() || out.back() != whole) out.push_back(whole);
    if (s > max_bytes / factor) break;  // the next size would overflow or pass the end
  }
  return out;
}

bool CommBenchResult::ok() const {
  return std::all_of(rows.begin(), rows.end(), [](const CommBenchRow& r) { return !r.supported || r.wrong == 0; });
}

namespace {

std::string gbps(double v) { return report::format_fixed(v, v < 10 ? 3 : 2); }

std::string check_text(const CommBenchRow& r) {
  if (!r.supported) return "unsupported";
  return r.wrong == 0 ? "ok" : std::to_string(r.wrong) + " wrong";
}

}  // namespace

std::string render_comm_bench(const CommBenchResult& r) {
  std::set<std::string> hosts(r.hosts.begin(), r.hosts.end());
  std::string out = "comm-bench: " + std::to_string(r.world_size) + " rank" + (r.world_size == 1 ? "" : "s") + " on " +
                    std::to_string(hosts.size()) + " host" + (hosts.size() == 1 ? "" : "s") + ", " + r.backend +
                    " on " + r.device + ", " + r.dtype + ", " + std::to_string(r.iters) + " timed runs after " +
                    std::to_string(r.warmup) + " warm-up\n";
  out += "time: mean per run, slowest rank; algbw = size / time; busbw = algbw x factor (GB/s = 1e9 B/s)\n";
  report::Table t({"collective", "size", "elements", "time", "algbw GB/s", "busbw GB/s", "factor", "check"});
  std::string last;
  std::vector<std::string> notes;
  for (const auto& row : r.rows) {
    if (!last.empty() && row.op != last) t.add_separator();
    last = row.op;
    if (!row.supported) {
      t.add_row({row.op, report::format_bytes(row.bytes), report::format_count(row.elements), "n/a", "n/a", "n/a",
                 report::format_fixed(bus_factor(row.op, r.world_size), 3), check_text(row)});
      if (std::find(notes.begin(), notes.end(), row.op + ": " + row.note) == notes.end())
        notes.push_back(row.op + ": " + row.note);
      continue;
    }
    t.add_row({row.op, report::format_bytes(row.bytes), report::format_count(row.elements), report::format_us(row.time_us),
               gbps(row.algbw_gbps), gbps(row.busbw_gbps), report::format_fixed(bus_factor(row.op, r.world_size), 3),
               check_text(row)});
  }
  out += t.render();
  for (const auto& n : notes) out += "not supported by " + r.backend + ": " + n + "\n";
  out += "memcpy on rank 0 alone (" + report::format_bytes(r.memcpy_bytes) + ", one thread, best of 5): " +
         (r.memcpy_gbps ? gbps(*r.memcpy_gbps) + " GB/s" : std::string("n/a")) + "\n";
  out += r.ok() ? "every result exact\n" : "FAILED: some collectives returned wrong values\n";
  return out;
}

nlohmann::json comm_bench_to_json(const CommBenchResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j = {{"op", row.op},
                        {"bytes", row.bytes},
                        {"elements", row.elements},
                        {"supported", row.supported},
                        {"bus_factor", bus_factor(row.op, r.world_size)}};
    if (row.supported) {
      j["time_us"] = row.time_us;
      j["algbw_gbps"] = row.algbw_gbps;
      j["busbw_gbps"] = row.busbw_gbps;
      j["wrong"] = row.wrong;
      j["ok"] = row.wrong == 0;
    } else {
      j["note"] = row.note;
    }
    rows.push_back(std::move(j));
  }
  nlohmann::json memcpy = {{"bytes", r.memcpy_bytes}, {"gbps", nullptr}};
  if (r.memcpy_gbps) memcpy["gbps"] = *r.memcpy_gbps;
  return {{"world_size", r.world_size}, {"backend", r.backend}, {"device", r.device}, {"dtype", r.dtype},
          {"hosts", r.hosts},           {"iters", r.iters},     {"warmup", r.warmup}, {"memcpy", memcpy},
          {"rows", rows},               {"ok", r.ok()}};
}

}  // namespace crosstrain::dist
