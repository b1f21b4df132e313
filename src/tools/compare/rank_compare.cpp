#include "tools/compare/rank_compare.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "tools/dump/dump_reader.h"

namespace fs = std::filesystem;

namespace crosstrain::compare {

using dump::is_dump_dir;
using dump::kIndexFile;

std::optional<std::vector<int>> rank_dump_folders(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || fs::exists(fs::symlink_status(fs::path(dir) / kIndexFile, ec)))
    return std::nullopt;
  std::vector<int> ranks;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 5 || name.size() > 12 || name.compare(0, 4, "rank") != 0 ||
        !std::all_of(name.begin() + 4, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    if (is_dump_dir(it->path().string())) ranks.push_back(std::stoi(name.substr(4)));
  }
  if (ranks.empty()) return std::nullopt;
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<int> RanksResult::differing() const {
  std::vector<int> out;
  for (const auto& r : ranks)
    if (!r.result.agree) out.push_back(r.rank);
  return out;
}

RanksResult compare_rank_paths(const std::string& a, const std::string& b, const CompareOptions& options,
                               const CompareProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  const auto ra = rank_dump_folders(a), rb = rank_dump_folders(b);
  if (!ra || !rb) throw std::invalid_argument((ra ? b : a) + " is not a folder of rank dumps (rank0/, rank1/, ...)");
  RanksResult r;
  r.path_a = a;
  r.path_b = b;
  std::set_difference(ra->begin(), ra->end(), rb->begin(), rb->end(), std::back_inserter(r.only_in_a));
  std::set_difference(rb->begin(), rb->end(), ra->begin(), ra->end(), std::back_inserter(r.only_in_b));
  std::vector<int> both;
  std::set_intersection(ra->begin(), ra->end(), rb->begin(), rb->end(), std::back_inserter(both));
  for (int rank : both) {
    const std::string leaf = "rank" + std::to_string(rank);
    RankComparison rc;
    rc.rank = rank;
    rc.result = compare_paths((fs::path(a) / leaf).string(), (fs::path(b) / leaf).string(), options, progress);
    r.ranks.push_back(std::move(rc));
  }
  r.agree = !r.ranks.empty() && r.only_in_a.empty() && r.only_in_b.empty() && r.differing().empty();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace crosstrain::compare
