#include "tools/opcheck/replay.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <ostream>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "core/device.h"
#include "tools/opcheck/dumped_ops.h"
#include "tools/opcheck/op_check.h"
#include "tools/opcheck/replay_allowed.h"
#include "tools/opcheck/replay_args.h"
#include "tools/train/precision.h"

namespace crosstrain::opcheck {

namespace {

constexpr const char* kNoInputs = "no inputs recorded: dump with --dump-mode tensors";

// A call that is not replayed; the text is the reason.
struct NotReplayed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The target threw, or returned nothing where the reference has a tensor: the call fails.
struct TargetFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 300 ? line.substr(0, 297) + "..." : line;
}

std::string op_display(const dump::OpOrigin& o) {
  return o.overload.empty() || o.overload == "default" ? o.op : o.op + "." + o.overload;
}

// Every .npy the recorded arguments name (each occurrence), in order.
void collect_files(const nlohmann::json& v, std::vector<std::string>& out) {
  if (v.is_object()) {
    if (auto it = v.find("tensor"); it != v.end() && it->is_string()) {
      out.push_back(it->get<std::string>());
      return;
    }
    for (const auto& item : v.items()) collect_files(item.value(), out);
  } else if (v.is_array()) {
    for (const auto& x : v) collect_files(x, out);
  }
}

// The operator's tensor returns in record order: a single Tensor[] return is its elements;
// otherwise one entry per return (undefined where a return is not a tensor).
std::vector<at::Tensor> returned_tensors(const torch::jit::Stack& stack) {
  std::vector<at::Tensor> out;
  if (stack.size() == 1 && stack[0].isTensorList()) {
    for (const at::Tensor& t : stack[0].toTensorVector()) out.push_back(t);
    return out;
  }
  for (const auto& v : stack) out.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
  return out;
}

// The return a record names: its index, or (a record without [i]) the only defined tensor, as the
// recorder names an operator's output when it is the only one it can dump.
at::Tensor pick(const std::vector<at::Tensor>& returns, const std::optional<int>& index) {
  if (index) return *index < static_cast<int>(returns.size()) ? returns[static_cast<size_t>(*index)] : at::Tensor();
  for (const auto& t : returns)
    if (t.defined()) return t;
  return {};
}

at::Tensor as_cpu_double(const at::Tensor& t) { return t.to(at::TensorOptions().device(at::kCPU).dtype(at::kDouble)); }

bool same_values(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (!at::isFloatingType(a.scalar_type())) return at::equal(a, b);
  return a.eq(b).logical_or_(a.isnan().logical_and_(b.isnan())).all().item<bool>();
}

// What the floating inputs of a call hold: the scale a reduction's rounding follows.
struct InputScale {
  double max_abs = 0;
  int64_t max_numel = 0;
};

// The generator's seed before a call: set for random operators only (the others do not read it).
struct Seed {
  bool set = false;
  uint64_t value = 0;
};

class Replayer {
 public:
  Replayer(const OpCheckOptions& o, const DumpedOps& dump, const core::DeviceContext& dev)
      : options_(o), cache_(dump.dir) {
    std::optional<at::ScalarType> precision;
    if (o.precision_given)
      precision = o.precision == "bf16" ? at::kBFloat16 : o.precision == "fp16" ? at::kHalf : at::kFloat;
    const std::string run_type = dump.run_device.substr(0, dump.run_device.find(':'));
    target_ = ReplaySide{dev.device(), false, precision, run_type, &produced_};
    reference_ = ReplaySide{c10::Device(c10::kCPU), true, precision, run_type, &produced_};
    tf32_ = o.precision_given && o.precision == "tf32";
  }

  InputCache& cache() { return cache_; }
  bool compares_run() const { return !options_.precision_given; }

  void replay(const DumpedOp& op, ReplayRow& row) {
    try {
      row.outputs = run(op);
      const bool pass = std::all_of(row.outputs.begin(), row.outputs.end(), [](const ReplayOutput& o) { return o.pass; });
      row.status = pass ? ReplayStatus::Pass : ReplayStatus::Fail;
    } catch (const NotReplayed& e) {
      row.status = ReplayStatus::NotReplayed;
      row.reason = e.what();
    } catch (const ArgumentError& e) {
      row.status = ReplayStatus::NotReplayed;
      row.reason = first_line(e.what());
    } catch (const TargetFailure& e) {
      row.status = ReplayStatus::Fail;
      row.reason = e.what();
    }
  }

