#pragma once
// A validating pull scanner for one JSON document held in memory. It is what lets the trace
// reader and the dump index reader visit every byte once, pick out the few fields they need and
// skip the rest without building a DOM. Every failure throws JsonFormatError carrying the file and the byte offset, so a
// truncated or malformed trace produces "trace.json: byte 1234: expected ':' after object key".
//
// The buffer must end with at least one NUL byte past `size` (the reader guarantees it): NUL is
// never valid JSON outside a string, so it doubles as the end sentinel and the hot loops need no
// separate bounds check; inside a string a stop byte is the end only at `size`.
//
// Two departures from strict JSON, both for traces real writers produce: Python's NaN/Infinity
// in skipped values, and raw control bytes inside strings, kept as they are (torch 2.4 writes
// garbage bytes into some python_function names, pytorch/pytorch#136180; Perfetto refuses such
// a file, the TensorBoard profiler plugin reads it with json.loads(strict=False)).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace crosstrain::report {

// The deepest nesting any of crosstrain's JSON readers accepts. Files crosstrain and profilers
// write nest a few levels; the limit keeps a hostile file from costing stack or memory by depth.
constexpr int kMaxJsonDepth = 256;

class JsonFormatError : public std::runtime_error {
 public:
  JsonFormatError(const std::string& file, uint64_t offset, const std::string& what);
  uint64_t offset() const { return offset_; }
  // What went wrong, without the file and the offset ("expected ':' after object key").
  const std::string& reason() const { return reason_; }

 private:
  uint64_t offset_;
  std::string reason_;
};

// A JSON number split so that large epoch timestamps keep their fractional digits.
struct JsonNumber {
  double value = 0;      // the whole number
  int64_t whole = 0;     // integer part when it fits (|value| < 9e18), else 0
  double fraction = 0;   // value - whole, exact to the digits written
  bool integral = false; // written without '.' or exponent
};

class JsonScanner {
 public:
  JsonScanner(const char* data, size_t size, std::string file);

  // Skips whitespace and returns the next byte without consuming it ('\0' at the end).
  char peek();
  bool at_end();
  // Consumes `c` (after whitespace) or fails with "expected 'c' <context>".
  void expect(char c, const char* context);
  // Consumes `c` if it is next; returns whether it was.
  bool consume(char c);

  // The next string. The view points into the document, or into an internal scratch buffer when
  // the string had escapes; it stays valid until the next call that reads a string.
  std::string_view read_string();
  JsonNumber read_number();
  // A number, or a string holding a number (the Ascend profiler writes timestamps as strings).
  JsonNumber read_number_or_numeric_string();
  int64_t read_int();            // fails on fractions and out-of-range values
  bool read_bool();
  void read_null();
  // Skips any value, validating it. Nesting deeper than kMaxJsonDepth is an error, not a stack overflow.
  void skip_value();
  // Skips a value and returns its source text with insignificant whitespace removed.
  std::string_view read_compact_value();

  // Object/array iteration: call after '{' / '[' was consumed; returns false at the closing
  // bracket (consumed) and otherwise eats the ',' between members.
  bool next_member(bool& first, char close);

  uint64_t offset() const { return static_cast<uint64_t>(p_ - begin_); }
  // Moves to `offset` (<= size), e.g. to start a parse in the middle of a document.
  void seek(uint64_t offset) { p_ = begin_ + (offset <= static_cast<uint64_t>(end_ - begin_) ? offset : end_ - begin_); }
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_at(uint64_t offset, const std::string& what) const;
  const std::string& file() const { return file_; }

 private:
  void skip_ws();
  void skip_value_at(int depth);
  void skip_string();
  void skip_number();
  void read_literal(const char* word);
  void parse_escape(std::string& out);

  const char* begin_;
  const char* p_;
  const char* end_;
  std::string file_;
  std::string scratch_;
  std::string compact_;
};

}  // namespace crosstrain::report
