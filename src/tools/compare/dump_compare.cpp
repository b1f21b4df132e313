#include "tools/compare/dump_compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <stdexcept>
#include <string_view>

#include "report/input_file.h"
#include "tools/compare/noise_model.h"
#include "tools/compare/record_alignment.h"
#include "tools/dump/dump_reader.h"
#include "tools/dump/npy.h"

namespace fs = std::filesystem;

namespace crosstrain::compare {

using dump::DType;
using dump::DumpIndex;
using dump::DumpRecord;
using dump::LossLog;
using dump::NpyArray;
using dump::compare_losses;
using dump::dtype_is_float;
using dump::dtype_name;
using dump::dtype_size;
using dump::kIndexFile;
using dump::kLossFile;
using dump::parse_precision;
using dump::read_dump;
using dump::read_loss_log;
using dump::shape_numel;
using dump::shape_to_string;

namespace {

// The compute precision a run declares in its index header (meta.precision), e.g. "bf16" for a
// mixed-precision run whose parameter gradients are float32 tensors computed from bf16 activations.
std::optional<DType> run_precision(const nlohmann::json& meta) {
  if (!meta.is_object() || !meta.contains("precision") || !meta["precision"].is_string()) return std::nullopt;
  return parse_precision(meta["precision"].get<std::string>());
}

DType effective_dtype(const DumpRecord& a, const DumpRecord& b, const std::optional<DType>& run_a,
                      const std::optional<DType>& run_b, const CompareOptions& opt) {
  DType t = lower_precision(a.dtype, b.dtype);
  if (!dtype_is_float(t)) return t;
  if (opt.precision) return lower_precision(t, *opt.precision);
  if (run_a) t = lower_precision(t, *run_a);
  if (run_b) t = lower_precision(t, *run_b);
  return t;
}

void compare_pair(TensorComparison& tc, const DumpIndex& da, const DumpIndex& db, DType effective,
                  const NoiseContext& noise, const CompareOptions& opt, int64_t& bytes) {
  const DumpRecord& a = *tc.a;
  const DumpRecord& b = *tc.b;
  tc.effective_dtype = effective;
  tc.noise_scale = noise.scale();
  tc.scale_from_inputs = noise.input_scale > noise.own_rms;
  tc.tolerance = record_tolerance(effective, noise.same_precision);
  if (a.shape != b.shape) {
    tc.status = PairStatus::ShapeMismatch;
    tc.verdict = Verdict::Error;
    tc.reason = "shape " + shape_to_string(a.shape) + " vs " + shape_to_string(b.shape);
    return;
  }
  const bool tensors = !opt.stats_only && !a.file.empty() && !b.file.empty();
  if (!tensors) {
    tc.method = "stats";
    double worst = 0;
    tc.verdict = stats_verdict(a.stats, b.stats, effective, noise, &worst, &tc.reason);
    tc.stat_rel_error = worst;
    tc.rel_error = worst;
    return;
  }
  tc.method = "tensor";
  auto open_side = [&](const DumpIndex& d, const DumpRecord& r, const char* side, NpyArray& out) {
    try {
      out = NpyArray::open(report::resolve_inside(d.dir, r.file));
    } catch (const std::exception& e) {
      tc.reason = std::string(side) + ": " + e.what();
      return false;
    }
    if (out.dtype() != r.stored_dtype || static_cast<int64_t>(out.numel()) != shape_numel(r.shape)) {
      tc.reason = std::string(side) + ": " + r.file + " holds " + dtype_name(out.dtype()) + " " +
                  shape_to_string(out.shape()) + " but the index says " + dtype_name(r.stored_dtype) + " " +
                  shape_to_string(r.shape);
      return false;
    }
    return true;
  };
  NpyArray fa, fb;
  if (!open_side(da, a, "A", fa) || !open_side(db, b, "B", fb)) {
    tc.status = PairStatus::Unreadable;
    tc.verdict = Verdict::Error;
    return;
  }
  tc.metrics = compare_arrays(fa.dtype(), fa.data(), fb.dtype(), fb.data(), fa.numel(), opt.threads);
  bytes += static_cast<int64_t>(fa.numel() * dtype_size(fa.dtype()) + fb.numel() * dtype_size(fb.dtype()));
  double rel = 0;
  tc.verdict = tensor_verdict(*tc.metrics, a.stats, effective, noise, &tc.reason, &rel);
  if (!std::isnan(rel)) tc.rel_error = rel;
}

// Across precisions, an operator's integer output (max_pool's or topk's indices) follows values
// that were rounded differently: its difference warns, and the values beside it are judged.
void soften_integer_outputs(TensorComparison& tc, const NoiseContext& noise) {
  if (noise.same_precision || dtype_is_float(tc.effective_dtype) || !tc.a->op || tc.verdict != Verdict::Error ||
      tc.status != PairStatus::Compared)
    return;
  tc.verdict = Verdict::Warn;
  tc.reason += " (an operator's integer output, from values rounded in another precision)";
}

// Autocast's casts (aten::_to_copy) exist only in the run that casts: across precisions they are
// expected on one side only.
bool is_precision_cast(const TensorComparison& t) {
  const DumpRecord* r = t.a ? t.a : t.b;
  return r->op && r->op->op == "aten::_to_copy";
}

void finish(CompareResult& r, const CompareOptions& opt) {
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    auto& t = r.tensors[i];
    const bool one_side = t.status == PairStatus::MissingInA || t.status == PairStatus::MissingInB;
    if (one_side && !r.regime.same_precision && is_precision_cast(t)) {
      ++r.counts.casts_one_side;
      t.reason += ": a cast of the run in the lower precision";
    }
    switch (t.status) {
      case PairStatus::MissingInA: ++r.counts.missing_in_a; continue;
      case PairStatus::MissingInB: ++r.counts.missing_in_b; continue;
      case PairStatus::ShapeMismatch: ++r.counts.shape_mismatch; break;
      case PairStatus::Unreadable: ++r.counts.unreadable; break;
      case PairStatus::Compared: break;
    }
    if (t.reordered) ++r.counts.reordered;
    if (t.verdict == Verdict::Pass) ++r.counts.pass;
    if (t.verdict == Verdict::Warn) ++r.counts.warn;
    if (t.verdict == Verdict::Error) ++r.counts.error;
    if (t.exact()) ++r.counts.exact;
    if (t.verdict == Verdict::Error && !r.first_divergence) r.first_divergence = i;
    if (t.verdict == Verdict::Warn && !r.first_warning) r.first_warning = i;
  }
  // A verdict about nothing is none: no record pair compared and no loss step either.
  const int64_t compared = r.counts.pass + r.counts.warn + r.counts.error;
  r.nothing_compared = compared == 0 && (!r.loss || r.loss->steps.empty());
  bool agree = r.problems.empty() && r.counts.error == 0 && !r.nothing_compared;
  if (!opt.allow_missing && r.counts.missing_in_a + r.counts.missing_in_b > r.counts.casts_one_side) agree = false;
  if (opt.strict && r.counts.warn > 0) agree = false;
  if (r.loss && !r.loss->within_tolerance()) agree = false;
  if (r.input == "loss_logs" && r.loss && r.loss->steps.empty()) agree = false;
  r.agree = agree;
}

// The lowest floating-point precision among the records of both dumps (float64 when none is).
DType lowest_float_dtype(const DumpIndex& da, const DumpIndex& db) {
  DType low = DType::Float64;
  for (const auto* idx : {&da, &db})
    for (const auto& rec : idx->records)
      if (dtype_is_float(rec.dtype)) low = lower_precision(low, rec.dtype);
  return low;
}

// The kind of device a record lived on: "cuda" for "cuda:1", "cpu" when the record names none.
std::string device_kind(const std::string& device) {
  return device.empty() ? "cpu" : device.substr(0, device.find(':'));
}

// Do both runs compute in one precision on one kind of device? Only then does the noise rule
// judge (verdict.h); any difference in declared precision, dtype or device makes it the table's.
PrecisionRegime precision_regime(const CompareResult& r, const DumpIndex& da, const DumpIndex& db,
                                 const std::optional<DType>& run_a, const std::optional<DType>& run_b,
                                 const CompareOptions& opt) {
  PrecisionRegime g;
  const auto differ = [&](std::string why) {
    g.same_precision = false;
    g.why = std::move(why);
    return g;
  };
  // An undeclared precision is float32's, the default of every framework.
  if (!opt.precision && run_a.value_or(DType::Float32) != run_b.value_or(DType::Float32))
    return differ("the runs declare different precisions (A: " + (run_a ? dtype_name(*run_a) : std::string("none")) +
                  ", B: " + (run_b ? dtype_name(*run_b) : std::string("none")) + ")");
  for (const char* key : {"device", "device_type"}) {
    const auto ma = da.meta.find(key), mb = db.meta.find(key);
    if (ma != da.meta.end() && mb != db.meta.end() && ma->is_string() && mb->is_string() &&
        device_kind(ma->get<std::string>()) != device_kind(mb->get<std::string>()))
      return differ("the runs ran on different devices (meta." + std::string(key) + ": " + ma->get<std::string>() +
                    " vs " + mb->get<std::string>() + ")");
  }
  for (const auto& t : r.tensors) {
    if (!t.a || !t.b) continue;
    if (t.a->dtype != t.b->dtype && (dtype_is_float(t.a->dtype) || dtype_is_float(t.b->dtype)))
      return differ("dtypes differ (" + dtype_name(t.a->dtype) + " vs " + dtype_name(t.b->dtype) + " at " + t.name + ")");
    if (device_kind(t.a->device) != device_kind(t.b->device))
      return differ("devices differ (" + device_kind(t.a->device) + " vs " + device_kind(t.b->device) + " at " + t.name +
                    ")");
  }
  return g;
}

// "cannot read A: REASON", the path named once.
[[noreturn]] void unreadable(const char* side, const std::string& path, const std::string& reason) {
  const bool named = reason.find(path) != std::string::npos;
  throw UnreadableInput("cannot read " + std::string(side) + ": " + (named ? reason : path + ": " + reason));
}

bool not_found(const std::error_code& ec) {
  return ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory;
}

// A dump directory's loss log, or a loss log file.
LossLog loss_of(const std::string& path, const char* side) {
  std::string file = path;
  if (fs::is_directory(path)) {
    const fs::path p = fs::path(path) / kLossFile;
    std::error_code ec;
    const auto st = fs::symlink_status(p, ec);
    if (ec && !not_found(ec)) unreadable(side, path, p.string() + ": " + ec.message());
    if (!fs::exists(st))
      throw std::invalid_argument(std::string(side) + ": " + path + " is a folder without " + kLossFile +
                                  ": neither a dump with a loss log nor a loss log");
    file = p.string();
  }
  LossLog log;
  try {
    log = read_loss_log(file);
  } catch (const std::exception& e) {
    unreadable(side, path, e.what());
  }
  if (log.points.empty() && !log.problems.empty())
    throw std::invalid_argument(std::string(side) + ": " + file + " is not a loss log (no line holds a step and a loss; " +
                                log.problems.front() + ")");
  return log;
}

DumpIndex dump_of(const std::string& dir, const char* side) {
  const fs::path index = fs::path(dir) / kIndexFile;
  std::error_code ec;
  const auto st = fs::symlink_status(index, ec);
  if (ec && !not_found(ec)) unreadable(side, dir, index.string() + ": " + ec.message());
  if (!fs::exists(st))
    throw std::invalid_argument(std::string(side) + ": " + dir + " is not a crosstrain dump (no " + kIndexFile + ")");
  try {
    return read_dump(dir);
  } catch (const std::exception& e) {
    unreadable(side, dir, e.what());
  }
}

std::map<std::string_view, int> name_counts(const std::vector<const DumpRecord*>& records) {
  std::map<std::string_view, int> n;
  for (const DumpRecord* r : records) ++n[r->name];
  return n;
}

// Why a record has no partner: "only in A", or, when its name is written more than once in the
// step (writers number repeats "#1", "#2": a damaged or merged index), that it is duplicated.
std::string one_side_reason(const char* side, const std::string& name, const std::map<std::string_view, int>& mine,
                            const std::map<std::string_view, int>& other) {
  const auto count = [&](const std::map<std::string_view, int>& m) {
    const auto it = m.find(name);
    return it == m.end() ? 0 : it->second;
  };
  const int here = count(mine), there = count(other);
  if (here <= 1) return std::string("only in ") + side;
  const char* other_side = side[0] == 'A' ? "B" : "A";
  return std::string("duplicated name: ") + side + " holds it " + std::to_string(here) + " times in this step, " +
         other_side + " " + std::to_string(there) + (there == 1 ? " time" : " times") + "; the extra one has no partner";
}

// Pairs the two dumps' records step by step (record_alignment.h), in execution order.
std::vector<TensorComparison> match_records(const DumpIndex& da, const DumpIndex& db, std::vector<std::string>& notes) {
  std::vector<TensorComparison> out;
  out.reserve(da.records.size() + db.records.size());
  size_t ia = 0, ib = 0;
  std::vector<const DumpRecord*> sa, sb;
  size_t duplicated = 0, reordered = 0;
  std::string first_duplicate, first_reordered;
  while (ia < da.records.size() || ib < db.records.size()) {
    const int64_t step = ia == da.records.size()   ? db.records[ib].step
                         : ib == db.records.size() ? da.records[ia].step
                                                   : std::min(da.records[ia].step, db.records[ib].step);
    sa.clear();
    sb.clear();
    for (; ia < da.records.size() && da.records[ia].step == step; ++ia) sa.push_back(&da.records[ia]);
    for (; ib < db.records.size() && db.records[ib].step == step; ++ib) sb.push_back(&db.records[ib]);
    const StepAlignment al = align_records(sa, sb);
    const auto count_a = name_counts(sa), count_b = name_counts(sb);
    if (!al.aligned)
      notes.push_back("step " + std::to_string(step) + ": the two runs' records differ in more than " +
                      std::to_string(kMaxAlignmentEdits) + " places; records were paired by name only");
    for (const auto& p : al.pairs) {
      TensorComparison tc;
      tc.step = step;
      tc.a = p.a ? sa[*p.a] : nullptr;
      tc.b = p.b ? sb[*p.b] : nullptr;
      const DumpRecord& named = tc.a ? *tc.a : *tc.b;
      tc.name = named.name;
      tc.kind = named.kind;
      if (tc.a && tc.b && tc.b->name != tc.a->name) tc.name_b = tc.b->name;
      tc.reordered = p.reordered;
      if (p.reordered && reordered++ == 0)
        first_reordered = "step " + std::to_string(step) + " " + tc.name + (tc.name_b.empty() ? "" : " with B's " + tc.name_b);
      if (!tc.b) {
        tc.status = PairStatus::MissingInB;
        tc.verdict = Verdict::Error;
        tc.reason = one_side_reason("A", tc.name, count_a, count_b);
      } else if (!tc.a) {
        tc.status = PairStatus::MissingInA;
        tc.verdict = Verdict::Error;
        tc.reason = one_side_reason("B", tc.name, count_b, count_a);
      }
      if (tc.reason.rfind("duplicated name", 0) == 0 && duplicated++ == 0)
        first_duplicate = "step " + std::to_string(step) + " " + tc.name + " (" + tc.reason + ")";
      out.push_back(std::move(tc));
    }
  }
  if (reordered > 0)
    notes.push_back(std::to_string(reordered) + " record pair(s) paired out of order: the two runs emitted them in "
                    "another order (autograd's order of gradient accumulation may differ between runs), so their #k "
                    "differ; each is the only record of its phase, name without #k, shape and kind of dtype left "
                    "unpaired on either side; first: " + first_reordered);
  if (duplicated > 0)
    notes.push_back(std::to_string(duplicated) + " record(s) on one side only are repeats of a name within its step, "
                    "not records the other run lacks; first: " + first_duplicate);
  return out;
}

}  // namespace

