#include "tools/compare/compare_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "report/html_page.h"
#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/compare/compare_thresholds.h"
#include "tools/dump/dump_reader.h"

namespace crosstrain::compare {

using dump::LossComparison;
using dump::LossStepDiff;
using dump::OpOrigin;
using dump::dtype_name;
using dump::record_kind_name;
using dump::shape_to_string;
using dump::stats_to_json;

namespace {

std::string g(double v, int digits = 4) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string cosine_text(double c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", c);
  return buf;
}

std::string dtype_text(const TensorComparison& t) {
  if (t.a && t.b && t.a->dtype != t.b->dtype) return dtype_name(t.a->dtype) + "/" + dtype_name(t.b->dtype);
  return dtype_name(t.a ? t.a->dtype : t.b->dtype);
}

std::string verdict_text(const TensorComparison& t) {
  if (t.status != PairStatus::Compared) return pair_status_name(t.status);
  return verdict_name(t.verdict) + (t.exact() ? " (exact)" : "");
}

// A record aligned with one of another name is shown under both.
std::string display_name(const TensorComparison& t) { return t.name_b.empty() ? t.name : t.name + " (B: " + t.name_b + ")"; }

// One row of the per-record table, shared by console, CSV-free views and HTML.
std::vector<std::string> row_cells(const TensorComparison& t) {
  std::vector<std::string> c = {std::to_string(t.step), display_name(t), dtype_text(t)};
  if (t.metrics) {
    const auto& m = *t.metrics;
    c.insert(c.end(), {cosine_text(m.cosine), g(m.max_abs_error), g(m.max_rel_error), g(m.rmse),
                       report::format_percent(m.share_rel_1e3), report::format_percent(m.share_rel_5e3)});
  } else {
    c.insert(c.end(), {"-", "-", "-", "-", "-", "-"});
  }
  c.push_back(verdict_text(t));
  std::string note = t.reason;
  if (t.stat_rel_error && note.empty()) note = "stats rel err " + g(*t.stat_rel_error, 3);
  else if (t.rel_error && note.empty()) note = "rel err " + g(*t.rel_error, 3);
  c.push_back(note);
  return c;
}

const std::vector<std::string>& row_header() {
  static const std::vector<std::string> h = {"step", "name",   "dtype", "cosine", "max abs", "max rel",
                                             "rmse", "<1e-3", "<5e-3", "verdict", "note"};
  return h;
}

report::Table make_table() {
  report::Table t(row_header());
  t.align(1, report::Align::Left).align(2, report::Align::Left).align(9, report::Align::Left).align(10, report::Align::Left);
  return t;
}

std::string loss_summary(const LossComparison& l) {
  std::string s = "loss: " + std::to_string(l.steps.size()) + " steps compared";
  if (l.only_in_a || l.only_in_b)
    s += " (" + std::to_string(l.only_in_a) + " only in A, " + std::to_string(l.only_in_b) + " only in B)";
  if (!l.steps.empty())
    s += "; max rel diff " + g(l.max_rel_diff, 3) + " at step " + std::to_string(l.max_rel_step) + ", mean " +
         g(l.mean_rel_diff, 3) + "; final " + g(l.steps.back().a, 6) + " vs " + g(l.steps.back().b, 6);
  s += l.first_step_beyond ? "; first step beyond rtol " + g(l.rtol, 3) + ": " + std::to_string(*l.first_step_beyond) +
                                 " (" + std::to_string(l.steps_beyond) + " steps beyond)"
                           : "; every step within rtol " + g(l.rtol, 3);
  return s;
}

// The operator behind a record, for the first divergence: "operator aten::bmm (forward) in module
// h.1.attn", then its source line and the user's line that led there.
const OpOrigin* origin_of(const TensorComparison& t) {
  if (t.b && t.b->op) return &*t.b->op;
  if (t.a && t.a->op) return &*t.a->op;
  return nullptr;
}

std::string origin_lines(const TensorComparison& t) {
  const OpOrigin* o = origin_of(t);
  if (!o) return {};
  std::string out = "  operator " + o->op + (o->overload.empty() || o->overload == "default" ? "" : "." + o->overload) +
                    " (" + o->phase + ")" + (o->module.empty() ? " outside any module" : " in module " + o->module) + "\n";
  if (!o->source.empty()) out += "  at " + o->source + (o->code.empty() ? "" : ": " + o->code) + "\n";
  if (!o->user_source.empty())
    out += "  called from " + o->user_source + (o->user_code.empty() ? "" : ": " + o->user_code) + "\n";
  if (o->random)
    out += "  a random operator: each device draws from its own generator, so its outputs differ by design "
           "(compare with dropout off, e.g. model.eval() or p=0)\n";
  return out;
}

nlohmann::json origin_json(const TensorComparison& t) {
  const OpOrigin* o = origin_of(t);
  if (!o) return nullptr;
  return {{"op", o->op},       {"overload", o->overload}, {"phase", o->phase},
          {"module", o->module}, {"source", o->source},   {"code", o->code},
          {"user_source", o->user_source}, {"user_code", o->user_code}, {"random", o->random}};
}

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// One entry of "tensors".
nlohmann::json tensor_json(const TensorComparison& t) {
  nlohmann::json e = {{"step", t.step},
                      {"name", t.name},
                      {"kind", record_kind_name(t.kind)},
                      {"status", pair_status_name(t.status)},
                      {"method", t.method.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.method)},
                      {"verdict", verdict_name(t.verdict)},
                      {"exact", t.exact()},
                      {"reason", t.reason},
                      {"effective_dtype", dtype_name(t.effective_dtype)}};
  if (!t.name_b.empty()) e["name_b"] = t.name_b;
  if (t.reordered) e["reordered"] = true;
  if (t.status == PairStatus::Compared)
    e["noise"] = {{"scale", number(t.noise_scale)},
                  {"scale_from", t.scale_from_inputs ? "inputs" : "own"},
                  {"rel_error", t.rel_error ? number(*t.rel_error) : nlohmann::json(nullptr)},
                  {"warn_at", t.tolerance.warn},
                  {"error_at", t.tolerance.error},
                  {"rule", t.rel_error ? (t.tolerance.by_noise ? "noise" : "table") : "cosine"}};
  for (auto [side, rec] : {std::pair{"a", &t.a}, std::pair{"b", &t.b}}) {
    if (*rec)
      e[side] = {{"dtype", dtype_name((*rec)->dtype)}, {"shape", (*rec)->shape}, {"stats", stats_to_json((*rec)->stats)}};
    else
      e[side] = nullptr;
  }
  if (t.metrics) {
    const auto& m = *t.metrics;
    e["metrics"] = {{"cosine", number(m.cosine)},       {"max_abs_error", number(m.max_abs_error)},
                    {"max_rel_error", number(m.max_rel_error)}, {"rmse", number(m.rmse)},
                    {"share_rel_err_below_1e-3", number(m.share_rel_1e3)},
                    {"share_rel_err_below_5e-3", number(m.share_rel_5e3)},
                    {"finite_pairs", m.finite_pairs},   {"nonfinite_matched", m.nonfinite_matched},
                    {"nonfinite_mismatched", m.nonfinite_mismatched}};
  } else {
    e["metrics"] = nullptr;
  }
  e["stat_rel_error"] = opt_json(t.stat_rel_error);
  return e;
}

nlohmann::json loss_point_json(const LossStepDiff& s) {
  return {{"step", s.step}, {"a", number(s.a)}, {"b", number(s.b)}, {"rel_diff", number(s.rel_diff)}};
}

}  // namespace

