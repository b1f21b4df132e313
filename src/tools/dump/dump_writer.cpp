#include "tools/dump/dump_writer.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "tools/dump/element_decode.h"
#include "tools/dump/npy.h"
#include "tools/dump/tensor_stats.h"

namespace fs = std::filesystem;

namespace crosstrain::dump {

namespace {

// File names keep the record name readable but safe on every filesystem.
std::string file_stem(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    out += ok ? c : '_';
  }
  if (out.size() > 120) out.resize(120);
  return out;
}

void write_line(FILE* f, const std::string& line, const std::string& what) {
  if (std::fwrite(line.data(), 1, line.size(), f) != line.size() || std::fputc('\n', f) == EOF ||
      std::fflush(f) != 0)
    throw std::runtime_error("cannot write " + what + ": " + std::strerror(errno));
}

}  // namespace

nlohmann::json loss_to_json(double loss) {
  if (std::isnan(loss)) return "nan";
  if (std::isinf(loss)) return loss > 0 ? "inf" : "-inf";
  return loss;
}

double loss_from_json(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_null()) return std::nan("");
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    if (s == "nan" || s == "NaN") return std::nan("");
    if (s == "inf" || s == "Infinity") return INFINITY;
    if (s == "-inf" || s == "-Infinity") return -INFINITY;
  }
  // Only the type: the value may be nested arbitrarily deep, and dumping it would recurse as deep.
  throw std::invalid_argument(std::string("loss is not a number but ") + (j.is_string() ? "the string \"" + j.get<std::string>().substr(0, 40) + "\"" : std::string("a JSON ") + j.type_name()));
}

DumpWriter::~DumpWriter() {
  try {
    close();
  } catch (...) {
    // A destructor must not throw; close() explicitly to see errors.
  }
}

void DumpWriter::open(const std::string& dir, DumpMode mode, const DumpWriterOptions& options) {
  if (is_open()) throw std::logic_error("DumpWriter::open: already open on " + dir_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
  const fs::path index = fs::path(dir) / kIndexFile;
  if (fs::exists(index)) {
    if (!options.overwrite) throw std::runtime_error(dir + ": already holds a dump (index.jsonl exists)");
    fs::remove(index, ec);
    fs::remove(fs::path(dir) / kLossFile, ec);
    fs::remove_all(fs::path(dir) / kTensorDir, ec);
  }
  dir_ = dir;
  mode_ = mode;
  next_seq_ = 0;
  names_step_ = -1;
  names_seen_.clear();
  index_ = std::fopen(index.c_str(), "wb");
  if (!index_) throw std::runtime_error(index.string() + ": cannot create: " + std::strerror(errno));
  loss_ = std::fopen((fs::path(dir) / kLossFile).c_str(), "wb");
  if (!loss_) {
    std::fclose(index_);
    index_ = nullptr;
    throw std::runtime_error(dir + "/" + kLossFile + ": cannot create: " + std::strerror(errno));
  }
  nlohmann::json header = {{"format", kDumpFormatName},
                           {"version", kDumpFormatVersion},
                           {"mode", dump_mode_name(mode)},
                           {"producer", options.producer},
                           {"meta", options.meta}};
  write_line(index_, header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "index");
}

std::string DumpWriter::unique_name(int64_t step, const std::string& name) {
  if (step != names_step_) {
    names_seen_.clear();
    names_step_ = step;
  }
  int& count = names_seen_[name];
  std::string out = count == 0 ? name : name + "#" + std::to_string(count);
  ++count;
  return out;
}

const DumpRecord& DumpWriter::write_tensor(int64_t step, const std::string& name, RecordKind kind, DType dtype,
                                           const std::vector<int64_t>& shape, const void* data) {
  if (!is_open()) throw std::logic_error("DumpWriter::write_tensor: writer is not open");
  for (auto d : shape)
    if (d < 0) throw std::invalid_argument("DumpWriter::write_tensor: negative dimension in " + shape_to_string(shape));
  const int64_t numel = shape_numel(shape);
  if (numel > 0 && data == nullptr) throw std::invalid_argument("DumpWriter::write_tensor: null data for " + name);
  const std::string prefix = record_kind_name(kind) + "/";
  std::string full = name.compare(0, prefix.size(), prefix) == 0 ? name : record_name(kind, name);
  DumpRecord r;
  r.seq = next_seq_;
  r.step = step;
  r.name = unique_name(step, full);
  r.kind = kind;
  r.dtype = dtype;
  r.stored_dtype = dtype == DType::BFloat16 ? DType::Float32 : dtype;
  r.shape = shape;
  r.stats = compute_stats(dtype, data, static_cast<size_t>(numel));
  if (mode_ == DumpMode::Tensors) {
    char seq[32];
    std::snprintf(seq, sizeof seq, "%06lld", static_cast<long long>(r.seq));
    const fs::path rel = fs::path(kTensorDir) / ("step" + std::to_string(step)) / (std::string(seq) + "-" + file_stem(r.name) + ".npy");
    std::error_code ec;
    fs::create_directories((fs::path(dir_) / rel).parent_path(), ec);
    if (ec) throw std::runtime_error(dir_ + ": cannot create " + rel.parent_path().string() + ": " + ec.message());
    r.stored_dtype = write_npy((fs::path(dir_) / rel).string(), dtype, shape, data);
    r.file = rel.generic_string();
  }
  write_line(index_, record_to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "index");
  ++next_seq_;
  last_ = std::move(r);
  return last_;
}

const DumpRecord& DumpWriter::write_scalar(int64_t step, RecordKind kind, double value, DType dtype) {
  switch (dtype) {
    case DType::Float64: return write_tensor(step, "", kind, dtype, {}, &value);
    case DType::Float32: {
      float v = static_cast<float>(value);
      return write_tensor(step, "", kind, dtype, {}, &v);
    }
    case DType::Float16: {
      uint16_t v = float_to_half(static_cast<float>(value));
      return write_tensor(step, "", kind, dtype, {}, &v);
    }
    case DType::BFloat16: {
      uint16_t v = float_to_bfloat16(static_cast<float>(value));
      return write_tensor(step, "", kind, dtype, {}, &v);
    }
    default: throw std::invalid_argument("DumpWriter::write_scalar: dtype must be a floating type");
  }
}

void DumpWriter::log_loss(int64_t step, double loss) {
  if (!is_open()) throw std::logic_error("DumpWriter::log_loss: writer is not open");
  nlohmann::json line = {{"step", step}, {"loss", loss_to_json(loss)}};
  write_line(loss_, line.dump(), "loss log");
}

void DumpWriter::close() {
  if (!is_open()) return;
  bool ok = std::fclose(index_) == 0;
  ok = (std::fclose(loss_) == 0) && ok;
  index_ = loss_ = nullptr;
  if (!ok) throw std::runtime_error(dir_ + ": closing the dump failed: " + std::strerror(errno));
}

}  // namespace crosstrain::dump
