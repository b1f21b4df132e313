#include "tools/analyze/ascend_output.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#include "report/input_file.h"
#include "report/json_scanner.h"
#include "report/json_tree.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/analyze/csv_reader.h"
#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

namespace {

namespace fs = std::filesystem;

// Side files are summaries: anything bigger is not one of them.
constexpr uintmax_t kMaxSideFileBytes = uintmax_t{2} << 30;

// Columns of a header found by any of their names.
int column(const std::vector<std::string>& head, std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (size_t i = 0; i < head.size(); ++i)
      if (head[i] == n) return static_cast<int>(i);
  return -1;
}

// Reads a CSV side file record by record: `on_header(head)` says whether the columns are usable,
// `on_row(cells, record)` takes each data record. Blank records are skipped.
template <class Header, class Row>
bool read_csv(const fs::path& p, std::vector<std::string>& notes, Header on_header, Row on_row) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  if (fs::file_size(p, ec) > kMaxSideFileBytes) {
    notes.push_back(p.string() + ": too large for a summary file, skipped");
    return false;
  }
  CsvReader csv(p.string());
  std::vector<std::string> cells;
  if (!csv.ok() || !csv.next(cells)) return false;
  if (!on_header(cells)) return false;
  while (csv.next(cells))
    if (!(cells.size() == 1 && cells[0].empty())) on_row(cells, csv.record());
  if (csv.unterminated())
    notes.push_back(p.string() + ": record " + std::to_string(csv.record()) +
                    " opens a quoted cell that never closes (truncated?); read to the end of the file");
  return true;
}

std::string cell(const std::vector<std::string>& cells, int c) {
  return c >= 0 && static_cast<size_t>(c) < cells.size() ? cells[static_cast<size_t>(c)] : "";
}

bool read_json(const fs::path& p, nlohmann::json& j, std::vector<std::string>& notes) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  if (fs::file_size(p, ec) > kMaxSideFileBytes) {
    notes.push_back(p.string() + ": too large for a summary file, skipped");
    return false;
  }
  // Validated and costed before it becomes a tree: nesting and density cannot take the memory.
  try {
    const std::string text = report::read_regular_file(p.string(), kMaxSideFileBytes, "summary file");
    j = report::parse_json_tree(text, p.string(), report::tree_budget_for(text.size()));
  } catch (const report::JsonFormatError& e) {
    notes.push_back(p.string() + ": not valid JSON at byte " + std::to_string(e.offset()) + " (" + e.reason() +
                    "), skipped");
    return false;
  } catch (const nlohmann::json::parse_error& e) {
    notes.push_back(p.string() + ": not valid JSON at byte " + std::to_string(e.byte) + " (truncated?), skipped");
    return false;
  } catch (const std::runtime_error& e) {
    notes.push_back(std::string(e.what()) + ", skipped");
    return false;
  }
  if (!j.is_object()) {
    notes.push_back(p.string() + ": not the JSON object expected, skipped");
    return false;
  }
  return true;
}

// The largest plausible figure of a side file: a duration past kMaxDurationUs (11 days) is corrupt;
// sizes (MB) and bandwidths (GB/s) get the same bound, far beyond any real one.
constexpr double kMaxDurationMs = kMaxDurationUs / 1e3;
constexpr double kMaxFigure = 1e12;

// `o[key]` as a finite non-negative number up to `max_value`, into `v`. Anything else (absent, a
// string such as "0.4", null, true, a negative or implausibly large number) is false and counted
// in `bad` under `where` and the key: a value that is not there is never read as 0.
bool json_figure(const nlohmann::json& o, const char* key, double max_value, double& v, CsvBadCells& bad,
                 const std::string& where) {
  const auto it = o.find(key);
  const char* why = nullptr;
  std::string shown;
  if (it == o.end()) {
    why = "absent";
  } else if (it->is_number()) {
    v = it->get<double>();
    why = !std::isfinite(v) ? "not finite" : v < 0 ? "negative" : v > max_value ? "implausibly large" : nullptr;
    if (why) shown = it->dump();
  } else {
    why = it->is_string()    ? "a string, not a number"
          : it->is_null()    ? "null, not a number"
          : it->is_boolean() ? "true or false, not a number"
                             : "not a number";
    shown = it->is_structured() ? (it->is_object() ? "{...}" : "[...]") : it->dump();
  }
  if (!why) return true;
  bad.add_at(where + " " + key, shown, why);
  return false;
}

