#include "tools/align/record_alignment.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace crosstrain::align {

namespace {

// The alignment keys of both streams as small integers (equal keys, equal integers).
void intern_keys(const std::vector<const DumpRecord*>& a, const std::vector<const DumpRecord*>& b,
                 std::vector<int>& ka, std::vector<int>& kb) {
  std::unordered_map<std::string, int> ids;
  auto id = [&](const DumpRecord& r) {
    const std::string key = name_without_repetition(r.name) + '\x1f' + shape_to_string(r.shape);
    return ids.emplace(key, static_cast<int>(ids.size())).first->second;
  };
  ka.reserve(a.size());
  kb.reserve(b.size());
  for (const auto* r : a) ka.push_back(id(*r));
  for (const auto* r : b) kb.push_back(id(*r));
}

// Myers' greedy shortest edit script between ka[lo_a, hi_a) and kb[lo_b, hi_b), as a sequence of
// pairs; false when it needs more than max_edits insertions and deletions.
bool shortest_edit_script(const std::vector<int>& ka, size_t lo_a, size_t hi_a, const std::vector<int>& kb,
                          size_t lo_b, size_t hi_b, size_t max_edits, std::vector<AlignedPair>& out) {
  const long n = static_cast<long>(hi_a - lo_a), m = static_cast<long>(hi_b - lo_b);
  const long max_d = std::min<long>(n + m, static_cast<long>(max_edits));
  const long off = max_d + 1;
  std::vector<long> v(static_cast<size_t>(2 * max_d + 3), 0);
  std::vector<std::vector<long>> trace;  // v over k in [-d, d] after each d
  auto at = [&](long k) -> long& { return v[static_cast<size_t>(k + off)]; };
  long found = -1;
  for (long d = 0; d <= max_d && found < 0; ++d) {
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      long y = x - k;
      while (x < n && y < m && ka[lo_a + static_cast<size_t>(x)] == kb[lo_b + static_cast<size_t>(y)]) ++x, ++y;
      at(k) = x;
      if (x >= n && y >= m) found = d;
    }
    trace.emplace_back(v.begin() + (off - d), v.begin() + (off + d + 1));
  }
  if (found < 0) return false;
  // Walk back from (n, m), collecting the script in reverse.
  std::vector<AlignedPair> rev;
  long x = n, y = m;
  for (long d = found; d >= 0; --d) {
    const long k = x - y;
    auto prev = [&](long kk) { return trace[static_cast<size_t>(d - 1)][static_cast<size_t>(kk + d - 1)]; };
    long prev_k = k;
    if (d > 0) prev_k = (k == -d || (k != d && prev(k - 1) < prev(k + 1))) ? k + 1 : k - 1;
    const long prev_x = d > 0 ? prev(prev_k) : 0, prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {  // the diagonal: equal keys
      --x, --y;
      rev.push_back({lo_a + static_cast<size_t>(x), lo_b + static_cast<size_t>(y)});
    }
    if (d == 0) break;
    if (x == prev_x) rev.push_back({std::nullopt, lo_b + static_cast<size_t>(--y)});  // insertion in B
    else rev.push_back({lo_a + static_cast<size_t>(--x), std::nullopt});            // deletion from A
  }
  out.insert(out.end(), rev.rbegin(), rev.rend());
  return true;
}

// Today's reading of names: pair by exact name, A's order, B-only records last.
std::vector<AlignedPair> pair_by_name(const std::vector<const DumpRecord*>& a, const std::vector<const DumpRecord*>& b) {
  std::unordered_map<std::string, size_t> b_by_name;
  for (size_t j = 0; j < b.size(); ++j) b_by_name.emplace(b[j]->name, j);
  std::vector<bool> used(b.size(), false);
  std::vector<AlignedPair> out;
  for (size_t i = 0; i < a.size(); ++i) {
    auto it = b_by_name.find(a[i]->name);
    if (it != b_by_name.end() && !used[it->second]) {
      used[it->second] = true;
      out.push_back({i, it->second});
    } else {
      out.push_back({i, std::nullopt});
    }
  }
  for (size_t j = 0; j < b.size(); ++j)
    if (!used[j]) out.push_back({std::nullopt, j});
  return out;
}

// Records on one side only whose exact names are equal are one record (its shape changed).
void pair_equal_names(const std::vector<const DumpRecord*>& a, const std::vector<const DumpRecord*>& b,
                      std::vector<AlignedPair>& pairs) {
  std::unordered_map<std::string, size_t> b_only;  // name -> position in pairs
  for (size_t p = 0; p < pairs.size(); ++p)
    if (!pairs[p].a) b_only.emplace(b[*pairs[p].b]->name, p);
  if (b_only.empty()) return;
  std::vector<bool> drop(pairs.size(), false);
  for (auto& pr : pairs) {
    if (pr.b) continue;
    auto it = b_only.find(a[*pr.a]->name);
    if (it == b_only.end() || drop[it->second]) continue;
    pr.b = pairs[it->second].b;
    drop[it->second] = true;
  }
  size_t w = 0;
  for (size_t p = 0; p < pairs.size(); ++p)
    if (!drop[p]) pairs[w++] = pairs[p];
  pairs.resize(w);
}

}  // namespace

std::string name_without_repetition(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    if (name[i] == '#' && i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) {
      size_t j = i + 1;
      while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
      if (j == name.size() || name[j] == '[') {  // a counter ends the name or precedes "[i]"
        i = j;
        continue;
      }
    }
    out += name[i++];
  }
  return out;
}

StepAlignment align_records(const std::vector<const DumpRecord*>& a, const std::vector<const DumpRecord*>& b,
                            size_t max_edits) {
  StepAlignment result;
  if (a.size() == b.size() &&
      std::equal(a.begin(), a.end(), b.begin(), [](const DumpRecord* x, const DumpRecord* y) { return x->name == y->name; })) {
    for (size_t i = 0; i < a.size(); ++i) result.pairs.push_back({i, i});  // the usual case: the same stream
    return result;
  }
  std::vector<int> ka, kb;
  intern_keys(a, b, ka, kb);
  size_t lo = 0;
  while (lo < ka.size() && lo < kb.size() && ka[lo] == kb[lo]) ++lo;
  size_t hi_a = ka.size(), hi_b = kb.size();
  while (hi_a > lo && hi_b > lo && ka[hi_a - 1] == kb[hi_b - 1]) --hi_a, --hi_b;
  for (size_t i = 0; i < lo; ++i) result.pairs.push_back({i, i});
  if (!shortest_edit_script(ka, lo, hi_a, kb, lo, hi_b, max_edits, result.pairs)) {
    result.pairs = pair_by_name(a, b);
    result.aligned = false;
  } else {
    for (size_t i = hi_a, j = hi_b; i < ka.size(); ++i, ++j) result.pairs.push_back({i, j});
  }
  pair_equal_names(a, b, result.pairs);
  for (const auto& p : result.pairs) result.edits += (p.a && p.b) ? 0 : 1;
  return result;
}

}  // namespace crosstrain::align