std::string verdict_line(const CompareResult& r) {
  if (r.nothing_compared) {
    const size_t na = r.index_a ? r.index_a->records.size() : 0, nb = r.index_b ? r.index_b->records.size() : 0;
    return "verdict: NOTHING COMPARED: no record in common (A holds " + std::to_string(na) + ", B " + std::to_string(nb) +
           ") and no loss step; no agreement without something to compare";
  }
  return std::string("verdict: runs ") + (r.agree ? "AGREE" : "DIFFER");
}

std::string render_compare_console(const CompareResult& r, const ConsoleOptions& options) {
  std::string out = "compare " + r.path_a + " (A) vs " + r.path_b + " (B): " + r.input;
  if (r.input == "dumps") {
    const auto& c = r.counts;
    out += ", " + std::to_string(r.tensors.size()) + " records, " + report::format_bytes(r.bytes_compared) +
           " of tensors read in " + g(r.seconds, 3) + " s\n";
    out += "  pass " + std::to_string(c.pass) + " (exact " + std::to_string(c.exact) + "), warn " +
           std::to_string(c.warn) + ", error " + std::to_string(c.error) + "; missing in A " +
           std::to_string(c.missing_in_a) + ", missing in B " + std::to_string(c.missing_in_b) + ", shape mismatch " +
           std::to_string(c.shape_mismatch) + ", unreadable " + std::to_string(c.unreadable) +
           (c.casts_one_side ? "; of those on one side only, " + std::to_string(c.casts_one_side) + " precision casts" : "") +
           (c.reordered ? "; paired out of order " + std::to_string(c.reordered) : "") + "\n";
  } else {
    out += "\n";
  }
  if (r.input == "dumps") out += "  " + thresholds_text(r);
  if (r.first_divergence) {
    const auto& t = r.tensors[*r.first_divergence];
    out += "\nfirst divergence: step " + std::to_string(t.step) + " " + display_name(t) + " (" + t.reason + ")\n";
    out += origin_lines(t);
    report::Table tab = make_table();
    for (size_t i : r.divergence_window()) tab.add_row(row_cells(r.tensors[i]));
    out += tab.render();
  } else if (r.first_warning) {
    const auto& t = r.tensors[*r.first_warning];
    out += "\nno error; first warning: step " + std::to_string(t.step) + " " + display_name(t) + " (" + t.reason + ")\n";
  }
  if (r.input == "dumps") {
    report::Table tab = make_table();
    size_t shown = 0, total = 0;
    for (const auto& t : r.tensors) {
      if (!options.all_rows && t.verdict == Verdict::Pass && t.status == PairStatus::Compared) continue;
      ++total;
      if (options.all_rows || shown < options.max_rows) {
        tab.add_row(row_cells(t));
        ++shown;
      }
    }
    if (total > 0) {
      out += options.all_rows ? "\nall records:\n"
                              : "\nrecords that did not pass (" + std::to_string(shown) + " of " + std::to_string(total) +
                                    " shown):\n";
      out += tab.render();
    }
  }
  if (r.loss) out += "\n" + loss_summary(*r.loss) + "\n";
  if (!r.problems.empty()) {
    out += "\nproblems:\n";
    for (const auto& p : r.problems) out += "  " + p + "\n";
  }
  if (!r.notes.empty()) {
    out += "\nnotes:\n";
    for (const auto& n : r.notes) out += "  " + n + "\n";
  }
  out += "\n" + verdict_line(r) + "\n";
  return out;
}