void read_kernel_details(const fs::path& dir, AscendOutput& out) {
  const fs::path file = dir / "kernel_details.csv";
  int name = -1, core = -1, dur = -1;
  std::string dur_name;
  CsvBadCells bad(file.string());
  std::map<std::string, NamedTotal> cores;
  std::map<std::string, KernelStats> kernels;
  auto header = [&](const std::vector<std::string>& head) {
    name = column(head, {"Name", "Op Name"}), core = column(head, {"Accelerator Core", "Task Type"});
    dur = column(head, {"Duration(us)", "Task Duration(us)"});
    if (name < 0 || dur < 0) {
      out.notes.push_back(file.string() + ": no Name/Duration(us) columns, skipped");
      return false;
    }
    dur_name = head[static_cast<size_t>(dur)];
    return true;
  };
  auto row = [&](const std::vector<std::string>& cells, size_t record) {
    double d = 0;
    const char* why = "";
    if (!csv_decimal(cell(cells, dur), true, d, why, kMaxDurationUs)) return bad.add(record, dur_name, cell(cells, dur), why);
    const std::string c = cell(cells, core), n = cell(cells, name);
    auto& ce = cores[c];
    ce.name = c.empty() ? "(unknown core)" : c, ++ce.count, ce.total_us += d;
    auto& k = kernels[n];
    if (k.count == 0) k.name = n, k.min_us = d, k.max_us = d;
    ++k.count, k.total_us += d, k.min_us = std::min(k.min_us, d), k.max_us = std::max(k.max_us, d);
  };
  if (!read_csv(file, out.notes, header, row)) return;
  out.has_kernel_details = true;
  bad.note_to(out.notes, "those rows left out");
  for (auto& [n, e] : cores) out.cores.push_back(e);
  std::sort(out.cores.begin(), out.cores.end(), [](const NamedTotal& a, const NamedTotal& b) { return a.total_us > b.total_us; });
  for (auto& [n, k] : kernels) out.kernels.push_back(k);
  std::sort(out.kernels.begin(), out.kernels.end(), [](const KernelStats& a, const KernelStats& b) { return a.total_us > b.total_us; });
  if (out.kernels.size() > 50) out.kernels.resize(50);
}

void read_op_statistic(const fs::path& dir, AscendOutput& out) {
  const fs::path file = dir / "op_statistic.csv";
  int type = -1, core = -1, count = -1, total = -1;
  CsvBadCells bad(file.string());
  auto header = [&](const std::vector<std::string>& head) {
    type = column(head, {"OP Type"}), core = column(head, {"Core Type"}), count = column(head, {"Count"});
    total = column(head, {"Total Time(us)"});
    if (type >= 0 && total >= 0) return true;
    out.notes.push_back(file.string() + ": unknown columns, skipped");
    return false;
  };
  auto row = [&](const std::vector<std::string>& cells, size_t record) {
    double n = 0, us = 0;
    const char* why = "";
    if (count >= 0 && !csv_decimal(cell(cells, count), true, n, why)) return bad.add(record, "Count", cell(cells, count), why);
    if (!csv_decimal(cell(cells, total), true, us, why, kMaxDurationUs))
      return bad.add(record, "Total Time(us)", cell(cells, total), why);
    out.op_statistic.push_back({cell(cells, type) + (core >= 0 ? " (" + cell(cells, core) + ")" : ""),
                                static_cast<int64_t>(std::min(n, 9e18)), us});
  };
  if (!read_csv(file, out.notes, header, row)) return;
  out.has_op_statistic = true;
  bad.note_to(out.notes, "those rows left out");
  std::sort(out.op_statistic.begin(), out.op_statistic.end(),
            [](const NamedTotal& a, const NamedTotal& b) { return a.total_us > b.total_us; });
}

