#pragma once
// Console tables: a header row, data rows, per-column alignment. Data first: callers build a
// Table from their result struct and render it; nothing here knows about any particular report.
#include <string>
#include <vector>

namespace crosstrain::report {

enum class Align { Left, Right };

class Table {
 public:
  explicit Table(std::vector<std::string> headers);

  // Column alignment; default is Left for the first column and Right for the others (numbers).
  Table& align(size_t column, Align a);
  Table& add_row(std::vector<std::string> cells);
  // A horizontal rule before the next row added.
  Table& add_separator();

  size_t rows() const { return rows_.size(); }
  const std::vector<std::string>& headers() const { return headers_; }
  const std::vector<std::vector<std::string>>& data() const { return rows_; }

  // Fixed-width text, one line per row, columns separated by two spaces; lines end with '\n'.
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> separators_before_;
};

}  // namespace crosstrain::report
