#pragma once
// Renderers for a RanksResult (rank_compare.h): each rank's report as compare_report.h renders it,
// then the ranks side by side and one overall verdict.
#include <nlohmann/json.hpp>
#include <string>

#include "tools/compare/compare_report.h"
#include "tools/compare/rank_compare.h"

namespace crosstrain::compare {

std::string render_ranks_console(const RanksResult& r, const ConsoleOptions& options = {});
// {"input": "rank_dumps", "agree", "verdict", "ranks": [{"rank", "agree", "verdict", "report"}],
//  "ranks_only_in_a", "ranks_only_in_b", "differing_ranks", "seconds"}; "report" is compare_to_json's.
nlohmann::json ranks_to_json(const RanksResult& r);
// The same document for writing record by record (report::write_json_streamed).
report::StreamedJson ranks_to_streamed_json(const RanksResult& r);
// compare_to_csv's rows with a leading "rank" column.
std::string ranks_to_csv(const RanksResult& r);
// One page: the overall verdict and a row per rank (verdict, first divergence, counts).
std::string ranks_to_html(const RanksResult& r);

}  // namespace crosstrain::compare