void read_step_trace(const fs::path& dir, AscendOutput& out) {
  const fs::path file = dir / "step_trace_time.csv";
  std::vector<std::string> head;
  int step = -1;
  std::vector<std::pair<int, double AscendStepRow::*>> numbers;
  CsvBadCells bad(file.string());
  auto header = [&](const std::vector<std::string>& h) {
    head = h;
    step = column(h, {"Step"});
    numbers = {{column(h, {"Computing"}), &AscendStepRow::computing_us},
               {column(h, {"Communication(Not Overlapped)"}), &AscendStepRow::comm_not_overlapped_us},
               {column(h, {"Overlapped"}), &AscendStepRow::overlapped_us},
               {column(h, {"Communication"}), &AscendStepRow::comm_us},
               {column(h, {"Free"}), &AscendStepRow::free_us}};
    if (numbers[0].first >= 0 && numbers[4].first >= 0) return true;
    out.notes.push_back(file.string() + ": unknown columns, skipped");
    return false;
  };
  auto row = [&](const std::vector<std::string>& cells, size_t record) {
    AscendStepRow r;
    r.step = step >= 0 ? cell(cells, step) : std::to_string(out.steps.size());
    for (const auto& [col, field] : numbers) {
      if (col < 0) continue;
      const char* why = "";
      if (!csv_decimal(cell(cells, col), true, r.*field, why, kMaxDurationUs))
        return bad.add(record, head[static_cast<size_t>(col)], cell(cells, col), why);
    }
    out.steps.push_back(r);
  };
  if (!read_csv(file, out.notes, header, row)) return;
  out.has_step_trace = true;
  bad.note_to(out.notes, "those steps left out");
}

// Both files: {"stepN": {"collective": {op: ...}, "p2p": {op: ...}}}; older files put the ops
// directly under the step.
template <class F>
void for_each_op(const nlohmann::json& j, F f) {
  for (const auto& [step, groups] : j.items()) {
    if (!groups.is_object()) continue;
    bool grouped = groups.contains("collective") || groups.contains("p2p");
    if (!grouped) {
      for (const auto& [op, v] : groups.items()) f(op, v);
      continue;
    }
    for (const auto& [g, ops] : groups.items())
      if (ops.is_object())
        for (const auto& [op, v] : ops.items()) f(op, v);
  }
}

void read_communication(const fs::path& dir, AscendOutput& out) {
  nlohmann::json j;
  const fs::path file = dir / "communication.json";
  if (!read_json(file, j, out.notes)) return;
  out.has_communication = true;
  CsvBadCells bad(file.string(), "value");
  std::map<std::string, AscendCollective> ops;
  for_each_op(j, [&](const std::string& op, const nlohmann::json& v) {
    if (op == "Total Op Info" || !v.is_object() || !v.contains("Communication Time Info")) return;
    const auto& ti = v["Communication Time Info"];
    if (!ti.is_object()) return;
    auto& c = ops[op];
    c.name = op;
    ++out.comm_entries;
    for (auto [key, sum, left_out] : {std::tuple{"Elapse Time(ms)", &c.elapse_ms, &out.comm_elapse_left_out},
                                      std::tuple{"Transit Time(ms)", &c.transit_ms, &out.comm_transit_left_out},
                                      std::tuple{"Wait Time(ms)", &c.wait_ms, &out.comm_wait_left_out}}) {
      double ms = 0;
      if (json_figure(ti, key, kMaxDurationMs, ms, bad, op)) *sum += ms;
      else ++*left_out;
    }
    double sync = 0;  // shown in the JSON only; older files may lack it
    if (ti.contains("Synchronization Time(ms)") && json_figure(ti, "Synchronization Time(ms)", kMaxDurationMs, sync, bad, op))
      c.sync_ms += sync;
  });
  bad.note_to(out.notes, "left out of the sums (never read as 0)");
  for (auto& [n, c] : ops) {
    out.collectives.push_back(c);
    out.comm_elapse_ms += c.elapse_ms, out.comm_wait_ms += c.wait_ms, out.comm_transit_ms += c.transit_ms;
  }
  std::sort(out.collectives.begin(), out.collectives.end(),
            [](const AscendCollective& a, const AscendCollective& b) { return a.elapse_ms > b.elapse_ms; });
}

