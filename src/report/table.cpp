#include "report/table.h"

#include <algorithm>
#include <stdexcept>

#include "report/terminal.h"

namespace crosstrain::report {

namespace {
// Display width in code points, so UTF-8 names (e.g. "µs", "×") line up.
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {
  aligns_.assign(headers_.size(), Align::Right);
  if (!aligns_.empty()) aligns_[0] = Align::Left;
}

Table& Table::align(size_t column, Align a) {
  if (column >= aligns_.size()) throw std::out_of_range("Table::align: no column " + std::to_string(column));
  aligns_[column] = a;
  return *this;
}

Table& Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size())
    throw std::invalid_argument("Table::add_row: expected " + std::to_string(headers_.size()) +
                                " cells, got " + std::to_string(cells.size()));
  rows_.push_back(std::move(cells));
  return *this;
}

Table& Table::add_separator() {
  separators_before_.push_back(rows_.size());
  return *this;
}

std::string Table::render() const {
  // Cells often hold names read from other programs' files: printed as escapes, never obeyed by
  // the terminal, and one line each so the columns stay aligned.
  auto safe = [](const std::vector<std::string>& cells) {
    std::vector<std::string> out;
    out.reserve(cells.size());
    for (const auto& c : cells) out.push_back(terminal_safe(c, /*keep_newline_and_tab=*/false));
    return out;
  };
  const std::vector<std::string> headers = safe(headers_);
  std::vector<std::vector<std::string>> rows;
  rows.reserve(rows_.size());
  for (const auto& row : rows_) rows.push_back(safe(row));
  std::vector<size_t> width(headers.size(), 0);
  for (size_t c = 0; c < headers.size(); ++c) width[c] = display_width(headers[c]);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));

  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      size_t pad = width[c] - display_width(cells[c]);
      if (c) out += "  ";
      if (aligns_[c] == Align::Right) out.append(pad, ' ');
      out += cells[c];
      if (aligns_[c] == Align::Left && c + 1 < cells.size()) out.append(pad, ' ');
    }
    out += '\n';
    return out;
  };
  auto rule = [&]() {
    size_t total = 0;
    for (size_t c = 0; c < width.size(); ++c) total += width[c] + (c ? 2 : 0);
    return std::string(total, '-') + "\n";
  };

  std::string out = line(headers) + rule();
  for (size_t r = 0; r < rows.size(); ++r) {
    if (std::find(separators_before_.begin(), separators_before_.end(), r) != separators_before_.end() && r)
      out += rule();
    out += line(rows[r]);
  }
  return out;
}

}  // namespace crosstrain::report
