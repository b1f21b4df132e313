#pragma once
// One index.jsonl record read straight from the index's text (report::JsonScanner), without a DOM:
// an operator-level dump holds 100k records and more, and compare reads two of them. Fields a
// reader does not use ("inputs", "args", anything newer) are skipped, validated. Errors are
// std::invalid_argument (caller's data: the record becomes a problem of its dump) or
// report::JsonFormatError (malformed JSON, with the byte offset).
#include "report/json_scanner.h"
#include "tools/dump/dump_format.h"

namespace crosstrain::dump {

// Reads one record starting at the scanner's position; leaves it after the closing brace.
DumpRecord parse_record(report::JsonScanner& js);

}  // namespace crosstrain::dump
