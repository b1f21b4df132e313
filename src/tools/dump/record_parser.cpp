#include "tools/dump/record_parser.h"

#include <memory>
#include <stdexcept>
#include <string>

namespace crosstrain::dump {

namespace {

using report::JsonScanner;

std::optional<double> number_or_null(JsonScanner& js, std::string_view key) {
  if (js.peek() == 'n') {
    js.read_null();
    return std::nullopt;
  }
  if (js.peek() != '-' && (js.peek() < '0' || js.peek() > '9'))
    throw std::invalid_argument("stats field '" + std::string(key) + "' is not a number");
  return js.read_number().value;
}

int64_t integer(JsonScanner& js, const char* what) {
  const char c = js.peek();
  if (c != '-' && (c < '0' || c > '9')) throw std::invalid_argument(std::string("'") + what + "' is not an integer");
  return js.read_int();
}

std::string string_of(JsonScanner& js, const char* what) {
  if (js.peek() != '"') throw std::invalid_argument(std::string("'") + what + "' is not a string");
  return std::string(js.read_string());
}

TensorStats read_stats(JsonScanner& js) {
  if (js.peek() != '{') throw std::invalid_argument("'stats' is not an object");
  js.expect('{', "opening 'stats'");
  TensorStats s;
  bool first = true;
  while (js.next_member(first, '}')) {
    const std::string_view key = js.read_string();  // compared before the next string is read
    js.expect(':', "after a key of 'stats'");
    if (key == "max") s.max = number_or_null(js, key);
    else if (key == "min") s.min = number_or_null(js, key);
    else if (key == "mean") s.mean = number_or_null(js, key);
    else if (key == "norm") s.norm = number_or_null(js, key);
    else if (key == "nan_count" || key == "inf_count") {
      int64_t& field = key == "nan_count" ? s.nan_count : s.inf_count;
      if (js.peek() == 'n') js.read_null();
      else field = integer(js, key == "nan_count" ? "nan_count" : "inf_count");
    } else js.skip_value();
  }
  return s;
}

// One entry of op.inputs, {"arg", "dtype", "shape", "device", "from"} or {"arg", "tensors": [...]}:
// the "from" names it holds.
void read_input_entry(JsonScanner& js, std::vector<std::string>& from) {
  if (js.peek() != '{') return js.skip_value();
  js.expect('{', "opening an entry of 'op.inputs'");
  bool first = true;
  while (js.next_member(first, '}')) {
    const std::string_view key = js.read_string();
    js.expect(':', "after a key of 'op.inputs'");
    if (key == "from" && js.peek() == '"') {
      from.emplace_back(js.read_string());
    } else if (key == "tensors" && js.peek() == '[') {
      js.expect('[', "opening 'tensors'");
      bool f = true;
      while (js.next_member(f, ']')) read_input_entry(js, from);
    } else {
      js.skip_value();
    }
  }
}

// A value of op.args: {"tensor": FILE, ...}, a list of values, or anything else (skipped).
void read_arg_value(JsonScanner& js, std::vector<std::string>& files, int depth) {
  const char c = js.peek();
  if (c == '[' && depth < 4) {
    js.expect('[', "opening a list in 'op.args'");
    bool f = true;
    while (js.next_member(f, ']')) read_arg_value(js, files, depth + 1);
  } else if (c == '{') {
    js.expect('{', "opening a value of 'op.args'");
    bool first = true;
    while (js.next_member(first, '}')) {
      const std::string_view key = js.read_string();
      js.expect(':', "after a key of 'op.args'");
      if (key == "tensor" && js.peek() == '"') files.emplace_back(js.read_string());
      else if (key == "value") read_arg_value(js, files, depth + 1);
      else js.skip_value();
    }
  } else {
    js.skip_value();
  }
}

template <typename ReadEntry>
void read_list(JsonScanner& js, ReadEntry entry) {
  if (js.peek() != '[') return js.skip_value();
  js.expect('[', "opening a list of 'op'");
  bool f = true;
  while (js.next_member(f, ']')) entry();
}

OpOrigin read_op(JsonScanner& js) {
  if (js.peek() != '{') throw std::invalid_argument("'op' is not an object");
  js.expect('{', "opening 'op'");
  OpOrigin o;
  bool first = true;
  while (js.next_member(first, '}')) {
    const std::string_view key = js.read_string();
    js.expect(':', "after a key of 'op'");
    std::string* field = key == "name"          ? &o.op
                         : key == "overload"    ? &o.overload
                         : key == "phase"       ? &o.phase
                         : key == "module"      ? &o.module
                         : key == "source"      ? &o.source
                         : key == "code"        ? &o.code
                         : key == "user_source" ? &o.user_source
                         : key == "user_code"   ? &o.user_code
                                                : nullptr;
    const bool random = key == "random";
    if (key == "inputs") read_list(js, [&] { read_input_entry(js, o.input_records); });
    else if (key == "args") read_list(js, [&] { read_arg_value(js, o.input_files, 0); });
    else if (field && js.peek() == '"') *field = std::string(js.read_string());
    else if (random && (js.peek() == 't' || js.peek() == 'f')) o.random = js.read_bool();
    else js.skip_value();  // fields a damaged op holds: detail, not the record
  }
  return o;
}

DType dtype_of(JsonScanner& js, const char* what) {
  const std::string text = string_of(js, what);
  auto t = parse_dtype(text);
  if (!t) throw std::invalid_argument(std::string("unknown ") + what + " '" + text.substr(0, 40) + "'");
  return *t;
}

bool leads_out(const std::string& f) {
  return !f.empty() && (f[0] == '/' || f == ".." || f.rfind("../", 0) == 0 || f.find("/../") != std::string::npos ||
                        (f.size() >= 3 && f.compare(f.size() - 3, 3, "/..") == 0));
}

}  // namespace

DumpRecord parse_record(JsonScanner& js) {
  if (js.peek() != '{') throw std::invalid_argument("record is not a JSON object");
  js.expect('{', "opening a record");
  DumpRecord r;
  bool seq = false, step = false, name = false, dtype = false, shape = false, stats = false, stored = false;
  bool first = true;
  while (js.next_member(first, '}')) {
    const std::string_view key = js.read_string();
    js.expect(':', "after a record key");
    if (key == "seq") r.seq = integer(js, "seq"), seq = true;
    else if (key == "step") r.step = integer(js, "step"), step = true;
    else if (key == "name") r.name = string_of(js, "name"), name = true;
    else if (key == "kind") r.kind = parse_record_kind(string_of(js, "kind"));
    else if (key == "dtype") r.dtype = dtype_of(js, "dtype"), dtype = true;
    else if (key == "stored_dtype") r.stored_dtype = dtype_of(js, "stored_dtype"), stored = true;
    else if (key == "shape") {
      if (js.peek() != '[') throw std::invalid_argument("'shape' is not a list");
      js.expect('[', "opening 'shape'");
      bool f = true;
      while (js.next_member(f, ']')) {
        const int64_t d = integer(js, "shape");
        if (d < 0) throw std::invalid_argument("negative dimension in 'shape'");
        r.shape.push_back(d);
      }
      shape = true;
    } else if (key == "stats") r.stats = read_stats(js), stats = true;
    else if (key == "file") r.file = string_of(js, "file");
    else if (key == "device") r.device = string_of(js, "device");
    else if (key == "op") r.op = std::make_shared<const OpOrigin>(read_op(js));
    else js.skip_value();
  }
  for (auto [have, key] : {std::pair{seq, "seq"}, std::pair{step, "step"}, std::pair{name, "name"},
                           std::pair{dtype, "dtype"}, std::pair{shape, "shape"}, std::pair{stats, "stats"}})
    if (!have) throw std::invalid_argument(std::string("record lacks '") + key + "'");
  if (!stored) r.stored_dtype = r.dtype == DType::BFloat16 ? DType::Float32 : r.dtype;
  r.stats.numel = shape_numel(r.shape);
  if (leads_out(r.file)) throw std::invalid_argument("'file' " + r.file + " leads out of the dump directory");
  return r;
}

DumpRecord record_from_json(const nlohmann::json& j) {
  const std::string text = j.dump();
  JsonScanner js(text.c_str(), text.size(), "record");
  try {
    return parse_record(js);
  } catch (const report::JsonFormatError& e) {
    throw std::invalid_argument(std::string("record is not JSON: ") + e.what());
  }
}

}  // namespace crosstrain::dump