 private:
  std::vector<ReplayOutput> run(const DumpedOp& op) {
    if (!op.args) throw NotReplayed(kNoInputs);
    const std::string overload = op.origin.overload == "default" ? "" : op.origin.overload;
    auto handle = c10::Dispatcher::singleton().findSchema({op.origin.op, overload});
    if (!handle) throw NotReplayed("this libtorch has no operator " + op_display(op.origin));
    if (auto why = replay_refusal(handle->schema())) throw NotReplayed(*why);  // before any argument is read
    const RecordedArgs args = decode_args(handle->schema(), *op.args, cache_);
    const bool random = op.origin.random || handle->hasTag(at::Tag::nondeterministic_seeded);

    const Seed seed{random, options_.seed};
    InputScale inputs;
    const std::vector<at::Tensor> ref =
        call(*handle, args, reference_, "the float64 reference on the CPU", seed, nullptr, &inputs);
    if (random) {  // seeded random by its schema: replayed only when the generator does not matter here
      const std::vector<at::Tensor> again =
          call(*handle, args, reference_, "the float64 reference on the CPU", Seed{true, options_.seed + 1});
      for (const auto& out : op.outputs) {
        const at::Tensor a = pick(ref, out.index), b = pick(again, out.index);
        if (a.defined() && b.defined() && !same_values(a, b))
          throw NotReplayed("random: a seeded random operator, its output depends on the generator");
      }
    }
    std::vector<at::Tensor> got;
    std::string target_error;
    double input_tolerance = 0;
    try {
      got = call(*handle, args, target_, "", seed, &input_tolerance);
    } catch (const std::exception& e) {
      target_error = first_line(e.what());
    }
    std::vector<ReplayOutput> outputs;
    for (const auto& out : op.outputs)
      outputs.push_back(compare(out, ref, got, target_error, input_tolerance, inputs));
    if (target_.precision)  // what a later call reads from these outputs has the dtype the target gave them
      for (size_t k = 0; k < op.outputs.size(); ++k)
        if (auto t = parse_scalar_type(outputs[k].dtype); t && !op.outputs[k].file.empty()) produced_[op.outputs[k].file] = *t;
    return outputs;
  }

  // `input_tolerance`: the loosest tolerance among the floating tensors passed (a float32 result
  // computed from bfloat16 inputs is as exact as bfloat16 arithmetic allows).
  // `who` names the side in a NotReplayed when the call throws; empty: the exception passes as is.
  std::vector<at::Tensor> call(const c10::OperatorHandle& handle, const RecordedArgs& args, const ReplaySide& side,
                               const std::string& who, Seed seed, double* input_tolerance = nullptr,
                               InputScale* scale = nullptr) {
    torch::jit::Stack stack = make_stack(args, side);
    if (input_tolerance) *input_tolerance = loosest_tolerance(stack);
    if (scale) *scale = input_scale(stack);
    if (seed.set) at::manual_seed(seed.value);
    if (who.empty()) {
      handle.callBoxed(stack);
    } else {
      try {
        handle.callBoxed(stack);
      } catch (const c10::Error& e) {
        throw NotReplayed(who + " fails: " + first_line(e.what_without_backtrace()));
      } catch (const std::exception& e) {
        throw NotReplayed(who + " fails: " + first_line(e.what()));
      }
    }
    return returned_tensors(stack);
  }

  double tolerance(at::ScalarType output, double input_tolerance) const {
    if (!at::isFloatingType(output)) return op_check_tolerance(output);  // integer and bool results: exact
    return std::max(op_check_tolerance(output, tf32_ && output == at::kFloat), input_tolerance);
  }

  // The largest finite magnitude and the largest element count among the floating tensors passed.
  static InputScale input_scale(const torch::jit::Stack& stack) {
    InputScale in;
    auto see = [&](const at::Tensor& t) {
      if (!t.defined() || !at::isFloatingType(t.scalar_type()) || t.numel() == 0 ||
          t.unsafeGetTensorImpl()->is_wrapped_number())
        return;
      in.max_numel = std::max(in.max_numel, t.numel());
      const at::Tensor a = t.detach().abs();
      const at::Tensor finite = at::where(a.isfinite(), a, at::zeros({}, a.options()));
      in.max_abs = std::max(in.max_abs, finite.max().item<double>());
    };
    for (const auto& v : stack) {
      if (v.isTensor()) see(v.toTensor());
      if (v.isList())
        for (const c10::IValue& x : v.toListRef())
          if (x.isTensor()) see(x.toTensor());
    }
    return in;
  }

