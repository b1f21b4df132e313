#include "cli/train_flags.h"

#include "cli/flag_checks.h"

namespace crosstrain::cli {

void add_common_train_flags(CLI::App* cmd, train::TrainConfig& c) {
  constexpr double kReal = train::limits::kMaxReal;
  constexpr double kSteps = train::limits::kMaxSteps;
  const char* dev = "Device";
  cmd->add_option("--device", c.device, "auto | cpu | cuda | cuda:N | <backend>[:N]")->capture_default_str()->group(dev);
  cmd->add_option("--backend-lib", c.backend_libs,
                  "Load an out-of-tree backend library (e.g. torch_npu's) before parsing --device; repeatable")
      ->type_name("PATH")->group(dev);
  cmd->add_option("--threads", c.threads, "Intra-op CPU threads (0: libtorch default; at most the machine's hardware threads)")
      ->check(int_range(0, train::limits::kMaxThreads))->group(dev);
  cmd->add_option("--cpu-allocator", c.cpu_allocator,
                  "caching: reuse freed blocks >= 256 KiB by size class (no page faults per step); system: malloc")
      ->check(CLI::IsMember({"caching", "system"}))
      ->capture_default_str()
      ->group(dev);

  const char* model = "Model";
  cmd->add_option("--num-classes", c.num_classes, "Classifier outputs (default: the dataset's classes; 1000 synthetic)")
      ->check(int_range(1, train::limits::kMaxNumClasses))->group(model);
  cmd->add_flag("--small-stem", c.small_stem, "3x3 stride-1 stem without max-pool, for 28-64 px images")->group(model);
  cmd->add_flag("--zero-init-residual", c.zero_init_residual, "Zero-init the last BN of each block")->group(model);
  cmd->add_option("--base-width", c.base_width,
                  "Channels of the first stage (64 = torchvision; narrower nets are faster, not torchvision-compatible)")
      ->capture_default_str()->check(int_range(train::limits::kMinBaseWidth, train::limits::kMaxBaseWidth))->group(model);

  const char* num = "Numerics";
  cmd->add_option("--loss-scale", c.loss_scale,
                  "auto (dynamic for fp16) | dynamic | off | a static scale, e.g. 1024")->capture_default_str()->group(num);
  cmd->add_option("--scale-growth-interval", c.scale_growth_interval, "Clean steps before the dynamic scale doubles")
      ->capture_default_str()->check(int_range(1, train::limits::kMaxSteps))->group(num);
  cmd->add_option("--scaler-kernels", c.scaler_kernels, "auto | fused | portable")
      ->capture_default_str()->check(CLI::IsMember({"auto", "fused", "portable"}))->group(num);
  cmd->add_flag("--channels-last", c.channels_last, "NHWC memory format for activations and weights")->group(num);
  cmd->add_option("--seed", c.seed, "Seed for weights and synthetic data")->capture_default_str()
      ->check(uint_range(0, UINT64_MAX))->group(num);

  const char* opt = "Optimization";
  cmd->add_option("--optimizer", c.optimizer, "sgd | adamw")->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adamw"}))->group(opt);
  cmd->add_option("--optimizer-kernels", c.optimizer_kernels, "auto | fused | foreach")
      ->capture_default_str()->check(CLI::IsMember({"auto", "fused", "foreach"}))->group(opt);
  cmd->add_option("--lr", c.lr, "Base learning rate (default: 0.1 x global batch / 256; global batch = batch size x accumulate steps x ranks)")->check(real_range(0, kReal))->group(opt);
  cmd->add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str()->check(real_range(0, kReal))->group(opt);
  cmd->add_flag("--nesterov", c.nesterov, "Nesterov momentum (SGD)")->group(opt);
  cmd->add_option("--weight-decay", c.weight_decay, "Weight decay")->capture_default_str()->check(real_range(0, kReal))->group(opt);
  cmd->add_flag("!--decay-bn-bias", c.no_decay_bn_bias, "Also decay BN and bias parameters (default: not)")->group(opt);
  cmd->add_option("--schedule", c.schedule, "constant | step | cosine")->capture_default_str()
      ->check(CLI::IsMember({"constant", "step", "cosine"}))->group(opt);
  cmd->add_option("--lr-warmup-steps", c.lr_warmup_steps, "Linear warm-up steps")->check(int_range(0, kSteps))->group(opt);
  cmd->add_option("--lr-step-size", c.lr_step_size, "Step schedule: steps between decays")->check(int_range(1, kSteps))->group(opt);
  cmd->add_option("--lr-gamma", c.lr_gamma, "Step schedule: decay factor")->check(real_range(0, kReal))->group(opt);
  cmd->add_option("--label-smoothing", c.label_smoothing, "Cross-entropy label smoothing")->check(real_range(0, 0.999999))->group(opt);
  cmd->add_option("--clip-grad-norm", c.clip_grad_norm, "Clip the global gradient norm (0: off); unscaled first")->check(real_range(0, kReal))->group(opt);
  cmd->add_option("--peak-tflops", c.peak_tflops, "Device peak TFLOP/s for utilization %")->check(real_range(1e-3, kReal))->group("Reporting");
  cmd->add_flag("--probe-peak", c.probe_peak, "Measure the peak with a short matmul probe")->group("Reporting");
  cmd->add_flag("!--no-progress", c.progress, "No progress line")->group("Reporting");
  const char* prof = "Profiling";
  cmd->add_option("--profile", c.profile.dir,
                  "Record Chrome traces (torch.profiler schema) into DIR/cycle<k>/rank<r>.pt.trace.json")
      ->type_name("DIR")->group(prof);
  cmd->add_option("--profile-wait", c.profile.wait, "Steps skipped before each recording cycle")
      ->capture_default_str()->check(int_range(0, kSteps))->group(prof);
  cmd->add_option("--profile-warmup", c.profile.warmup, "Steps the profiler warms up on (discarded)")
      ->capture_default_str()->check(int_range(0, kSteps))->group(prof);
  cmd->add_option("--profile-active", c.profile.active, "Steps recorded per cycle")
      ->capture_default_str()->check(int_range(1, kSteps))->group(prof);
  cmd->add_option("--profile-repeat", c.profile.repeat, "Cycles (0: until the run ends)")
      ->capture_default_str()->check(int_range(0, kSteps))->group(prof);
  cmd->add_option("--profile-recorder", c.profile.recorder,
                  "auto (Kineto where linked, else portable) | kineto | portable")
      ->capture_default_str()->check(CLI::IsMember({"auto", "kineto", "portable"}))->group(prof);
  cmd->add_flag("!--profile-no-shapes", c.profile.record_shapes, "Do not record operator input shapes")->group(prof);
  cmd->add_flag("!--profile-no-memory", c.profile.profile_memory, "Do not record allocation events")->group(prof);
  cmd->add_flag("!--profile-no-modules", c.profile.module_spans, "No per-module spans")->group(prof);
  cmd->add_option("--inject-inf-at-step", c.inject_inf_at_step, "Testing: make one gradient inf at this step")
      ->check(int_range(-1, kSteps))
      ->group("");  // hidden
}

}  // namespace crosstrain::cli
