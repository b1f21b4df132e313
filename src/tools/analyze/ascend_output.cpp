#include "tools/analyze/ascend_output.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/table.h"
#include "report/units.h"

namespace crosstrain::analyze {

namespace {

namespace fs = std::filesystem;

// Side files are summaries: anything bigger is not one of them.
constexpr uintmax_t kMaxSideFileBytes = uintmax_t{2} << 30;

std::string trim(std::string s) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  size_t a = 0, b = s.size();
  while (a < b && ws(s[a])) ++a;
  while (b > a && ws(s[b - 1])) --b;
  return s.substr(a, b - a);
}

// One CSV record from `in` (quoted fields may hold commas and doubled quotes; not newlines).
bool csv_record(std::istream& in, std::vector<std::string>& cells) {
  std::string line;
  if (!std::getline(in, line)) return false;
  cells.clear();
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(trim(cur)), cur.clear();
    } else {
      cur += c;
    }
  }
  cells.push_back(trim(cur));
  return true;
}

// A CSV table with columns found by any of their names.
struct CsvTable {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  int col(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      for (size_t i = 0; i < head.size(); ++i)
        if (head[i] == n) return static_cast<int>(i);
    return -1;
  }
  std::string cell(size_t r, int c) const { return c >= 0 && static_cast<size_t>(c) < rows[r].size() ? rows[r][static_cast<size_t>(c)] : ""; }
  double num(size_t r, int c) const {
    std::string s = cell(r, c);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    return end != s.c_str() && std::isfinite(v) ? v : 0;
  }
};

bool read_csv(const fs::path& p, CsvTable& t, std::vector<std::string>& notes) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  if (fs::file_size(p, ec) > kMaxSideFileBytes) {
    notes.push_back(p.string() + ": too large for a summary file, skipped");
    return false;
  }
  std::ifstream in(p);
  std::vector<std::string> cells;
  if (!csv_record(in, cells)) return false;
  if (!cells.empty() && cells[0].rfind("\xEF\xBB\xBF", 0) == 0) cells[0] = cells[0].substr(3);  // UTF-8 BOM
  t.head = cells;
  while (csv_record(in, cells))
    if (!(cells.size() == 1 && cells[0].empty())) t.rows.push_back(cells);
  return true;
}

bool read_json(const fs::path& p, nlohmann::json& j, std::vector<std::string>& notes) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  if (fs::file_size(p, ec) > kMaxSideFileBytes) {
    notes.push_back(p.string() + ": too large for a summary file, skipped");
    return false;
  }
  std::ifstream in(p);
  j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    notes.push_back(p.string() + ": not the JSON object expected, skipped");
    return false;
  }
  return true;
}

double jnum(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : 0;
}

void read_kernel_details(const fs::path& dir, AscendOutput& out) {
  CsvTable t;
  if (!read_csv(dir / "kernel_details.csv", t, out.notes)) return;
  int name = t.col({"Name", "Op Name"}), core = t.col({"Accelerator Core", "Task Type"});
  int dur = t.col({"Duration(us)", "Task Duration(us)"});
  if (name < 0 || dur < 0) {
    out.notes.push_back((dir / "kernel_details.csv").string() + ": no Name/Duration(us) columns, skipped");
    return;
  }
  out.has_kernel_details = true;
  std::map<std::string, NamedTotal> cores;
  std::map<std::string, KernelStats> kernels;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    double d = t.num(r, dur);
    std::string c = core >= 0 ? t.cell(r, core) : "";
    auto& ce = cores[c];
    ce.name = c.empty() ? "(unknown core)" : c, ++ce.count, ce.total_us += d;
    auto& k = kernels[t.cell(r, name)];
    if (k.count == 0) k.name = t.cell(r, name), k.min_us = d, k.max_us = d;
    ++k.count, k.total_us += d, k.min_us = std::min(k.min_us, d), k.max_us = std::max(k.max_us, d);
  }
  for (auto& [n, e] : cores) out.cores.push_back(e);
  std::sort(out.cores.begin(), out.cores.end(), [](const NamedTotal& a, const NamedTotal& b) { return a.total_us > b.total_us; });
  for (auto& [n, k] : kernels) out.kernels.push_back(k);
  std::sort(out.kernels.begin(), out.kernels.end(), [](const KernelStats& a, const KernelStats& b) { return a.total_us > b.total_us; });
  if (out.kernels.size() > 50) out.kernels.resize(50);
}