  double loosest_tolerance(const torch::jit::Stack& stack) const {
    double tol = 0;
    auto see = [&](const at::Tensor& t) {
      if (t.defined() && at::isFloatingType(t.scalar_type()) && !t.unsafeGetTensorImpl()->is_wrapped_number())
        tol = std::max(tol, op_check_tolerance(t.scalar_type(), tf32_ && t.scalar_type() == at::kFloat));
    };
    for (const auto& v : stack) {
      if (v.isTensor()) see(v.toTensor());
      if (v.isList())
        for (const c10::IValue& x : v.toListRef())
          if (x.isTensor()) see(x.toTensor());
    }
    return tol;
  }

  ReplayOutput compare(const DumpedOutput& out, const std::vector<at::Tensor>& ref,
                       const std::vector<at::Tensor>& got, const std::string& target_error, double input_tolerance,
                       const InputScale& inputs) {
    ReplayOutput r;
    r.index = out.index.value_or(0);
    const at::Tensor rf = pick(ref, out.index);
    const std::string which = "output " + std::to_string(r.index);
    if (!rf.defined()) throw NotReplayed("the replay returns no tensor for " + which);
    if (rf.sizes() != at::IntArrayRef(out.shape))
      throw NotReplayed("the replay gives " + which + " shape " + c10::str(rf.sizes()) + " where the run recorded " +
                        dump::shape_to_string(out.shape));
    r.shape = out.shape;
    const at::ScalarType expected = target_dtype(parse_scalar_type(dump::dtype_name(out.dtype)).value_or(at::kFloat),
                                                 target_.precision);
    r.dtype = scalar_type_name(expected);
    r.tolerance = tolerance(expected, input_tolerance);
    if (!target_error.empty()) throw TargetFailure(target_error);
    const at::Tensor tg = pick(got, out.index);
    if (!tg.defined()) throw TargetFailure("the target returns no tensor for " + which);
    if (compares_run() && tg.scalar_type() != expected)
      throw NotReplayed("the replay gives " + which + " in " + scalar_type_name(tg.scalar_type()) +
                        " where the run recorded " + dump::dtype_name(out.dtype));
    r.dtype = scalar_type_name(tg.scalar_type());
    r.tolerance = tolerance(tg.scalar_type(), input_tolerance);
    const at::Tensor ref64 = as_cpu_double(rf);
    const at::Tensor tg64 = as_cpu_double(tg);
    if (tg64.sizes() != ref64.sizes()) {
      r.max_abs = r.max_rel = std::numeric_limits<double>::infinity();
      r.cosine = 0;
    } else {
      const ErrorMetrics m = measure_error(tg64, ref64);
      r.max_abs = m.max_abs;
      r.max_rel = m.max_rel;
      r.cosine = m.cosine;
      // A reduction's output can be far smaller than what it summed (a layer norm's mean, a gradient
      // that is zero in exact arithmetic): its rounding follows the inputs' magnitude, so the error is
      // relative to the larger of the output's and the inputs' largest magnitude.
      if (ref64.numel() < inputs.max_numel && std::isfinite(m.max_abs)) {
        const at::Tensor a = ref64.abs();
        const double out_scale = at::where(a.isfinite(), a, at::zeros({}, a.options())).max().item<double>();
        r.scale = std::max(out_scale, inputs.max_abs);
        if (r.scale > 0) r.max_rel = m.max_abs / r.scale;
      }
    }
    r.pass = r.max_rel <= r.tolerance;  // NaN never passes
    if (compares_run() && !out.file.empty()) {
      try {
        const at::Tensor recorded = as_cpu_double(cache_.get(out.file));
        if (recorded.sizes() == ref64.sizes()) {
          const ErrorMetrics run = measure_error(recorded, ref64);
          r.run_max_rel = r.scale > 0 && std::isfinite(run.max_abs) ? run.max_abs / r.scale : run.max_rel;
        }
      } catch (const ArgumentError&) {
        // the run's output is extra information; a missing file leaves it out
      }
    }
    return r;
  }