// The document without its two long arrays, "tensors" and "loss"/"curve" (left empty).
nlohmann::json compare_skeleton(const CompareResult& r) {
  nlohmann::json j;
  j["schema_version"] = report::kJsonSchemaVersion;
  j["a"] = r.path_a;
  j["b"] = r.path_b;
  j["input"] = r.input;
  j["agree"] = r.agree;
  j["verdict"] = r.verdict();
  j["nothing_compared"] = r.nothing_compared;
  if (r.input == "dumps") j["thresholds"] = thresholds_json(r);
  j["notes"] = r.notes;
  j["seconds"] = r.seconds;
  j["bytes_compared"] = r.bytes_compared;
  const auto& c = r.counts;
  j["counts"] = {{"records", r.tensors.size()}, {"pass", c.pass},   {"warn", c.warn},
                 {"error", c.error},            {"exact", c.exact}, {"missing_in_a", c.missing_in_a},
                 {"missing_in_b", c.missing_in_b}, {"shape_mismatch", c.shape_mismatch}, {"unreadable", c.unreadable},
                 {"casts_one_side", c.casts_one_side}, {"reordered", c.reordered}};
  auto pointer = [&](const std::optional<size_t>& i) -> nlohmann::json {
    if (!i) return nullptr;
    const auto& t = r.tensors[*i];
    return {{"index", *i},          {"step", t.step},
            {"name", t.name},       {"name_b", t.name_b.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.name_b)},
            {"reason", t.reason},   {"rel_error", opt_json(t.rel_error)},
            {"threshold", t.rel_error ? nlohmann::json(t.verdict == Verdict::Warn ? t.tolerance.warn : t.tolerance.error)
                                      : nlohmann::json(nullptr)},
            {"origin", origin_json(t)}};
  };
  j["first_divergence"] = pointer(r.first_divergence);
  j["first_warning"] = pointer(r.first_warning);
  j["divergence_window"] = nlohmann::json::array();
  for (size_t i : r.divergence_window()) j["divergence_window"].push_back(r.tensors[i].name);
  j["tensors"] = nlohmann::json::array();  // streamed: compare_to_streamed_json
  if (r.loss) {
    const auto& l = *r.loss;
    j["loss"] = {{"rtol", l.rtol},
                 {"steps_compared", l.steps.size()},
                 {"only_in_a", l.only_in_a},
                 {"only_in_b", l.only_in_b},
                 {"first_step_beyond", l.first_step_beyond ? nlohmann::json(*l.first_step_beyond) : nlohmann::json(nullptr)},
                 {"steps_beyond", l.steps_beyond},
                 {"max_rel_diff", number(l.max_rel_diff)},
                 {"max_rel_step", l.max_rel_step},
                 {"mean_rel_diff", number(l.mean_rel_diff)},
                 {"within_tolerance", l.within_tolerance()},
                 {"curve", nlohmann::json::array()}};  // streamed
  } else {
    j["loss"] = nullptr;
  }
  j["problems"] = r.problems;
  return j;
}