void read_matrix(const fs::path& dir, AscendOutput& out) {
  nlohmann::json j;
  if (!read_json(dir / "communication_matrix.json", j, out.notes)) return;
  out.has_matrix = true;
  CsvBadCells bad((dir / "communication_matrix.json").string(), "value");
  for_each_op(j, [&](const std::string& op, const nlohmann::json& v) {
    if (!v.is_object()) return;
    for (const auto& [link, l] : v.items()) {
      if (!l.is_object() || link.find('-') == std::string::npos) continue;
      std::string transport = l.contains("Transport Type") && l["Transport Type"].is_string() ? l["Transport Type"].get<std::string>() : "";
      AscendLink a{op, link, transport};
      const std::string where = op + " " + link;
      if (json_figure(l, "Transit Size(MB)", kMaxFigure, a.size_mb, bad, where) &&
          json_figure(l, "Transit Time(ms)", kMaxDurationMs, a.time_ms, bad, where) &&
          json_figure(l, "Bandwidth(GB/s)", kMaxFigure, a.bandwidth_gbps, bad, where))
        out.links.push_back(std::move(a));
    }
  });
  bad.note_to(out.notes, "those links left out");
  // Slowest first; links that moved nothing say nothing about speed.
  std::stable_sort(out.links.begin(), out.links.end(), [](const AscendLink& a, const AscendLink& b) {
    bool ma = a.size_mb > 0, mb = b.size_mb > 0;
    if (ma != mb) return ma;
    return a.bandwidth_gbps < b.bandwidth_gbps;
  });
}

}  // namespace

std::string ascend_output_dir_of(const std::string& trace_path) {
  fs::path p(trace_path);
  return p.parent_path().filename() == "ASCEND_PROFILER_OUTPUT" ? p.parent_path().string() : "";
}

AscendOutput read_ascend_output(const std::string& dir) {
  AscendOutput out;
  out.folder = dir;
  read_kernel_details(dir, out);
  read_op_statistic(dir, out);
  read_step_trace(dir, out);
  read_communication(dir, out);
  read_matrix(dir, out);
  return out;
}

namespace {

// "ProfilerStep#12" or "12" -> 12; -1 otherwise.
long step_number(const std::string& label) {
  const size_t hash = label.rfind('#');
  const std::string digits = hash == std::string::npos ? label : label.substr(hash + 1);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stol(digits);
}

}  // namespace

void compare_with_trace(AscendOutput& out, const TraceAnalysis& trace) {
  std::map<long, const StepBreakdown*> by_number;
  for (const auto& s : trace.steps)
    if (long n = step_number(s.label); n >= 0) by_number[n] = &s;
  AscendAgreement g;
  double step_us = 0;
  for (const auto& row : out.steps) {
    auto it = by_number.find(step_number(row.step));
    if (it == by_number.end()) continue;
    const StepBreakdown& s = *it->second;
    ++g.steps;
    step_us += s.duration_us;
    g.computing_trace_us += s.category_us[static_cast<size_t>(StepCategory::Kernel)];
    g.comm_trace_us += s.comm_us, g.overlapped_trace_us += s.comm_overlapped_us;
    g.computing_csv_us += row.computing_us, g.comm_csv_us += row.comm_us, g.overlapped_csv_us += row.overlapped_us;
  }
  auto off = [&](double ours, double theirs) {
    const double base = std::max(theirs, 0.01 * step_us);
    return base > 0 ? std::fabs(ours - theirs) / base : 0.0;
  };
  g.worst = std::max({off(g.computing_trace_us, g.computing_csv_us), off(g.comm_trace_us, g.comm_csv_us),
                      off(g.overlapped_trace_us, g.overlapped_csv_us)});
  out.agreement = g;
}

