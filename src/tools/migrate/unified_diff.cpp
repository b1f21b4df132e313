#include "tools/migrate/unified_diff.h"

#include <algorithm>
#include <vector>

namespace crosstrain::migrate {

namespace {

struct Line {
  std::string_view text;  // without the newline
  bool newline;           // false only for a last line without '\n'
  bool operator==(const Line& o) const { return text == o.text && newline == o.newline; }
};

std::vector<Line> split_lines(std::string_view s) {
  std::vector<Line> lines;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string_view::npos) {
      lines.push_back({s.substr(pos), false});
      break;
    }
    lines.push_back({s.substr(pos, nl - pos), true});
    pos = nl + 1;
  }
  return lines;
}

enum class Op { Equal, Delete, Insert };

// Myers' greedy shortest edit script; keeps one V slice per step for the backtrack, so memory is
// O(D^2) with D the number of differing lines.
std::vector<Op> edit_script(const std::vector<Line>& a, const std::vector<Line>& b) {
  const long n = static_cast<long>(a.size()), m = static_cast<long>(b.size());
  const long max = n + m;
  std::vector<std::vector<long>> trace;
  std::vector<long> v(2 * static_cast<size_t>(max) + 3, 0);
  auto at = [&](long k) -> long& { return v[static_cast<size_t>(k + max + 1)]; };
  long found_d = -1;
  for (long d = 0; d <= max && found_d < 0; ++d) {
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      long y = x - k;
      while (x < n && y < m && a[static_cast<size_t>(x)] == b[static_cast<size_t>(y)]) ++x, ++y;
      at(k) = x;
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
    trace.emplace_back(v.begin() + (max + 1 - d), v.begin() + (max + 1 + d + 1));
  }
  std::vector<Op> ops;
  long x = n, y = m;
  for (long d = found_d; d > 0; --d) {
    const auto& prev = trace[static_cast<size_t>(d - 1)];
    auto prev_at = [&](long k) { return prev[static_cast<size_t>(k + d - 1)]; };
    long k = x - y;
    bool down = (k == -d || (k != d && prev_at(k - 1) < prev_at(k + 1)));
    long prev_k = down ? k + 1 : k - 1;
    long prev_x = prev_at(prev_k), prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) ops.push_back(Op::Equal), --x, --y;
    ops.push_back(down ? Op::Insert : Op::Delete);
    x = prev_x;
    y = prev_y;
  }
  while (x > 0 && y > 0) ops.push_back(Op::Equal), --x, --y;
  std::reverse(ops.begin(), ops.end());
  return ops;
}

void emit(std::string& out, char sign, const Line& line) {
  out += sign;
  out.append(line.text);
  out += '\n';
  if (!line.newline) out += "\\ No newline at end of file\n";
}

}  // namespace

namespace {
std::string render(const std::vector<Line>& a, const std::vector<Line>& b, const std::vector<Op>& ops,
                   const std::string& before_label, const std::string& after_label, size_t context);
}  // namespace

std::string unified_diff(std::string_view before, std::string_view after, const std::string& before_label,
                         const std::string& after_label, size_t context) {
  if (before == after) return {};
  std::vector<Line> a = split_lines(before), b = split_lines(after);
  return render(a, b, edit_script(a, b), before_label, after_label, context);
}

