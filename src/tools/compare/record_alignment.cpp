#include "tools/compare/record_alignment.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace crosstrain::compare {

using dump::DumpRecord;
using dump::shape_to_string;

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

// Positions of `keys` whose key also occurs in `other` (kept) and those whose key does not.
void split_one_sided(const std::vector<int>& keys, const std::vector<int>& other, std::vector<size_t>& kept,
                     std::vector<size_t>& alone) {
  std::vector<bool> in_other;
  for (int k : other) {
    if (static_cast<size_t>(k) >= in_other.size()) in_other.resize(static_cast<size_t>(k) + 1, false);
    in_other[static_cast<size_t>(k)] = true;
  }
  for (size_t i = 0; i < keys.size(); ++i)
    (static_cast<size_t>(keys[i]) < in_other.size() && in_other[static_cast<size_t>(keys[i])] ? kept : alone).push_back(i);
}

// The alignment with the one-sided records put back where their runs had them: before the first
// entry that comes after them on their side.
std::vector<AlignedPair> merge_in_order(const std::vector<AlignedPair>& core, const std::vector<size_t>& only_a,
                                        const std::vector<size_t>& only_b) {
  std::vector<AlignedPair> out;
  out.reserve(core.size() + only_a.size() + only_b.size());
  size_t ia = 0, ib = 0;
  for (const auto& p : core) {
    while (ia < only_a.size() && p.a && only_a[ia] < *p.a) out.push_back({only_a[ia++], std::nullopt});
    while (ib < only_b.size() && p.b && only_b[ib] < *p.b) out.push_back({std::nullopt, only_b[ib++]});
    out.push_back(p);
  }
  while (ia < only_a.size()) out.push_back({only_a[ia++], std::nullopt});
  while (ib < only_b.size()) out.push_back({std::nullopt, only_b[ib++]});
  return out;
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

// Records on one side only that autograd (or a hook order) emitted in another order in the two
// runs: their `#k` counters differ and the alignment, which keeps the order, paired a neighbour
// instead. A leftover of A pairs with a leftover of B when both carry the same phase, base name
// (without `#k`), shape and kind of dtype (any floating type, else the same type), and no other
// leftover of either side carries it: two that shape cannot tell apart are not guessed. Returns how
// many pairs were made; each crosses a pair of the alignment (else the alignment would hold it).
size_t pair_reordered(const std::vector<const DumpRecord*>& a, const std::vector<const DumpRecord*>& b,
                      std::vector<AlignedPair>& pairs) {
  auto signature = [](const DumpRecord& r) {
    return std::to_string(static_cast<int>(r.kind)) + '\x1f' + name_without_repetition(r.name) + '\x1f' +
           shape_to_string(r.shape) + '\x1f' + (dump::dtype_is_float(r.dtype) ? "float" : dump::dtype_name(r.dtype));
  };
  struct Seen {
    size_t a_pos = 0, b_pos = 0;
    int in_a = 0, in_b = 0;
  };
  std::unordered_map<std::string, Seen> seen;
  bool any_a = false, any_b = false;
  for (size_t p = 0; p < pairs.size(); ++p) {
    if (pairs[p].a && pairs[p].b) continue;
    Seen& s = seen[pairs[p].a ? signature(*a[*pairs[p].a]) : signature(*b[*pairs[p].b])];
    if (pairs[p].a) {
      s.a_pos = p, ++s.in_a, any_a = true;
    } else {
      s.b_pos = p, ++s.in_b, any_b = true;
    }
  }
  if (!any_a || !any_b) return 0;
  std::vector<bool> drop(pairs.size(), false);
  size_t made = 0;
  for (const auto& [sig, s] : seen) {
    if (s.in_a != 1 || s.in_b != 1) continue;
    pairs[s.a_pos].b = pairs[s.b_pos].b;  // at A's place, as every pair
    pairs[s.a_pos].reordered = true;
    drop[s.b_pos] = true;
    ++made;
  }
  size_t w = 0;
  for (size_t p = 0; p < pairs.size(); ++p)
    if (!drop[p]) pairs[w++] = pairs[p];
  pairs.resize(w);
  return made;
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
  std::vector<int> all_a, all_b;
  intern_keys(a, b, all_a, all_b);
  // A key on one side only can pair with nothing (autocast's casts, a module one run lacks): set
  // those records aside, so that they cost the alignment nothing, and put them back in place.
  std::vector<size_t> on_a, on_b, only_a, only_b;  // positions in a and b
  split_one_sided(all_a, all_b, on_a, only_a);
  split_one_sided(all_b, all_a, on_b, only_b);
  std::vector<int> ka, kb;
  for (size_t i : on_a) ka.push_back(all_a[i]);
  for (size_t j : on_b) kb.push_back(all_b[j]);
  std::vector<AlignedPair> core;
  size_t lo = 0;
  while (lo < ka.size() && lo < kb.size() && ka[lo] == kb[lo]) ++lo;
  size_t hi_a = ka.size(), hi_b = kb.size();
  while (hi_a > lo && hi_b > lo && ka[hi_a - 1] == kb[hi_b - 1]) --hi_a, --hi_b;
  for (size_t i = 0; i < lo; ++i) core.push_back({i, i});
  if (!shortest_edit_script(ka, lo, hi_a, kb, lo, hi_b, max_edits, core)) {
    result.pairs = pair_by_name(a, b);
    result.aligned = false;
  } else {
    for (size_t i = hi_a, j = hi_b; i < ka.size(); ++i, ++j) core.push_back({i, j});
    for (auto& p : core) {  // back to positions in a and b
      if (p.a) p.a = on_a[*p.a];
      if (p.b) p.b = on_b[*p.b];
    }
    result.pairs = merge_in_order(core, only_a, only_b);
  }
  result.reordered = pair_reordered(a, b, result.pairs);
  pair_equal_names(a, b, result.pairs);
  for (const auto& p : result.pairs) result.edits += (p.a && p.b) ? 0 : 1;
  return result;
}

}  // namespace crosstrain::compare