nlohmann::json ascend_output_to_json(const AscendOutput& a) {
  using nlohmann::json;
  auto named = [](const std::vector<NamedTotal>& v) {
    json arr = json::array();
    for (const auto& n : v) arr.push_back({{"name", n.name}, {"count", n.count}, {"total_us", n.total_us}});
    return arr;
  };
  json kernels = json::array(), steps = json::array(), colls = json::array(), links = json::array();
  for (const auto& k : a.kernels)
    kernels.push_back({{"name", k.name}, {"count", k.count}, {"total_us", k.total_us}, {"min_us", k.min_us}, {"max_us", k.max_us}});
  for (const auto& s : a.steps)
    steps.push_back({{"step", s.step}, {"computing_us", s.computing_us}, {"comm_not_overlapped_us", s.comm_not_overlapped_us},
                     {"overlapped_us", s.overlapped_us}, {"comm_us", s.comm_us}, {"free_us", s.free_us}});
  for (const auto& c : a.collectives)
    colls.push_back({{"name", c.name}, {"elapse_ms", c.elapse_ms}, {"transit_ms", c.transit_ms}, {"wait_ms", c.wait_ms},
                     {"sync_ms", c.sync_ms}});
  for (const auto& l : a.links)
    links.push_back({{"collective", l.collective}, {"link", l.link}, {"transport", l.transport}, {"size_mb", l.size_mb},
                     {"time_ms", l.time_ms}, {"bandwidth_gbps", l.bandwidth_gbps}});
  return {{"folder", a.folder}, {"cores", named(a.cores)}, {"kernels", kernels}, {"op_statistic", named(a.op_statistic)},
          {"steps", steps}, {"collectives", colls}, {"comm_elapse_ms", a.comm_elapse_ms}, {"comm_wait_ms", a.comm_wait_ms},
          {"comm_transit_ms", a.comm_transit_ms},
          {"comm_left_out", {{"elapse", a.comm_elapse_left_out}, {"transit", a.comm_transit_left_out}, {"wait", a.comm_wait_left_out}}},
          {"links", links}, {"notes", a.notes},
          {"agreement", {{"steps", a.agreement.steps}, {"computing_trace_us", a.agreement.computing_trace_us},
                         {"computing_csv_us", a.agreement.computing_csv_us}, {"comm_trace_us", a.agreement.comm_trace_us},
                         {"comm_csv_us", a.agreement.comm_csv_us},
                         {"overlapped_trace_us", a.agreement.overlapped_trace_us},
                         {"overlapped_csv_us", a.agreement.overlapped_csv_us}, {"worst", a.agreement.worst}}}};
}

