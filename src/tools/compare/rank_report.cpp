#include "tools/compare/rank_report.h"

#include "report/html_page.h"
#include "report/json_stream.h"
#include "report/output.h"

namespace crosstrain::compare {

namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

std::string first_divergence_text(const CompareResult& r) {
  if (!r.first_divergence) return r.nothing_compared ? "nothing compared" : "none";
  const auto& t = r.tensors[*r.first_divergence];
  return "step " + std::to_string(t.step) + " " + t.name + " (" + t.reason + ")";
}

std::string rank_verdict(const CompareResult& r) {
  return r.nothing_compared ? "NOTHING COMPARED" : r.agree ? "AGREE" : "DIFFER";
}

std::string overall_line(const RanksResult& r) {
  std::string s = std::string("verdict: runs ") + (r.agree ? "AGREE" : "DIFFER") + " (" + std::to_string(r.ranks.size()) +
                  " rank" + (r.ranks.size() == 1 ? "" : "s") + " compared";
  const auto differ = r.differing();
  if (!differ.empty()) s += "; differing: rank " + rank_list(differ);
  if (!r.only_in_a.empty()) s += "; only in A: rank " + rank_list(r.only_in_a);
  if (!r.only_in_b.empty()) s += "; only in B: rank " + rank_list(r.only_in_b);
  return s + ")";
}

}  // namespace

std::string render_ranks_console(const RanksResult& r, const ConsoleOptions& options) {
  std::string out;
  for (const auto& rc : r.ranks) out += "== rank " + std::to_string(rc.rank) + " ==\n" + render_compare_console(rc.result, options) + "\n";
  out += "ranks of " + r.path_a + " (A) vs " + r.path_b + " (B):\n";
  for (const auto& rc : r.ranks)
    out += "  rank " + std::to_string(rc.rank) + ": " + rank_verdict(rc.result) +
           (rc.result.first_divergence ? "; first divergence " + first_divergence_text(rc.result) : "") + "\n";
  for (int k : r.only_in_a) out += "  rank " + std::to_string(k) + ": only in A\n";
  for (int k : r.only_in_b) out += "  rank " + std::to_string(k) + ": only in B\n";
  return out + "\n" + overall_line(r) + "\n";
}

report::StreamedJson ranks_to_streamed_json(const RanksResult& r) {
  report::StreamedJson doc;
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t k = 0; k < r.ranks.size(); ++k) {
    const auto& rc = r.ranks[k];
    ranks.push_back({{"rank", rc.rank}, {"agree", rc.result.agree}, {"verdict", rc.result.verdict()},
                     {"report", compare_skeleton(rc.result)}});
    add_compare_arrays(rc.result, "/ranks/" + std::to_string(k) + "/report", doc.arrays);
  }
  doc.skeleton = {{"schema_version", report::kJsonSchemaVersion},
                  {"a", r.path_a},
                  {"b", r.path_b},
                  {"input", "rank_dumps"},
                  {"agree", r.agree},
                  {"verdict", r.agree ? "agree" : "differ"},
                  {"ranks", ranks},
                  {"ranks_only_in_a", r.only_in_a},
                  {"ranks_only_in_b", r.only_in_b},
                  {"differing_ranks", r.differing()},
                  {"seconds", r.seconds}};
  return doc;
}

nlohmann::json ranks_to_json(const RanksResult& r) { return report::materialize(ranks_to_streamed_json(r)); }

std::string ranks_to_csv(const RanksResult& r) {
  std::vector<std::string> header = compare_csv_header();
  header.insert(header.begin(), "rank");
  std::vector<std::vector<std::string>> rows;
  for (const auto& rc : r.ranks)
    for (auto& row : compare_csv_rows(rc.result)) {
      row.insert(row.begin(), std::to_string(rc.rank));
      rows.push_back(std::move(row));
    }
  return report::csv_document(header, rows);
}

std::string ranks_to_html(const RanksResult& r) {
  report::HtmlPage page("crosstrain compare: " + r.path_a + " vs " + r.path_b);
  page.add_heading(std::string("Runs ") + (r.agree ? "agree" : "differ"));
  page.add_paragraph("A (reference): " + r.path_a + " | B: " + r.path_b);
  page.add_paragraph(overall_line(r));
  std::vector<std::vector<std::string>> rows;
  for (const auto& rc : r.ranks) {
    const auto& c = rc.result.counts;
    rows.push_back({std::to_string(rc.rank), rank_verdict(rc.result), first_divergence_text(rc.result),
                    std::to_string(c.pass), std::to_string(c.warn), std::to_string(c.error),
                    std::to_string(c.missing_in_a + c.missing_in_b)});
  }
  for (int k : r.only_in_a) rows.push_back({std::to_string(k), "only in A", "", "", "", "", ""});
  for (int k : r.only_in_b) rows.push_back({std::to_string(k), "only in B", "", "", "", "", ""});
  page.add_table({"rank", "verdict", "first divergence", "pass", "warn", "error", "one side only"}, rows, "ranks");
  return page.render();
}

}  // namespace crosstrain::compare