report::StreamedJson compare_to_streamed_json(const CompareResult& r) {
  report::StreamedJson doc;
  doc.skeleton = compare_skeleton(r);
  add_compare_arrays(r, "", doc.arrays);
  return doc;
}

void add_compare_arrays(const CompareResult& r, const std::string& at, std::vector<report::StreamedArray>& arrays) {
  arrays.push_back({at + "/tensors", r.tensors.size(), [&r](size_t i) { return tensor_json(r.tensors[i]); }});
  if (r.loss)
    arrays.push_back({at + "/loss/curve", r.loss->steps.size(), [&r](size_t i) { return loss_point_json(r.loss->steps[i]); }});
}

nlohmann::json compare_to_json(const CompareResult& r) { return report::materialize(compare_to_streamed_json(r)); }

std::vector<std::string> compare_csv_header() {
  std::vector<std::string> header = {"step", "name", "kind", "status", "method", "verdict", "exact", "dtype_a",
                                     "dtype_b", "shape_a", "shape_b", "cosine", "max_abs_error", "max_rel_error",
                                     "rmse", "share_rel_err_below_1e-3", "share_rel_err_below_5e-3",
                                     "stat_rel_error"};
  for (const char* side : {"a", "b"})
    for (const char* s : {"max", "min", "mean", "norm", "nan_count", "inf_count"})
      header.push_back(std::string(side) + "_" + s);
  header.push_back("reason");
  for (const char* h : {"name_b", "noise_scale", "scale_from", "rel_error", "warn_at", "error_at"}) header.push_back(h);
  return header;
}