  const OpCheckOptions& options_;
  InputCache cache_;
  std::unordered_map<std::string, at::ScalarType> produced_;  // --precision: output file -> dtype on the target
  ReplaySide target_, reference_;
  bool tf32_ = false;
};

bool matches(const DumpedOp& op, const std::string& filter) {
  return filter.empty() || op_display(op.origin).find(filter) != std::string::npos ||
         op.name.find(filter) != std::string::npos;
}

void check_filter(const DumpedOps& dump, const std::string& filter) {
  if (std::any_of(dump.ops.begin(), dump.ops.end(), [&](const DumpedOp& op) { return matches(op, filter); })) return;
  std::set<std::string> names;
  for (const auto& op : dump.ops) names.insert(op.origin.op);
  std::string some;
  size_t n = 0;
  for (const auto& name : names) {
    if (n++ == 12) {
      some += ", ...";
      break;
    }
    some += (some.empty() ? "" : ", ") + name;
  }
  throw std::invalid_argument("--op '" + filter + "' matches no operator call of the dump (it has " + some + ")");
}

}  // namespace

const ReplayOutput* ReplayRow::worst() const {
  const ReplayOutput* w = nullptr;
  double worst_ratio = -1;
  for (const auto& o : outputs) {
    const double ratio = o.tolerance > 0 ? o.max_rel / o.tolerance : (o.max_rel > 0 ? HUGE_VAL : 0.0);
    const double key = std::isnan(ratio) ? HUGE_VAL : ratio;
    if (key > worst_ratio) {
      worst_ratio = key;
      w = &o;
    }
  }
  return w;
}

double replay_rank(const ReplayRow& row) {
  if (row.status == ReplayStatus::NotReplayed) return -1;
  const ReplayOutput* w = row.worst();
  if (!w) return row.status == ReplayStatus::Fail ? HUGE_VAL : 0;
  const double ratio = w->tolerance > 0 ? w->max_rel / w->tolerance : (w->max_rel > 0 ? HUGE_VAL : 0.0);
  return std::isnan(ratio) ? HUGE_VAL : ratio;
}

ReplayResult run_replay(const OpCheckOptions& o, std::ostream* messages) {
  if (o.perf) throw std::invalid_argument("--perf does not apply to --from-dump (the replay reports operators/s)");
  if (o.top < 0) throw std::invalid_argument("--top must be >= 0");
  const DumpedOps dump = read_dumped_ops(o.from_dump);
  if (dump.ops.empty()) {
    if (!dump.problems.empty())
      throw std::runtime_error(o.from_dump + ": no operator record could be read (" + dump.problems.front() + ")");
    throw std::invalid_argument(o.from_dump + " holds no operator records: dump with --dump-level op");
  }
  if (!o.filter.empty()) check_filter(dump, o.filter);
  core::load_backend_libraries(o.backend_libs);
  auto dev = core::DeviceContext::open(o.device);
  const train::PrecisionPlan plan = train::plan_precision(o.precision_given ? o.precision : "fp32", "off", dev);
  train::apply_math_mode(plan, dev);
  if (messages && !plan.emulation_note.empty()) *messages << "note: " << plan.emulation_note << std::endl;

  ReplayResult r;
  r.dump = o.from_dump;
  r.device = dev.name();
  r.precision = o.precision_given ? o.precision : "as recorded";
  r.run_device = dump.run_device;
  r.problems = dump.problems;
  Replayer replayer(o, dump, dev);

  // Each call's files, counted up front so that the cache frees an array after its last use.
  std::vector<const DumpedOp*> selected;
  std::vector<std::vector<std::string>> files;
  for (const auto& op : dump.ops) {
    if (!matches(op, o.filter)) continue;
    selected.push_back(&op);
    std::vector<std::string> f;
    if (op.args) collect_files(*op.args, f);
    if (replayer.compares_run())
      for (const auto& out : op.outputs)
        if (!out.file.empty()) f.push_back(out.file);
    for (const auto& file : f) replayer.cache().expect(file);
    files.push_back(std::move(f));
  }

  at::NoGradGuard no_grad;
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  for (size_t i = 0; i < selected.size(); ++i) {
    const DumpedOp& op = *selected[i];
    ReplayRow row;
    row.step = op.step;
    row.seq = op.seq;
    row.record = op.name;
    row.op = op_display(op.origin);
    row.phase = op.origin.phase;
    row.module = op.origin.module;
    row.source = op.origin.user_source.empty() ? op.origin.source : op.origin.user_source;
    replayer.replay(op, row);
    dev.synchronize();
    for (const auto& file : files[i]) replayer.cache().release(file);
    r.rows.push_back(std::move(row));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  r.files_loaded = replayer.cache().loads();
  for (const auto& row : r.rows) {
    ++r.calls;
    if (row.status == ReplayStatus::NotReplayed) {
      ++r.not_replayed;
      continue;
    }
    ++r.replayed;
    (row.status == ReplayStatus::Pass ? r.passed : r.failed)++;
  }
  return r;
}

}  // namespace crosstrain::opcheck