std::string render_ascend_console(const std::vector<AscendOutput>& ranks, const std::vector<int>& rank_ids) {
  using report::format_us;
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = ranks[i];
    std::string who = rank_ids.size() > i && rank_ids[i] >= 0 ? "rank " + std::to_string(rank_ids[i]) : r.folder;
    if (r.has_kernel_details) {
      out << "Ascend kernel_details.csv (" << who << "): by accelerator core:";
      for (const auto& c : r.cores) out << " " << c.name << " " << report::format_count(c.count) << " tasks " << format_us(c.total_us) << ";";
      out << "\n";
    }
    if (r.has_step_trace) {
      report::Table t({"Step", "Computing", "Comm. not overlapped", "Overlapped", "Free"});
      for (const auto& s : r.steps)
        t.add_row({s.step, format_us(s.computing_us), format_us(s.comm_not_overlapped_us), format_us(s.overlapped_us),
                   format_us(s.free_us)});
      out << "Ascend step_trace_time.csv (" << who << ")\n" << t.render();
      const AscendAgreement& g = r.agreement;
      if (g.steps > 0) {
        auto pair = [](double ours, double theirs) { return format_us(ours) + " / " + format_us(theirs); };
        out << "  this trace / the profiler over " << g.steps << " step(s): computing "
            << pair(g.computing_trace_us, g.computing_csv_us) << ", communication " << pair(g.comm_trace_us, g.comm_csv_us)
            << ", overlapped " << pair(g.overlapped_trace_us, g.overlapped_csv_us) << "\n";
        if (g.worst > kAscendAgreementTolerance)
          out << "note: they differ by up to " << report::format_percent(g.worst)
              << ": the trace holds tasks this version does not classify as the profiler does; trust "
                 "step_trace_time.csv for these figures\n";
      }
    }
    for (const auto& n : r.notes) out << "note: " << n << "\n";
  }
  // Cluster views.
  std::vector<size_t> comm;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].has_communication) comm.push_back(i);
  if (comm.size() > 1) {
    auto id = [&](size_t i) { return rank_ids.size() > i ? std::to_string(rank_ids[i]) : std::to_string(i); };
    auto ms = [](const AscendOutput& r, double v, int64_t left_out) {
      if (left_out == 0) return report::format_fixed(v, 3) + " ms";
      return (left_out < r.comm_entries ? report::format_fixed(v, 3) + " ms" : std::string("n/a")) + " (" +
             std::to_string(left_out) + " left out)";
    };
    report::Table t({"Rank", "Comm. elapse", "Transit", "Wait", "Wait ratio"});
    std::optional<size_t> least_wait;
    std::string not_judged;
    for (size_t i : comm) {
      const auto& r = ranks[i];
      const bool ratio_known = r.comm_elapse_left_out == 0 && r.comm_wait_left_out == 0 && r.comm_elapse_ms > 0;
      t.add_row({id(i), ms(r, r.comm_elapse_ms, r.comm_elapse_left_out), ms(r, r.comm_transit_ms, r.comm_transit_left_out),
                 ms(r, r.comm_wait_ms, r.comm_wait_left_out),
                 ratio_known ? report::format_percent(r.comm_wait_ms / r.comm_elapse_ms) : "n/a"});
      // A wait time left out would make the rank's sum too small: it would look like the straggler.
      if (r.comm_wait_left_out > 0 || r.collectives.empty()) {
        not_judged += (not_judged.empty() ? "" : ", ") + id(i) +
                      (r.collectives.empty() ? " (no collective)"
                                             : " (" + std::to_string(r.comm_wait_left_out) + " wait time(s) left out)");
        continue;
      }
      if (!least_wait || r.comm_wait_ms < ranks[*least_wait].comm_wait_ms) least_wait = i;
    }
    size_t judged = 0;
    for (size_t i : comm) judged += ranks[i].comm_wait_left_out == 0 && !ranks[i].collectives.empty();
    out << "Communication by rank (communication.json)\n" << t.render();
    if (judged >= 2)
      out << "Slow rank: " << id(*least_wait) << " (waits least in collectives: the others wait for it to arrive)"
          << (not_judged.empty() ? "" : "; not judged: rank " + not_judged) << "\n";
    else
      out << "Slow rank: not given: fewer than two ranks have valid wait times (not judged: rank " << not_judged
          << "; see the notes)\n";
  }
  std::vector<std::pair<int, AscendLink>> links;
  for (size_t i = 0; i < ranks.size(); ++i)
    for (const auto& l : ranks[i].links) links.emplace_back(rank_ids.size() > i ? rank_ids[i] : static_cast<int>(i), l);
  if (!links.empty()) {
    std::stable_sort(links.begin(), links.end(), [](const auto& a, const auto& b) {
      bool ma = a.second.size_mb > 0, mb = b.second.size_mb > 0;
      if (ma != mb) return ma;
      return a.second.bandwidth_gbps < b.second.bandwidth_gbps;
    });
    report::Table t({"Rank", "Link", "Transport", "Size", "Time", "Bandwidth", "Collective"});
    for (size_t i = 0; i < links.size() && i < 5; ++i) {
      const auto& [rank, l] = links[i];
      t.add_row({std::to_string(rank), l.link, l.transport, report::format_fixed(l.size_mb, 2) + " MB",
                 report::format_fixed(l.time_ms, 3) + " ms", report::format_fixed(l.bandwidth_gbps, 2) + " GB/s", l.collective});
    }
    out << "Slowest links (communication_matrix.json)\n" << t.render();
  }
  return out.str();
}

}  // namespace crosstrain::analyze