std::string unified_diff_of_edits(std::string_view before, std::string_view after, const std::vector<DiffEdit>& edits,
                                  const std::string& before_label, const std::string& after_label, size_t context) {
  if (before == after) return {};
  std::vector<Line> a = split_lines(before), b = split_lines(after);
  std::vector<size_t> starts;  // byte offset of each line of `before`, then its size
  for (const Line& line : a) starts.push_back(static_cast<size_t>(line.text.data() - before.data()));
  starts.push_back(before.size());
  auto line_of = [&](size_t offset) {
    return static_cast<size_t>(std::upper_bound(starts.begin(), starts.end() - 1, offset) - starts.begin()) - 1;
  };
  // Regions of whole lines [first, last) that the edits touch; a line inserted at a line start
  // touches none. Regions that touch are merged.
  struct Region {
    size_t first, last, edit_begin, edit_end;
  };
  std::vector<Region> regions;
  for (size_t i = 0; i < edits.size(); ++i) {
    const DiffEdit& e = edits[i];
    bool line_insert = e.start == e.end && e.start == starts[std::min(line_of(e.start), a.size())] &&
                       !e.text.empty() && e.text.back() == '\n';
    size_t first = e.start >= before.size() ? a.size() : line_of(e.start);
    size_t last = line_insert ? first : (e.start >= before.size() ? a.size() : line_of(e.end > e.start ? e.end - 1 : e.start) + 1);
    if (!regions.empty() && first <= regions.back().last) {
      regions.back().last = std::max(regions.back().last, last);
      regions.back().edit_end = i + 1;
    } else {
      regions.push_back({first, last, i, i + 1});
    }
  }
  std::vector<Op> ops;
  size_t line = 0, new_lines = 0;
  for (const Region& r : regions) {
    ops.insert(ops.end(), r.first - line, Op::Equal);
    new_lines += r.first - line;
    std::string text;
    size_t pos = starts[r.first];
    for (size_t i = r.edit_begin; i < r.edit_end; ++i) {
      text.append(before.substr(pos, edits[i].start - pos));
      text.append(edits[i].text);
      pos = edits[i].end;
    }
    text.append(before.substr(pos, starts[r.last] - pos));
    ops.insert(ops.end(), r.last - r.first, Op::Delete);
    size_t added = split_lines(text).size();
    ops.insert(ops.end(), added, Op::Insert);
    new_lines += added;
    line = r.last;
  }
  ops.insert(ops.end(), a.size() - line, Op::Equal);
  new_lines += a.size() - line;
  // An edit that joined or split lines at a region's edge would misalign the two sides: the
  // general algorithm then answers.
  if (new_lines != b.size()) return unified_diff(before, after, before_label, after_label, context);
  return render(a, b, ops, before_label, after_label, context);
}

namespace {

std::string render(const std::vector<Line>& a, const std::vector<Line>& b, const std::vector<Op>& ops,
                   const std::string& before_label, const std::string& after_label, size_t context) {
  std::string out = "--- " + before_label + "\n+++ " + after_label + "\n";
  // Walk the script; a hunk spans changes closer than 2*context equal lines.
  size_t i = 0;
  const size_t total = ops.size();
  std::vector<size_t> a_index(total + 1), b_index(total + 1);  // line numbers before op i
  for (size_t k = 0, ai = 0, bi = 0; k <= total; ++k) {
    a_index[k] = ai;
    b_index[k] = bi;
    if (k == total) break;
    if (ops[k] != Op::Insert) ++ai;
    if (ops[k] != Op::Delete) ++bi;
  }
  while (i < total) {
    while (i < total && ops[i] == Op::Equal) ++i;
    if (i == total) break;
    size_t start = i >= context ? i - context : 0;
    size_t end = i;  // one past the last op of the hunk
    for (;;) {
      while (end < total && ops[end] != Op::Equal) ++end;
      size_t equal_run = end;
      while (equal_run < total && ops[equal_run] == Op::Equal) ++equal_run;
      if (equal_run < total && equal_run - end <= 2 * context) {
        end = equal_run;
        continue;
      }
      end = std::min(total, end + context);
      break;
    }
    size_t a_start = a_index[start], b_start = b_index[start];
    size_t a_len = a_index[end] - a_start, b_len = b_index[end] - b_start;
    out += "@@ -" + std::to_string(a_len ? a_start + 1 : a_start) + "," + std::to_string(a_len) + " +" +
           std::to_string(b_len ? b_start + 1 : b_start) + "," + std::to_string(b_len) + " @@\n";
    for (size_t k = start; k < end; ++k) {
      if (ops[k] == Op::Equal) emit(out, ' ', a[a_index[k]]);
      else if (ops[k] == Op::Delete) emit(out, '-', a[a_index[k]]);
      else emit(out, '+', b[b_index[k]]);
    }
    i = end;
  }
  return out;
}

}  // namespace

}  // namespace crosstrain::migrate
