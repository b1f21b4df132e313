// Renderers for ReplayResult: a terminal report (worst calls, calls not replayed) and JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/dump/dump_format.h"
#include "tools/opcheck/replay.h"

namespace crosstrain::opcheck {

namespace {

std::string sci(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

const char* status_name(ReplayStatus s) {
  switch (s) {
    case ReplayStatus::Pass: return "pass";
    case ReplayStatus::Fail: return "fail";
    case ReplayStatus::NotReplayed: return "not_replayed";
  }
  return "";
}

std::string where(const ReplayRow& row) {
  std::string w = row.phase;
  if (!row.module.empty()) w += " " + row.module;
  return w;
}

std::string worst_table(const ReplayResult& r, int64_t top, size_t* shown, size_t* replayed) {
  std::vector<const ReplayRow*> rows;
  for (const auto& row : r.rows)
    if (row.status != ReplayStatus::NotReplayed) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ReplayRow* a, const ReplayRow* b) { return replay_rank(*a) > replay_rank(*b); });
  *replayed = rows.size();
  if (top > 0 && rows.size() > static_cast<size_t>(top)) rows.resize(static_cast<size_t>(top));
  *shown = rows.size();
  bool run_column = false;
  for (const auto* row : rows)
    for (const auto& o : row->outputs) run_column = run_column || o.run_max_rel.has_value();
  std::vector<std::string> headers = {"seq", "op", "where", "out", "dtype", "shape", "max abs", "max rel", "cosine", "tol"};
  if (run_column) headers.push_back("run rel");
  headers.push_back("result");
  report::Table t(headers);
  for (size_t c : {1, 2, 4, 5}) t.align(c, report::Align::Left);
  t.align(headers.size() - 1, report::Align::Left);
  for (const auto* row : rows) {
    const ReplayOutput* w = row->worst();
    std::vector<std::string> cells = {std::to_string(row->seq), row->op, where(*row)};
    if (w) {
      char cos[32];
      std::snprintf(cos, sizeof cos, "%.8f", w->cosine);
      cells.insert(cells.end(), {std::to_string(w->index), w->dtype, dump::shape_to_string(w->shape), sci(w->max_abs),
                                 sci(w->max_rel), std::isnan(w->cosine) ? "nan" : cos, sci(w->tolerance)});
      if (run_column) cells.push_back(w->run_max_rel ? sci(*w->run_max_rel) : "-");
    } else {
      cells.insert(cells.end(), {"-", "-", "-", "-", "-", "-", "-"});
      if (run_column) cells.push_back("-");
    }
    cells.push_back(row->status == ReplayStatus::Pass ? "pass"
                                                       : "FAIL" + (row->reason.empty() ? "" : ": " + row->reason));
    t.add_row(cells);
  }
  return t.render();
}

std::string not_replayed_table(const ReplayResult& r) {
  struct Group {
    int64_t calls = 0;
    int64_t first_seq = 0;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;  // (op, reason)
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& row : r.rows) {
    if (row.status != ReplayStatus::NotReplayed) continue;
    auto key = std::make_pair(row.op, row.reason);
    auto [it, fresh] = groups.try_emplace(key, Group{0, row.seq});
    if (fresh) order.push_back(key);
    ++it->second.calls;
  }
  report::Table t({"op", "calls", "first seq", "reason"});
  t.align(3, report::Align::Left);
  for (const auto& key : order) {
    const Group& g = groups[key];
    t.add_row({key.first, std::to_string(g.calls), std::to_string(g.first_seq), key.second});
  }
  return t.render();
}

}  // namespace

std::string render_replay_console(const ReplayResult& r, int64_t top) {
  std::string out = "op-check --from-dump " + r.dump + ": recorded on " + r.run_device + ", replayed on " + r.device +
                    " (" + (r.precision == "as recorded" ? "dtypes as recorded" : r.precision) +
                    ") against the CPU in float64\n";
  out += std::to_string(r.calls) + " operator calls: " + std::to_string(r.replayed) + " replayed (" +
         std::to_string(r.passed) + " passed, " + std::to_string(r.failed) + " failed), " +
         std::to_string(r.not_replayed) + " not replayed\n";
  char speed[128];
  std::snprintf(speed, sizeof speed, "%.2f s, %.0f calls/s, %lld arrays read\n", r.seconds, r.calls_per_second(),
                static_cast<long long>(r.files_loaded));
  out += speed;
  if (!r.problems.empty())
    out += std::to_string(r.problems.size()) + " index line(s) could not be read; first: " + r.problems.front() + "\n";
  size_t shown = 0, replayed = 0;
  const std::string worst = worst_table(r, top, &shown, &replayed);
  if (replayed > 0) {
    out += "\n" + (shown < replayed ? "worst " + std::to_string(shown) + " of " + std::to_string(replayed)
                                    : "all " + std::to_string(replayed)) +
           " replayed calls by max rel / tolerance (out: the call's worst output):\n" + worst;
  }
  if (r.not_replayed > 0) out += "\nnot replayed:\n" + not_replayed_table(r);
  if (r.replayed == 0) out += "\nnothing was replayed: nothing is checked\n";
  return out;
}

nlohmann::json replay_to_json(const ReplayResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j = {{"step", row.step},     {"seq", row.seq},       {"record", row.record}, {"op", row.op},
                        {"phase", row.phase},   {"module", row.module}, {"source", row.source},
                        {"status", status_name(row.status)}};
    if (!row.reason.empty()) j["reason"] = row.reason;
    nlohmann::json outs = nlohmann::json::array();
    for (const auto& o : row.outputs) {
      nlohmann::json oj = {{"index", o.index},         {"dtype", o.dtype},
                           {"shape", o.shape},         {"max_abs", number_or_null(o.max_abs)},
                           {"max_rel", number_or_null(o.max_rel)}, {"cosine", number_or_null(o.cosine)},
                           {"tolerance", o.tolerance}, {"pass", o.pass}};
      oj["run_max_rel"] = o.run_max_rel ? number_or_null(*o.run_max_rel) : nlohmann::json(nullptr);
      if (o.scale > 0) oj["scale"] = o.scale;
      outs.push_back(oj);
    }
    j["outputs"] = outs;
    rows.push_back(j);
  }
  return {{"schema_version", report::kJsonSchemaVersion},
          {"kind", "op_check"},
          {"mode", "from_dump"},
          {"dump", r.dump},
          {"run_device", r.run_device},
          {"device", r.device},
          {"precision", r.precision},
          {"calls", r.calls},
          {"replayed", r.replayed},
          {"passed", r.passed},
          {"failed", r.failed},
          {"not_replayed", r.not_replayed},
          {"seconds", r.seconds},
          {"cpu_seconds", r.cpu_seconds},
          {"calls_per_second", r.calls_per_second()},
          {"arrays_read", r.files_loaded},
          {"problems", r.problems},
          {"rows", rows}};
}

}  // namespace crosstrain::opcheck
