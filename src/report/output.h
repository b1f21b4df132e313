#pragma once
// Where reports go. Every reporting command takes `--json PATH` ("-" means stdout) and some take
// `--csv`/`--html`. Writes go through write_file_atomic() or write_stdout(): every byte written is
// checked, and a failure throws std::runtime_error naming the path and the system's reason, which
// the CLI turns into exit status 1.
//
// What write_file_atomic(path) does with what it finds at `path`:
//   nothing or a regular file  a temporary file is created next to it with O_EXCL under an
//                              unpredictable name (".NAME.tmp-PID-XXXXXX"), written, fsync()ed,
//                              renamed over `path`, and the directory fsync()ed: a crash leaves
//                              either the old file or the new one, never half of one. A replaced
//                              file keeps its permission bits; a new one gets 0666 minus umask.
//   a symbolic link            to a device, FIFO or socket (/dev/stdout): written through, as below.
//                              To a regular file, a directory, nothing (dangling) or itself
//                              (a loop): refused, so that a link planted where a report goes cannot
//                              redirect the write elsewhere; the link is never replaced.
//   a character device, FIFO   written directly, in place (`--json /dev/stdout`, a named pipe);
//   or socket                  a FIFO without a reader is refused instead of waiting for one.
//   a directory                refused.
// Temporary files of earlier writers to the same target whose process no longer runs (a crash,
// kill -9) are removed before writing.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crosstrain::report {

// Version of every JSON document crosstrain writes; bump when a key changes meaning or goes away.
constexpr int kJsonSchemaVersion = 1;

// Writes `doc` (pretty-printed, 2 spaces) to `path`, or to stdout when path is "-".
void write_json(const nlohmann::json& doc, const std::string& path);

// Writes `bytes` to `path` as described above.
void write_file_atomic(const std::string& path, const std::string& bytes);
// The same for content produced piece by piece (a checkpoint of hundreds of MB need not exist in
// memory twice): `produce` is called once with a sink that writes its bytes on; a failed write
// throws std::runtime_error naming the path from the sink, and anything `produce` throws leaves
// the old file in place, as any failure does.
using ByteSink = std::function<void(const char* data, size_t size)>;
void write_file_atomic(const std::string& path, const std::function<void(const ByteSink&)>& produce);

// Writes `bytes` to standard output and flushes it (C stdio and std::cout alike); throws
// std::runtime_error("cannot write to standard output: ...") when any of it fails (a full disk,
// /dev/full, a closed pipe).
void write_stdout(const std::string& bytes);

// Flushes std::cout and stdout and reports whether everything written to them so far arrived.
// The CLI calls it before exiting so that a failed write to stdout fails the command.
bool flush_stdout(std::string* error = nullptr);

// Throws std::runtime_error when `path` cannot be written as write_file_atomic() would write it:
// its directory missing or not writable, `path` a directory or a dangling link. Lets a command
// check its output locations before it does the work. "-" is always writable.
void check_writable(const std::string& path);

// An output never replaces an input: throws std::invalid_argument (the CLI's exit status 2)
// when `output` is an input file however it is named (a symbolic link, a linked folder, another
// hard link: report::path_within) or an input folder itself, with one line naming the flag
// (`what`, "--html"), the output and the input. Call it before writing anything, once the files and
// folders the command reads are known. "-" (stdout) is never an input. (compare is stricter: it
// writes nothing inside a dump folder, through report::path_within.)
void refuse_input_as_output(const std::string& what, const std::string& output, const std::vector<std::string>& inputs);

// RFC 4180 CSV: fields with comma, quote or newline are quoted, quotes doubled.
std::string csv_field(const std::string& field);
std::string csv_document(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

// True when `--json -` sends JSON to stdout, so human-readable text must stay off stdout.
inline bool json_to_stdout(const std::string& json_path) { return json_path == "-"; }

}  // namespace crosstrain::report