std::vector<std::vector<std::string>> compare_csv_rows(const CompareResult& r) {
  std::vector<std::vector<std::string>> rows;
  auto full = [](double v) { return g(v, 17); };
  for (const auto& t : r.tensors) {
    std::vector<std::string> row = {std::to_string(t.step), t.name, record_kind_name(t.kind), pair_status_name(t.status),
                                    t.method, verdict_name(t.verdict), t.exact() ? "1" : "0",
                                    t.a ? dtype_name(t.a->dtype) : "", t.b ? dtype_name(t.b->dtype) : "",
                                    t.a ? shape_to_string(t.a->shape) : "", t.b ? shape_to_string(t.b->shape) : ""};
    if (t.metrics) {
      const auto& m = *t.metrics;
      for (double v : {m.cosine, m.max_abs_error, m.max_rel_error, m.rmse, m.share_rel_1e3, m.share_rel_5e3})
        row.push_back(full(v));
    } else {
      row.insert(row.end(), 6, "");
    }
    row.push_back(t.stat_rel_error ? full(*t.stat_rel_error) : "");
    for (const auto* rec : {&t.a, &t.b}) {
      if (*rec) {
        const auto& s = (*rec)->stats;
        for (const auto& v : {s.max, s.min, s.mean, s.norm}) row.push_back(v ? full(*v) : "");
        row.push_back(std::to_string(s.nan_count));
        row.push_back(std::to_string(s.inf_count));
      } else {
        row.insert(row.end(), 6, "");
      }
    }
    row.push_back(t.reason);
    const bool compared = t.status == PairStatus::Compared;
    row.push_back(t.name_b);
    row.push_back(compared ? full(t.noise_scale) : "");
    row.push_back(compared ? (t.scale_from_inputs ? "inputs" : "own") : "");
    row.push_back(t.rel_error ? full(*t.rel_error) : "");
    row.push_back(compared ? full(t.tolerance.warn) : "");
    row.push_back(compared ? full(t.tolerance.error) : "");
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string compare_to_csv(const CompareResult& r) { return report::csv_document(compare_csv_header(), compare_csv_rows(r)); }

std::string compare_to_html(const CompareResult& r) {
  report::HtmlPage page("crosstrain compare: " + r.path_a + " vs " + r.path_b);
  page.add_heading(r.nothing_compared ? "Nothing compared" : std::string("Runs ") + (r.agree ? "agree" : "differ"));
  if (r.nothing_compared) page.add_paragraph(verdict_line(r));
  if (r.input == "dumps") page.add_paragraph(thresholds_text(r));
  page.add_paragraph("A (reference): " + r.path_a + " | B: " + r.path_b);
  const auto& c = r.counts;
  if (r.input == "dumps")
    page.add_paragraph(std::to_string(r.tensors.size()) + " records: pass " + std::to_string(c.pass) + " (exact " +
                       std::to_string(c.exact) + "), warn " + std::to_string(c.warn) + ", error " +
                       std::to_string(c.error) + ", missing in A " + std::to_string(c.missing_in_a) +
                       ", missing in B " + std::to_string(c.missing_in_b) + ", unreadable " +
                       std::to_string(c.unreadable) + ", shape mismatch " + std::to_string(c.shape_mismatch) + ".");
  if (r.first_divergence) {
    const auto& t = r.tensors[*r.first_divergence];
    page.add_heading("First divergence");
    page.add_paragraph("step " + std::to_string(t.step) + ", " + display_name(t) + ": " + t.reason);
    const std::string origin = origin_lines(t);
    size_t start = 0;
    while (start < origin.size()) {  // one paragraph per line of the console's account
      const size_t end = origin.find('\n', start);
      page.add_paragraph(origin.substr(start + 2, end - start - 2));
      start = end + 1;
    }
    std::vector<std::vector<std::string>> rows;
    for (size_t i : r.divergence_window()) rows.push_back(row_cells(r.tensors[i]));
    page.add_table(row_header(), rows, "divergence");
  }
  if (r.loss && !r.loss->steps.empty()) {
    page.add_heading("Loss curves");
    page.add_paragraph(loss_summary(*r.loss));
    report::Series sa{"A", {}}, sb{"B", {}}, sd{"relative difference", {}};
    for (const auto& s : r.loss->steps) {
      sa.points.emplace_back(static_cast<double>(s.step), s.a);
      sb.points.emplace_back(static_cast<double>(s.step), s.b);
      sd.points.emplace_back(static_cast<double>(s.step), s.rel_diff);
    }
    page.add_line_chart("loss-curves", "Loss per step", {sa, sb}, "step", "loss");
    page.add_line_chart("loss-diff", "Relative loss difference |A-B|/|A|", {sd}, "step", "relative difference", true);
  }
  // Per-layer profiles: x is the record's position in execution order within its step, one
  // series per dumped step (the first few), so forward and backward read left to right.
  std::map<int64_t, report::Series> cos_by_step, err_by_step;
  std::map<int64_t, double> position;
  for (const auto& t : r.tensors) {
    if (!t.metrics) continue;
    if (cos_by_step.size() >= 4 && !cos_by_step.count(t.step)) continue;
    double x = position[t.step]++;
    cos_by_step[t.step].name = "step " + std::to_string(t.step);
    cos_by_step[t.step].points.emplace_back(x, t.metrics->cosine);
    err_by_step[t.step].name = "step " + std::to_string(t.step);
    err_by_step[t.step].points.emplace_back(x, t.metrics->max_abs_error);
  }
  if (!cos_by_step.empty()) {
    std::vector<report::Series> cs, es;
    for (auto& [s, v] : cos_by_step) cs.push_back(v);
    for (auto& [s, v] : err_by_step) es.push_back(v);
    page.add_heading("Per-layer profile");
    page.add_line_chart("cosine-profile", "Cosine similarity per record (execution order)", cs, "record", "cosine");
    page.add_line_chart("max-error-profile", "Max absolute error per record (execution order)", es, "record",
                        "max abs error", true);
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : r.tensors)
    if ((t.verdict != Verdict::Pass || t.status != PairStatus::Compared) && rows.size() < 500) rows.push_back(row_cells(t));
  if (!rows.empty()) {
    page.add_heading("Records that did not pass");
    page.add_table(row_header(), rows, "not-passed");
  }
  if (!r.problems.empty()) {
    page.add_heading("Problems");
    std::vector<std::vector<std::string>> prow;
    for (const auto& p : r.problems) prow.push_back({p});
    page.add_table({"problem"}, prow, "problems");
  }
  return page.render();
}

}  // namespace crosstrain::compare
