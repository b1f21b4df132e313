#include "tools/run/run_summary.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/json_tree.h"

namespace fs = std::filesystem;

namespace crosstrain::run {

namespace {

std::string str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

int64_t num(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : 0;
}

std::string where(const nlohmann::json& f) {
  std::string place = str(f, "user_source");
  if (place.empty()) place = str(f, "source");
  std::string text = str(f, "record");
  if (!str(f, "module").empty()) text += " in " + str(f, "module");
  if (!place.empty()) text += ", " + place + (str(f, "code").empty() ? "" : ": " + str(f, "code"));
  return text;
}

ProcessReport parse_report(const nlohmann::json& j) {
  ProcessReport r;
  r.pid = num(j, "pid");
  if (j.contains("rank") && j["rank"].is_number_integer()) r.rank = j["rank"].get<int64_t>();
  r.steps = num(j, "steps");
  r.torch_version = str(j, "torch");
  if (j.contains("dump") && j["dump"].is_object()) {
    const auto& d = j["dump"];
    r.dump_dir = str(d, "dir");
    r.records = num(d, "records");
    r.bytes = num(d, "bytes");
    r.dump_note = str(d, "note");
  }
  if (j.contains("seed") && j["seed"].is_object() && j["seed"].contains("set") && j["seed"]["set"].is_array())
    for (const auto& s : j["seed"]["set"])
      if (s.is_string()) r.seeded.push_back(s.get<std::string>());
  if (j.contains("profile") && j["profile"].is_object()) {
    r.profiled = true;
    const auto& p = j["profile"];
    if (p.contains("traces") && p["traces"].is_array())
      for (const auto& t : p["traces"])
        if (t.is_string()) r.traces.push_back(t.get<std::string>());
  }
  if (j.contains("nonfinite") && j["nonfinite"].is_object()) {
    const auto& f = j["nonfinite"];
    r.nonfinite = where(f) + " at step " + std::to_string(num(f, "step")) + " (" +
                  std::to_string(num(f, "nan_count")) + " NaN, " + std::to_string(num(f, "inf_count")) + " Inf)" +
                  (str(f, "note").empty() ? "" : ": " + str(f, "note"));
  }
  if (j.contains("written_inf") && j["written_inf"].is_object()) {
    const auto& w = j["written_inf"];
    const std::string place = str(w, "source");
    r.written_inf = std::to_string(num(w, "records")) + " operator outputs carry infinities the program wrote, first " +
                    str(w, "first") + " at step " + std::to_string(num(w, "step")) +
                    (place.empty() ? "" : ", " + place + (str(w, "code").empty() ? "" : ": " + str(w, "code")));
  }
  if (j.contains("scaler_skips") && j["scaler_skips"].is_object()) {
    const auto& k = j["scaler_skips"];
    std::ostringstream scale;
    if (k.contains("last_scale") && k["last_scale"].is_number()) scale << k["last_scale"].get<double>();
    r.scaler_skips = std::to_string(num(k, "steps")) + " step(s) skipped by the loss scaler on overflow, first " +
                     str(k, "first") + " at step " + std::to_string(num(k, "first_step")) +
                     (scale.str().empty() ? "" : " (last at scale " + scale.str() + ")");
  }
  r.dump_error = str(j, "dump_error");
  r.refused = !str(j, "refused").empty();
  r.closed = j.contains("closed") && j["closed"].is_boolean() && j["closed"].get<bool>();
  if (j.contains("skipped") && j["skipped"].is_object())
    for (const auto& [reason, count] : j["skipped"].items())
      if (count.is_number_integer())
        r.skipped += (r.skipped.empty() ? "" : ", ") + std::to_string(count.get<int64_t>()) + " " + reason;
  if (j.contains("fp16_overflow") && j["fp16_overflow"].is_object()) {
    const auto& f = j["fp16_overflow"];
    std::ostringstream peak;
    peak << (f.contains("max_abs") && f["max_abs"].is_number() ? f["max_abs"].get<double>() : 0.0);
    r.fp16_overflow = where(f) + " at step " + std::to_string(num(f, "step")) + " reaches " + peak.str();
  }
  return r;
}

std::string human_bytes(int64_t b) {
  std::ostringstream s;
  s.precision(3);
  if (b >= (int64_t{1} << 30)) s << static_cast<double>(b) / (1 << 30) << " GiB";
  else if (b >= (1 << 20)) s << static_cast<double>(b) / (1 << 20) << " MiB";
  else if (b >= 1024) s << static_cast<double>(b) / 1024 << " KiB";
  else s << b << " B";
  return s.str();
}

}  // namespace

std::vector<ProcessReport> read_reports(const std::string& dir) {
  std::vector<ProcessReport> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("agent-", 0) != 0 || it->path().extension() != ".json") continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    nlohmann::json j;
    try {  // the tree's cost is bounded by the text's size (a damaged report is no report)
      j = report::parse_json_tree(text.str(), it->path().string(), report::tree_budget_for(text.str().size()));
    } catch (const std::exception&) {
      continue;
    }
    if (!j.is_object()) continue;
    out.push_back(parse_report(j));
  }
  std::sort(out.begin(), out.end(), [](const ProcessReport& a, const ProcessReport& b) {
    return std::make_pair(a.rank.value_or(-1), a.pid) < std::make_pair(b.rank.value_or(-1), b.pid);
  });
  return out;
}

