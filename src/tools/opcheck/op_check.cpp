#include "tools/opcheck/op_check.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <stdexcept>

#include "core/amp.h"
#include "core/device.h"
#include "core/optim.h"
#include "tools/train/precision.h"

namespace crosstrain::opcheck {

namespace {

struct CaseInput {
  at::Tensor master;  // float64 (or int64 labels) on the CPU
  std::string grad;   // name of the gradient row ("grad_input"); empty: no gradient
  bool cast = true;   // rounded to the dtype under test (labels are not)
};

struct Run {
  bool reference = false;  // the float64 CPU run (kernels may differ: the fused ones need not take float64)
  c10::Device device{c10::kCPU};
};

struct OpCase {
  std::string op, shape;
  bool float32_always = false;  // the trainer runs it in float32 whatever the precision
  std::vector<CaseInput> inputs;
  std::vector<std::string> outputs;  // row names of the returned tensors
  std::function<std::vector<at::Tensor>(std::vector<at::Tensor>&, const Run&)> fn;
};

std::string dims(const char* name, at::IntArrayRef s) {
  std::string out = std::string(name) + "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

at::Tensor randn(at::IntArrayRef s) { return at::randn(s, at::TensorOptions().dtype(at::kDouble)); }

OpCase conv_case(int64_t n, int64_t cin, int64_t hw, int64_t cout, int64_t k, int64_t stride, int64_t pad) {
  OpCase c;
  c.op = "conv2d";
  c.inputs = {{randn({n, cin, hw, hw}), "grad_input"}, {randn({cout, cin, k, k}) * 0.1, "grad_weight"}};
  c.shape = dims("x", c.inputs[0].master.sizes()) + " " + dims("w", c.inputs[1].master.sizes()) + " s" +
            std::to_string(stride) + " p" + std::to_string(pad);
  c.outputs = {"forward"};
  c.fn = [stride, pad](std::vector<at::Tensor>& in, const Run&) {
    return std::vector<at::Tensor>{at::conv2d(in[0], in[1], {}, stride, pad)};
  };
  return c;
}

template <typename F>
OpCase unary_case(const std::string& op, std::vector<int64_t> shape, F f) {
  OpCase c;
  c.op = op;
  c.inputs = {{randn(shape), "grad_input"}};
  c.shape = dims("x", shape);
  c.outputs = {"forward"};
  c.fn = [f](std::vector<at::Tensor>& in, const Run&) { return std::vector<at::Tensor>{f(in[0])}; };
  return c;
}

OpCase optimizer_case(core::OptimizerKind kind) {
  OpCase c;
  c.op = kind == core::OptimizerKind::SGD ? "sgd_step" : "adamw_step";
  c.float32_always = true;
  c.inputs = {{randn({32, 16, 3, 3}), ""}, {randn({32}), ""}, {randn({32, 16, 3, 3}) * 0.01, ""}, {randn({32}) * 0.01, ""}};
  c.shape = "p[32,16,3,3] p[32], 2 steps";
  c.outputs = {"update.weight", "update.bias"};
  c.fn = [kind](std::vector<at::Tensor>& in, const Run& run) {
    core::ParamGroup group;
    group.params = {in[0], in[1]};
    group.weight_decay = 1e-2;
    core::OptimizerOptions o;
    o.lr = 0.1;
    o.kernels = run.reference ? core::OptimizerKernels::ForEach : core::OptimizerKernels::Auto;
    core::MultiTensorOptimizer opt(kind, {group}, o);
    for (int s = 0; s < 2; ++s) {
      in[0].mutable_grad() = in[2].clone();
      in[1].mutable_grad() = in[3].clone();
      opt.step();
    }
    return std::vector<at::Tensor>{in[0], in[1]};
  };
  return c;
}

std::vector<OpCase> all_cases(uint64_t seed) {
  at::manual_seed(seed);
  std::vector<OpCase> cases;
  cases.push_back(conv_case(2, 3, 32, 16, 7, 2, 3));    // stem
  cases.push_back(conv_case(2, 16, 12, 32, 3, 1, 1));   // 3x3 in a block
  cases.push_back(conv_case(2, 16, 12, 32, 1, 2, 0));   // 1x1 downsample
  {
    OpCase c;
    c.op = "batch_norm";
    c.inputs = {{randn({4, 16, 8, 8}) * 2 + 0.5, "grad_input"}, {randn({16}) * 0.1 + 1, "grad_weight"},
                {randn({16}) * 0.1, "grad_bias"}};
    c.shape = "x[4,16,8,8] train";
    c.outputs = {"forward"};
    c.fn = [](std::vector<at::Tensor>& in, const Run&) {
      return std::vector<at::Tensor>{at::batch_norm(in[0], in[1], in[2], {}, {}, /*training=*/true, 0.1, 1e-5, false)};
    };
    cases.push_back(std::move(c));
  }
  cases.push_back(unary_case("relu", {2, 16, 8, 8}, [](const at::Tensor& x) { return at::relu(x); }));
  cases.push_back(unary_case("max_pool2d", {2, 16, 16, 16},
                             [](const at::Tensor& x) { return at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}); }));
  cases.push_back(unary_case("adaptive_avg_pool2d", {2, 32, 4, 4},
                             [](const at::Tensor& x) { return at::adaptive_avg_pool2d(x, {1, 1}); }));
  {
    OpCase c;
    c.op = "linear";
    c.inputs = {{randn({4, 64}), "grad_input"}, {randn({10, 64}) * 0.1, "grad_weight"}, {randn({10}) * 0.1, "grad_bias"}};
    c.shape = "x[4,64] w[10,64]";
    c.outputs = {"forward"};
    c.fn = [](std::vector<at::Tensor>& in, const Run&) { return std::vector<at::Tensor>{at::linear(in[0], in[1], in[2])}; };
    cases.push_back(std::move(c));
  }
  {
    OpCase c;
    c.op = "cross_entropy";
    c.float32_always = true;
    c.inputs = {{randn({8, 10}) * 2, "grad_input"},
                {at::randint(0, 10, {8}, at::TensorOptions().dtype(at::kLong)), "", /*cast=*/false}};
    c.shape = "logits[8,10]";
    c.outputs = {"forward"};
    c.fn = [](std::vector<at::Tensor>& in, const Run&) {
      return std::vector<at::Tensor>{at::cross_entropy_loss(in[0], in[1])};
    };
    cases.push_back(std::move(c));
  }
  cases.push_back(optimizer_case(core::OptimizerKind::SGD));
  cases.push_back(optimizer_case(core::OptimizerKind::AdamW));
  {
    OpCase c;
    c.op = "scaler_unscale";
    c.float32_always = true;
    c.inputs = {{randn({64, 16, 3, 3}) * 1024, ""}, {randn({64}) * 1024, ""}};
    c.shape = "g[64,16,3,3] g[64] scale 1024";
    c.outputs = {"unscaled.weight", "unscaled.bias"};
    c.fn = [](std::vector<at::Tensor>& in, const Run& run) {
      core::GradScalerOptions o;
      o.init_scale = 1024;
      o.dynamic = false;
      o.kernels = run.reference ? core::ScalerKernels::Portable : core::ScalerKernels::Auto;
      core::GradScaler scaler(run.device, o);
      scaler.unscale({in[0], in[1]});
      return std::vector<at::Tensor>{in[0], in[1]};
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

struct Executed {
  std::vector<at::Tensor> outputs;  // float64 on the CPU
  std::vector<at::Tensor> grads;    // per input with a gradient row, same order
};

// One run of a case. `dy` (float64, the first output's shape) drives backward when inputs want it.
Executed execute(const OpCase& c, at::ScalarType round_to, at::ScalarType dtype, const Run& run,
                 const at::Tensor& dy) {
  std::vector<at::Tensor> in;
  for (const auto& i : c.inputs) {
    at::Tensor t = i.cast ? i.master.to(round_to).to(dtype) : i.master.clone();
    t = t.to(run.device);
    if (!i.grad.empty()) t.requires_grad_(true);
    in.push_back(t);
  }
  std::vector<at::Tensor> out = c.fn(in, run);
  Executed e;
  if (dy.defined()) out.front().backward(dy.to(round_to).to(out.front().scalar_type()).to(run.device));
  for (auto& o : out) e.outputs.push_back(o.detach().to(at::kCPU).to(at::kDouble));
  for (size_t k = 0; k < c.inputs.size(); ++k)
    if (!c.inputs[k].grad.empty())
      e.grads.push_back(in[k].grad().defined() ? in[k].grad().to(at::kCPU).to(at::kDouble)
                                               : at::zeros_like(c.inputs[k].master));
  return e;
}

void measure(OpCheckRow& row, const at::Tensor& target, const at::Tensor& ref) {
  if (target.sizes() != ref.sizes()) {
    row.error = "shape differs from the reference";
    row.max_abs = row.max_rel = std::numeric_limits<double>::infinity();
    row.cosine = 0;
    return;
  }
  const ErrorMetrics m = measure_error(target, ref);
  row.max_abs = m.max_abs;
  row.max_rel = m.max_rel;
  row.cosine = m.cosine;
}

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

std::vector<std::string> op_check_names() {
  return {"conv2d", "batch_norm", "relu", "max_pool2d", "adaptive_avg_pool2d", "linear",
          "cross_entropy", "sgd_step", "adamw_step", "scaler_unscale"};
}

double op_check_tolerance(at::ScalarType dtype, bool tf32) {
  switch (dtype) {
    case at::kDouble: return 1e-12;
    case at::kFloat: return tf32 ? 5e-3 : 1e-5;
    case at::kHalf: return 1e-3;
    case at::kBFloat16: return 1e-2;
    default: return 0;
  }
}

ErrorMetrics measure_error(const at::Tensor& target, const at::Tensor& reference) {
  ErrorMetrics m;
  if (target.numel() == 0) return m;
  at::Tensor t = target, r = reference;
  const at::Tensor finite = t.isfinite().logical_and_(r.isfinite());
  if (!finite.all().item<bool>()) {
    const at::Tensor agree = t.eq(r).logical_or_(t.isnan().logical_and_(r.isnan())).logical_or_(finite);
    if (!agree.all().item<bool>()) {
      m.max_abs = m.max_rel = std::numeric_limits<double>::infinity();
      m.cosine = std::numeric_limits<double>::quiet_NaN();
      return m;
    }
    t = at::where(finite, t, 0.0);
    r = at::where(finite, r, 0.0);
  }
  m.max_abs = (t - r).abs().max().item<double>();
  const double scale = r.abs().max().item<double>();
  m.max_rel = scale > 0 ? m.max_abs / scale : m.max_abs;
  const double nt = t.norm().item<double>(), nr = r.norm().item<double>();
  if (nt == 0 || nr == 0)
    m.cosine = nt == nr ? 1.0 : 0.0;
  else
    m.cosine = (t * r).sum().item<double>() / (nt * nr);
  return m;
}

OpCheckResult run_op_check(const OpCheckOptions& o, std::ostream* messages) {
  if (!o.filter.empty()) {
    const auto names = op_check_names();
    if (std::none_of(names.begin(), names.end(), [&](const std::string& n) { return n.find(o.filter) != std::string::npos; })) {
      std::string valid;
      for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
      throw std::invalid_argument("--op '" + o.filter + "' matches no op (valid: " + valid + ")");
    }
  }
  if (o.perf_iterations < 1) throw std::invalid_argument("perf iterations must be >= 1");
  core::load_backend_libraries(o.backend_libs);
  auto dev = core::DeviceContext::open(o.device);
  const train::PrecisionPlan plan = train::plan_precision(o.precision, "off", dev);
  train::apply_math_mode(plan, dev);
  OpCheckResult r;
  r.device = dev.name();
  r.precision = o.precision;
  r.emulation_note = plan.emulation_note;
  if (messages && !r.emulation_note.empty()) *messages << "note: " << r.emulation_note << std::endl;
  const Run target{false, dev.device()};
  const Run reference{true, c10::Device(c10::kCPU)};
  size_t index = 0;
  for (const auto& c : all_cases(o.seed)) {
    ++index;
    if (!o.filter.empty() && c.op.find(o.filter) == std::string::npos) continue;
    const at::ScalarType dtype = c.float32_always ? at::kFloat : plan.compute_dtype();
    const double tol = op_check_tolerance(dtype, plan.tf32 && !c.float32_always);
    const bool wants_grad = std::any_of(c.inputs.begin(), c.inputs.end(), [](const CaseInput& i) { return !i.grad.empty(); });
    OpCheckRow base;
    base.op = c.op;
    base.shape = c.shape;
    base.dtype = std::string(c10::toString(dtype));
    base.tolerance = tol;
    try {
      at::Tensor dy;
      if (wants_grad) {
        // Output shape from a forward-only reference run; the gradient fed back is drawn per case.
        auto probe = execute(c, dtype, at::kDouble, reference, {});
        at::manual_seed(o.seed + 1000 + index);
        dy = at::randn(probe.outputs.front().sizes(), at::TensorOptions().dtype(at::kDouble));
      }
      const Executed ref = execute(c, dtype, at::kDouble, reference, dy);
      const Executed got = execute(c, dtype, dtype, target, dy);
      std::optional<double> ms;
      if (o.perf) {
        std::vector<double> times;
        for (int i = 0; i < o.perf_iterations + 3; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          execute(c, dtype, dtype, target, dy);
          dev.synchronize();
          if (i >= 3) times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        ms = median_ms(times);
      }
      auto add = [&](const std::string& name, const at::Tensor& t, const at::Tensor& rf) {
        OpCheckRow row = base;
        row.output = name;
        row.ms = ms;
        measure(row, t, rf);
        row.pass = row.error.empty() && row.max_rel <= tol;
        r.rows.push_back(row);
      };
      for (size_t k = 0; k < got.outputs.size() && k < c.outputs.size(); ++k) add(c.outputs[k], got.outputs[k], ref.outputs[k]);
      size_t g = 0;
      for (const auto& in : c.inputs)
        if (!in.grad.empty()) {
          add(in.grad, got.grads[g], ref.grads[g]);
          ++g;
        }
    } catch (const std::exception& e) {
      OpCheckRow row = base;
      row.output = "forward";
      const std::string what = e.what();
      row.error = what.substr(0, what.find('\n'));
      row.pass = false;
      r.rows.push_back(row);
    }
  }
  for (const auto& row : r.rows) (row.pass ? r.passed : r.failed)++;
  return r;
}

}  // namespace crosstrain::opcheck
