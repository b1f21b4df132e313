#pragma once
// Everything a training run is configured by, and everything it reports. Torch-free, so the CLI
// and reporters compile without libtorch headers. Defaults are the flags' defaults (--help).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/profile/profile_session.h"

namespace crosstrain::train {

// The largest values check_config accepts; the flags check the same bounds before anything
// runs. Past them a run cannot work on any machine (an allocation of petabytes, 64-bit overflow in
// step counts) or only stalls it (thousands of threads). --threads is also refused above the
// machine's hardware threads: OpenMP's spinning workers make an oversubscribed run crawl.
namespace limits {
inline constexpr int64_t kMaxThreads = 1024;      // --threads, --workers (and other thread counts)
inline constexpr int64_t kMaxPrefetch = 1024;     // batches decoded ahead
inline constexpr int64_t kMaxBatchSize = 65536;
inline constexpr int64_t kMinImageSize = 8, kMaxImageSize = 4096;
inline constexpr int64_t kMaxNumClasses = 1000000;
inline constexpr int64_t kMinBaseWidth = 4, kMaxBaseWidth = 1024;
inline constexpr int64_t kMaxSteps = 1000000000;  // steps, epochs, intervals, warm-ups
inline constexpr int64_t kMaxSamples = int64_t{1} << 40;
inline constexpr int64_t kMaxWorldSize = 65536;
inline constexpr double kMaxReal = 1e9;           // learning rate, momentum, decay, clipping, ...
}  // namespace limits

struct TrainConfig {
  // where
  std::string device = "auto";
  std::vector<std::string> backend_libs;
  int threads = 0;  // intra-op threads; 0 = libtorch's default
  std::string cpu_allocator = "caching";  // caching | system (see core/device.h)
  // what
  std::string model = "resnet50";
  int64_t num_classes = 0;  // 0: the dataset's class count (1000 for synthetic data)
  bool small_stem = false;
  int64_t base_width = 64;
  bool zero_init_residual = false;
  std::string weights_in;
  std::string weights_out;
  // data: empty = fixed synthetic batches (the benchmark default), else KIND:PATH (core/data)
  std::string data;
  std::string val_root;             // imagefolder: separate validation root
  std::string jpeg_cache;           // imagefolder: baseline rewrites of progressive JPEGs (data::JpegBaselineCache)
  int workers = 2;                  // loader threads
  int prefetch = 0;                 // batches decoded ahead; 0 = 2 x workers
  bool normalize_on_device = false; // uint8 batches, normalised on the device
  double min_crop_scale = 0.08;     // RandomResizedCrop's smallest area fraction (1 = no crop)
  bool hflip = true;                // random horizontal flip when training
  bool drop_last = true;
  bool strict_data = false;         // stop at the first bad sample
  int64_t max_samples = 0;          // training subset (0 = all)
  int64_t val_max_samples = 0;      // validation subset (0 = all)
  int rank = 0, world_size = 1;     // data shard: the process group's rank and size (set by the run)
  int64_t batch_size = 32;
  int64_t image_size = 0;           // 0: 224, or the stored size of fixed-size datasets (idx, cifar)
  // how long
  int64_t epochs = 0;         // > 0: steps = epochs x batches per epoch (real data)
  int64_t steps = 20;
  int64_t eval_every_steps = 0;   // evaluate on the validation split every N steps (0: off)
  int64_t eval_every_epochs = 0;  // ... or every N epochs
  bool eval_at_end = true;        // real data: evaluate once after the last step
  int64_t warmup_steps = -1;  // excluded from timing statistics; < 0: 3, fewer when the run is shorter
  // numerics
  std::string precision = "fp32";    // fp32 | tf32 | fp16 | bf16
  std::string loss_scale = "auto";   // auto (dynamic for fp16, off otherwise) | dynamic | off | <number>
  int64_t scale_growth_interval = 2000;
  std::string scaler_kernels = "auto";  // auto | fused | portable
  bool channels_last = false;
  uint64_t seed = 0;
  // optimisation
  std::string optimizer = "sgd";
  std::string optimizer_kernels = "auto";  // auto | fused | foreach
  double lr = -1;  // < 0: 0.1 x batch_size / 256 (the linear scaling rule)
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 1e-4;
  bool no_decay_bn_bias = true;
  std::string schedule = "constant";
  int64_t lr_warmup_steps = 0;
  int64_t lr_step_size = 30;
  double lr_gamma = 0.1;
  double label_smoothing = 0.0;
  double clip_grad_norm = 0.0;  // 0 = off
  // reporting
  std::string log_path;          // JSON lines, one per step
  std::optional<double> peak_tflops;
  bool probe_peak = false;       // measure peak with a short matmul probe
  bool progress = true;          // progress line (only on a terminal)
  profile::ProfileOptions profile;  // --profile DIR and its schedule
  // checkpoints (tools/train/checkpoint.h, docs/CHECKPOINT.md)
  std::string checkpoint_dir;         // empty: no checkpoints
  int64_t checkpoint_every = 0;       // steps between checkpoints (0: only at the end)
  int64_t checkpoint_every_epochs = 0;
  int64_t checkpoint_keep = 3;        // newest checkpoints kept
  std::string resume;                 // "" | "auto" (newest valid in checkpoint_dir, else fresh) | PATH
  // data-parallel training (tools/dist, docs/DISTRIBUTED.md): joins a process group when torchrun's
  // variables (RANK, WORLD_SIZE) are present or with --distributed
  bool distributed = false;
  std::string dist_backend = "auto";  // auto (gloo on the CPU, nccl on CUDA, hccl on NPUs) | gloo | nccl | hccl
  double dist_timeout_s = 300;        // every collective and the rendezvous
  double bucket_cap_mb = 25;          // gradient bucket size
  bool broadcast_buffers = true;      // buffers from rank 0 before every forward
  bool sync_bn = false;               // BatchNorm statistics over all ranks
  std::string grad_compression = "none";  // none | fp16 | bf16: all-reduce gradients in that type
  int64_t accumulate_steps = 1;       // micro-batches per optimizer step (exchange on the last only)
  // testing hooks
  int64_t inject_inf_at_step = -1;  // make one gradient inf at this step (loss-scaler tests)
  int64_t crash_after_step = -1;    // _exit(137) once this step (and its checkpoint) is done
};

struct StepRecord {
  int64_t step = 0;
  double loss = 0;
  double lr = 0;
  std::optional<double> loss_scale;
  double step_ms = 0;
  double data_wait_ms = 0;      // time spent waiting for the batch
  bool skipped = false;
};

struct EvalRecord {
  int64_t step = 0;        // evaluated after this many steps
  double epoch = 0;        // fractional epochs done
  int64_t samples = 0;
  double top1 = 0, top5 = 0, loss = 0;
};

// The state a step holds at every precision, counted from the run's own tensors (bytes of their
// distinct storages): the fp32 master weights, the model's buffers (batch-norm statistics), the
// gradients (the most a step held at its optimizer phase: they are dropped between steps) and the
// optimizer's state (SGD: one momentum buffer per parameter, none without momentum; AdamW: two, and
// a step count each). Autocast shrinks none of it.
struct FixedStateBytes {
  int64_t parameters = 0;
  int64_t buffers = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t total() const { return parameters + buffers + gradients + optimizer; }
};

struct TrainResult {
  TrainConfig config;               // as resolved (tools/train/run_plan.h)
  TrainConfig requested;            // as given
  std::vector<std::string> notes;   // defaults adjusted to fit the request
  std::string device;               // resolved, e.g. "cpu", "cuda:0"
  std::string device_description;
  std::string precision;
  std::optional<bool> precision_native;  // CPU runs: false when this CPU emulates it (a note says so)
  int64_t parameters = 0;
  double gflops_per_image = 0;      // forward, 2 x MACs
  std::vector<StepRecord> steps;
  double first_step_ms = 0;
  double throughput_img_s = 0;      // over measured steps
  double batch_time_ms_median = 0;
  double batch_time_ms_p90 = 0;
  int64_t measured_steps = 0;
  std::optional<int64_t> peak_memory_bytes;   // device allocator peak / CPU tensor peak
  std::optional<int64_t> peak_rss_bytes;      // process, CPU runs
  FixedStateBytes fixed_state;                 // at the end of the run (Trainer::fixed_state)
  double achieved_tflops = 0;       // 3 x forward FLOPs per image x img/s
  std::optional<double> peak_tflops;
  std::optional<double> utilization;           // achieved / peak
  int64_t skipped_steps = 0;
  std::optional<double> final_loss_scale;
  std::optional<double> final_loss;            // none when no step ran (a resume at the last step)
  double data_wait_ms_mean = 0;     // over measured steps
  double data_wait_share = 0;       // data wait / step time, measured steps
  std::string profile_recorder;     // "kineto" | "portable" when --profile ran
  std::vector<std::string> profile_traces;
  bool fused_optimizer = false;
  bool fused_scaler = false;
  std::vector<std::string> messages;           // loss-scaler and other log lines, in order
  std::string data;                            // "synthetic" or KIND:PATH
  int64_t train_samples = 0;                   // dataset size (training split)
  std::vector<EvalRecord> evals;
  std::string resumed_from;                    // checkpoint path, empty for a fresh start
  int64_t resumed_at_step = 0;
  int64_t checkpoints_written = 0;
  double checkpoint_write_s = 0;               // background writing, summed
  double checkpoint_stall_s = 0;               // time the step loop waited for checkpoints
  int stop_signal = 0;                         // SIGTERM / SIGINT that stopped the run early (exit 128 + it)
  int rank = 0, world_size = 1;                // data-parallel: this process, and how many trained
  std::string dist_backend;                    // gloo / nccl / hccl; empty on one process
  int64_t global_batch = 0;                    // images per optimizer step over all ranks
  int64_t bad_samples = 0;                     // replaced during training
  std::vector<std::string> first_bad;          // "path: reason", the first few
};

}  // namespace crosstrain::train