std::string pair_status_name(PairStatus s) {
  switch (s) {
    case PairStatus::Compared: return "compared";
    case PairStatus::MissingInA: return "missing_in_a";
    case PairStatus::MissingInB: return "missing_in_b";
    case PairStatus::ShapeMismatch: return "shape_mismatch";
    case PairStatus::Unreadable: return "unreadable";
  }
  return "unreadable";
}

std::vector<size_t> CompareResult::divergence_window() const {
  std::vector<size_t> w;
  if (!first_divergence) return w;
  size_t want = context;
  std::vector<size_t> before;
  for (size_t i = *first_divergence; i-- > 0 && before.size() < want;)
    if (tensors[i].status == PairStatus::Compared) before.push_back(i);
  w.assign(before.rbegin(), before.rend());
  w.push_back(*first_divergence);
  return w;
}

CompareResult compare_paths(const std::string& a, const std::string& b, const CompareOptions& opt,
                            const CompareProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  for (auto [p, side] : {std::pair{&a, "A"}, std::pair{&b, "B"}}) {
    std::error_code ec;
    const auto st = fs::status(*p, ec);
    // A link loop or an unreadable folder on the way is not a missing file: say what the system said.
    if (ec && !not_found(ec)) unreadable(side, *p, ec.message());
    if (!fs::exists(st)) throw std::invalid_argument("no such file or directory: " + *p);
  }
  CompareResult r;
  r.path_a = a;
  r.path_b = b;
  r.context = opt.context;
  const bool dirs = fs::is_directory(a) && fs::is_directory(b);
  if (!dirs) {
    r.input = "loss_logs";
    const LossLog la = loss_of(a, "A"), lb = loss_of(b, "B");
    for (const auto& p : la.problems) r.problems.push_back("A: " + p);
    for (const auto& p : lb.problems) r.problems.push_back("B: " + p);
    r.loss = compare_losses(la, lb, opt.loss_rtol.value_or(thresholds_for(opt.precision.value_or(DType::Float32)).loss_rtol));
    finish(r, opt);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }
  r.input = "dumps";
  // The two indexes are read at once (an operator-level dump holds 100k records and more). A
  // failure on A is reported before one on B, as when they were read one after the other.
  auto reading_b = std::async(std::launch::async, [&] { return std::make_shared<const DumpIndex>(dump_of(b, "B")); });
  try {
    r.index_a = std::make_shared<const DumpIndex>(dump_of(a, "A"));
  } catch (...) {
    try {
      reading_b.get();
    } catch (...) {
    }
    throw;
  }
  r.index_b = reading_b.get();
  const DumpIndex& da = *r.index_a;
  const DumpIndex& db = *r.index_b;
  for (auto [idx, side] : {std::pair{&da, "A"}, std::pair{&db, "B"}}) {
    for (const auto& p : idx->problems) r.problems.push_back(std::string(side) + ": " + p);
    for (const auto& p : idx->loss.problems) r.problems.push_back(std::string(side) + ": " + p);
  }
  r.tensors = match_records(da, db, r.notes);
  const auto run_a = run_precision(da.meta), run_b = run_precision(db.meta);
  r.regime = precision_regime(r, da, db, run_a, run_b, opt);
  const std::vector<double> scales = input_scales(da);
  const DType lowest = lowest_float_dtype(da, db);
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    auto& tc = r.tensors[i];
    if (tc.a && tc.b) {
      NoiseContext noise;
      noise.own_rms = record_rms(tc.a->stats);
      noise.input_scale = scales[static_cast<size_t>(tc.a - da.records.data())];
      noise.same_precision = r.regime.same_precision;
      if (noise.input_scale > 0) ++r.records_with_input_scale;
      DType effective = effective_dtype(*tc.a, *tc.b, run_a, run_b, opt);
      // Runs that hold 16-bit records compute in 16 bits, whatever else they declare: their float32
      // records (gradients of bfloat16 activations under autocast) carry that rounding. A float32
      // record among float64 ones (a metric, a cast for logging) says nothing of the others.
      if (r.regime.same_precision && dtype_is_float(effective) && dtype_precision_rank(lowest) < dtype_precision_rank(DType::Float32))
        effective = lower_precision(effective, lowest);
      compare_pair(tc, da, db, effective, noise, opt, r.bytes_compared);
      soften_integer_outputs(tc, noise);
    }
    if (progress) progress(i + 1, r.tensors.size());
  }
  if (da.has_loss_log && db.has_loss_log) {
    DType run = opt.precision.value_or(DType::Float32);
    if (!opt.precision) {
      if (run_a) run = lower_precision(run, *run_a);
      if (run_b) run = lower_precision(run, *run_b);
    }
    r.loss = compare_losses(da.loss, db.loss, opt.loss_rtol.value_or(thresholds_for(run).loss_rtol));
  }
  finish(r, opt);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace crosstrain::compare