std::vector<std::string> summary_lines(const std::vector<ProcessReport>& reports, bool python,
                                       const ProfileSchedule* schedule, int end_signal, bool dumping) {
  std::vector<std::string> lines;
  // The agent's own line said why, and the script never ran: nothing to add.
  if (!reports.empty() && std::all_of(reports.begin(), reports.end(), [](const auto& r) { return r.refused; }))
    return lines;
  if (reports.empty()) {
    lines.push_back(python ? "no process of the command imported torch under the agent: nothing was recorded "
                             "(python -I or -E ignores PYTHONPATH, which carries the agent)"
                           : "no Python process of the command imported torch: nothing was recorded");
    return lines;
  }
  int trained = 0;
  for (const auto& r : reports) {
    if (r.steps == 0 && r.dump_dir.empty() && r.nonfinite.empty() && r.dump_error.empty()) continue;
    ++trained;
    std::string line = (r.rank ? "rank " + std::to_string(*r.rank) + " (pid " + std::to_string(r.pid) + ")"
                               : "pid " + std::to_string(r.pid)) +
                       ": " + std::to_string(r.steps) + (r.steps == 1 ? " step" : " steps");
    if (!r.dump_dir.empty())
      line += "; dump " + r.dump_dir + ": " + std::to_string(r.records) + " records, " + human_bytes(r.bytes);
    lines.push_back(line);
    if (!r.dump_note.empty()) lines.push_back("  " + r.dump_note);
    if (!r.dump_error.empty()) lines.push_back("  recording stopped early (the script went on): " + r.dump_error);
    if (!r.skipped.empty()) lines.push_back("  not recorded (no dense tensor of a dtype the dump format names): " + r.skipped);
    if (r.profiled) {
      for (const auto& t : r.traces) lines.push_back("  trace " + t);
      if (r.traces.empty() && schedule)
        lines.push_back("  no trace: the run ended after " + std::to_string(r.steps) +
                        " steps, before the profiler's first recorded step (wait " + std::to_string(schedule->wait) +
                        " + warmup " + std::to_string(schedule->warmup) + ": step " +
                        std::to_string(schedule->wait + schedule->warmup) + ")");
    }
    if (!r.nonfinite.empty()) lines.push_back("  first non-finite tensor: " + r.nonfinite);
    if (!r.written_inf.empty()) lines.push_back("  not a stop: " + r.written_inf);
    if (!r.scaler_skips.empty()) lines.push_back("  not a stop: " + r.scaler_skips);
    if (!r.fp16_overflow.empty())
      lines.push_back("  first float32 output beyond float16's range (65504): " + r.fp16_overflow);
  }
  const bool all_closed = std::all_of(reports.begin(), reports.end(), [](const auto& r) { return r.closed; });
  if (end_signal != 0)
    lines.push_back("the command ended by signal " + std::to_string(end_signal) +
                    (trained == 0 ? " before its first step ended" : "") +
                    (!dumping ? ""
                     : all_closed ? " after Python's exit handlers ran: the records of the step it was in were written"
                                  : ": a step's records are written when the step ends, so those of the step it was in "
                                    "were lost"));
  else if (trained == 0)
    lines.push_back("torch was imported but no optimizer step ran: a loop without a torch.optim optimizer "
                    "needs --step-marker module:function");
  std::vector<std::string> runs;  // `analyze` takes the --profile folder: every cycle and rank of it
  for (const auto& r : reports)
    for (const auto& t : r.traces) {
      const std::string folder = fs::path(t).parent_path().parent_path().string();
      if (std::find(runs.begin(), runs.end(), folder) == runs.end()) runs.push_back(folder);
    }
  for (const auto& d : runs)
    lines.push_back("analyze with: crosstrain analyze " + d + " (one page: --html " + (fs::path(d) / "report.html").string() + ")");
  const auto& first = reports.front();
  if (!first.seeded.empty()) {
    std::string s;
    for (const auto& x : first.seeded) s += (s.empty() ? "" : "; ") + x;
    lines.push_back("seeded: " + s);
  }
  return lines;
}

}  // namespace crosstrain::run