void read_op_statistic(const fs::path& dir, AscendOutput& out) {
  CsvTable t;
  if (!read_csv(dir / "op_statistic.csv", t, out.notes)) return;
  int type = t.col({"OP Type"}), core = t.col({"Core Type"}), count = t.col({"Count"}), total = t.col({"Total Time(us)"});
  if (type < 0 || total < 0) return out.notes.push_back((dir / "op_statistic.csv").string() + ": unknown columns, skipped");
  out.has_op_statistic = true;
  for (size_t r = 0; r < t.rows.size(); ++r)
    out.op_statistic.push_back({t.cell(r, type) + (core >= 0 ? " (" + t.cell(r, core) + ")" : ""),
                                static_cast<int64_t>(t.num(r, count)), t.num(r, total)});
  std::sort(out.op_statistic.begin(), out.op_statistic.end(),
            [](const NamedTotal& a, const NamedTotal& b) { return a.total_us > b.total_us; });
}

void read_step_trace(const fs::path& dir, AscendOutput& out) {
  CsvTable t;
  if (!read_csv(dir / "step_trace_time.csv", t, out.notes)) return;
  int step = t.col({"Step"}), comp = t.col({"Computing"}), nov = t.col({"Communication(Not Overlapped)"});
  int ov = t.col({"Overlapped"}), comm = t.col({"Communication"}), fr = t.col({"Free"});
  if (comp < 0 || fr < 0) return out.notes.push_back((dir / "step_trace_time.csv").string() + ": unknown columns, skipped");
  out.has_step_trace = true;
  for (size_t r = 0; r < t.rows.size(); ++r)
    out.steps.push_back({step >= 0 ? t.cell(r, step) : std::to_string(r), t.num(r, comp), t.num(r, nov), t.num(r, ov),
                         t.num(r, comm), t.num(r, fr)});
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
  if (!read_json(dir / "communication.json", j, out.notes)) return;
  out.has_communication = true;
  std::map<std::string, AscendCollective> ops;
  for_each_op(j, [&](const std::string& op, const nlohmann::json& v) {
    if (op == "Total Op Info" || !v.is_object() || !v.contains("Communication Time Info")) return;
    const auto& ti = v["Communication Time Info"];
    if (!ti.is_object()) return;
    auto& c = ops[op];
    c.name = op;
    c.elapse_ms += jnum(ti, "Elapse Time(ms)"), c.transit_ms += jnum(ti, "Transit Time(ms)");
    c.wait_ms += jnum(ti, "Wait Time(ms)"), c.sync_ms += jnum(ti, "Synchronization Time(ms)");
  });
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
  for_each_op(j, [&](const std::string& op, const nlohmann::json& v) {
    if (!v.is_object()) return;
    for (const auto& [link, l] : v.items()) {
      if (!l.is_object() || link.find('-') == std::string::npos) continue;
      std::string transport = l.contains("Transport Type") && l["Transport Type"].is_string() ? l["Transport Type"].get<std::string>() : "";
      out.links.push_back({op, link, transport, jnum(l, "Transit Size(MB)"), jnum(l, "Transit Time(ms)"),
                           jnum(l, "Bandwidth(GB/s)")});
    }
  });
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
          {"comm_transit_ms", a.comm_transit_ms}, {"links", links}, {"notes", a.notes}};
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
    }
    for (const auto& n : r.notes) out << "note: " << n << "\n";
  }
  // Cluster views.
  std::vector<size_t> comm;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].has_communication) comm.push_back(i);
  if (comm.size() > 1) {
    report::Table t({"Rank", "Comm. elapse", "Transit", "Wait", "Wait ratio"});
    size_t least_wait = comm[0];
    for (size_t i : comm) {
      const auto& r = ranks[i];
      t.add_row({rank_ids.size() > i ? std::to_string(rank_ids[i]) : std::to_string(i), report::format_fixed(r.comm_elapse_ms, 3) + " ms",
                 report::format_fixed(r.comm_transit_ms, 3) + " ms", report::format_fixed(r.comm_wait_ms, 3) + " ms",
                 report::format_percent(r.comm_elapse_ms > 0 ? r.comm_wait_ms / r.comm_elapse_ms : 0)});
      if (r.comm_wait_ms < ranks[least_wait].comm_wait_ms) least_wait = i;
    }
    out << "Communication by rank (communication.json)\n" << t.render()
        << "Slow rank: " << (rank_ids.size() > least_wait ? std::to_string(rank_ids[least_wait]) : std::to_string(least_wait))
        << " (waits least in collectives: the others wait for it to arrive)\n";
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
