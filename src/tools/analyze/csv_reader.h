#pragma once
// CSV files as RFC 4180 writes them (the Ascend profiler's summaries, spreadsheets, Python's csv
// module), read one record at a time: fields split at commas, records at CRLF, LF or CR; a field
// that starts with a quote (after blanks) runs to its closing quote and may hold commas, newlines
// and doubled quotes; a quote inside an unquoted field is an ordinary character. Cells come back
// trimmed of spaces and tabs (msprof appends a tab to long numbers so spreadsheets keep their
// digits); a UTF-8 byte-order mark is dropped. Memory is one record, whatever the file's size.
//
//   CsvReader csv(path);
//   std::vector<std::string> cells;
//   while (csv.next(cells)) ... csv.record() ...     // the header is record 1
//   if (csv.unterminated()) ...                       // the last record ran into the end inside quotes
#include <cstddef>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace crosstrain::analyze {

class CsvReader {
 public:
  explicit CsvReader(const std::string& path);
  bool ok() const { return static_cast<bool>(in_); }
  // The next record's cells; false at the end of the file.
  bool next(std::vector<std::string>& cells);
  size_t record() const { return record_; }
  bool unterminated() const { return unterminated_; }

 private:
  int peek();
  int get();
  std::ifstream in_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0, record_ = 0;
  bool unterminated_ = false;
};

// A cell that must hold a plain decimal number ("123.456", "1e3"): no hex, inf or nan, no negative
// value when `non_negative`, none above `max_value` (a duration: kMaxDurationUs, trace.h). On
// false, `why` says what is wrong ("empty", "negative", "implausibly large" ...).
bool csv_decimal(const std::string& cell, bool non_negative, double& value, const char*& why,
                 double max_value = std::numeric_limits<double>::max());

// Cells that do not hold what their column promises: counted, the first three kept as examples
// ("record 4 Duration(us) '0x10': not a decimal number"), one note per file.
class CsvBadCells {
 public:
  explicit CsvBadCells(std::string file, std::string noun = "cell") : file_(std::move(file)), noun_(std::move(noun)) {}
  void add(size_t record, const std::string& column, const std::string& value, const char* why);
  // The same for a value found elsewhere than in a record (a JSON file: "step1 hcom_allReduce_1
  // Wait Time(ms)").
  void add_at(const std::string& where, const std::string& value, const char* why);
  // "<file>: N bad cell(s), <consequence> (examples)"; nothing when every cell was good.
  void note_to(std::vector<std::string>& notes, const char* consequence) const;
  size_t count() const { return count_; }

 private:
  std::string file_, noun_;
  size_t count_ = 0;
  std::string examples_;
};

}  // namespace crosstrain::analyze
