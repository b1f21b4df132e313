// `crosstrain train`: one training run, a summary table, optional JSON and per-step log. The run
// is commands::train_command (engine); this file holds the flags.
#include <memory>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "cli/output_inputs.h"
#include "cli/dump_flags.h"
#include "cli/train_flags.h"
#include "tools/commands/commands.h"

namespace crosstrain::cli {

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<commands::TrainArgs>();
  auto& c = args->config;
  namespace lim = train::limits;
  CLI::App* cmd = app.add_subcommand("train", "Train a ResNet (synthetic or real data) and report speed, memory and accuracy");
  const char* model = "Model";
  cmd->add_option("--model", c.model, "resnet18 | resnet34 | resnet50 | resnet101 | resnet152")->capture_default_str()->group(model);
  cmd->add_option("--weights", c.weights_in, "Load a state dict saved with torch.save(m.state_dict(), PATH)")
      ->type_name("PATH")->group(model);
  cmd->add_option("--save-weights", c.weights_out, "Write the trained state dict (torch.load reads it)")
      ->type_name("PATH")->group(model);
  const char* run = "Run";
  cmd->add_option("--batch-size", c.batch_size, "Images per step")->capture_default_str()->check(int_range(1, lim::kMaxBatchSize))->group(run);
  cmd->add_option("--image-size", c.image_size,
                  "Square input size (default: 224; fixed-size datasets keep their stored size)")
      ->check(int_range(lim::kMinImageSize, lim::kMaxImageSize))->group(run);
  cmd->add_option("--steps", c.steps, "Training steps")->capture_default_str()->check(int_range(1, lim::kMaxSteps))->group(run);
  cmd->add_option("--accumulate-steps", c.accumulate_steps,
                  "Micro-batches of --batch-size per optimizer step (gradients accumulate; ranks exchange them once)")
      ->capture_default_str()->check(int_range(1, 65536))->group(run);
  cmd->add_option("--epochs", c.epochs, "Train for N epochs of --data instead of --steps")->check(int_range(0, lim::kMaxSteps))->group(run);
  cmd->add_option("--warmup-steps", c.warmup_steps, "Steps excluded from timing statistics (default: 3, fewer for shorter runs)")
      ->check(int_range(0, lim::kMaxSteps))->group(run);
  cmd->add_option("--precision", c.precision, "fp32 | tf32 | fp16 | bf16")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}))->group(run);
  // --log abbreviates torchrun's --log-dir and --logs-specs, so torchrun refuses it on a worker's
  // command line (docs/DISTRIBUTED.md): --step-log is the spelling that works everywhere.
  cmd->add_option("--step-log,--log", c.log_path, "Per-step JSON lines (step, loss, lr, loss_scale, step_ms)")
      ->type_name("PATH")->group("Reporting");
  const char* data = "Data";
  cmd->add_option("--data", c.data, "KIND:PATH: synthetic[:N], idx:DIR, cifar:DIR, imagefolder:ROOT "
                                    "(default: fixed synthetic batches)")->group(data);
  cmd->add_option("--val-root", c.val_root, "imagefolder: validation root when ROOT has no train/ and val/")->group(data);
  cmd->add_option("--jpeg-cache", c.jpeg_cache, "imagefolder: keep a lossless baseline rewrite of each progressive JPEG in DIR and decode that from the next epoch on (same pixels; a progressive file is otherwise entropy-decoded whole for every crop)")->group(data);
  cmd->add_option("--workers", c.workers, "Loader threads")->capture_default_str()->check(int_range(0, lim::kMaxThreads))->group(data);
  cmd->add_option("--prefetch", c.prefetch, "Batches decoded ahead (0: 2 x workers)")->check(int_range(0, lim::kMaxPrefetch))->group(data);
  cmd->add_flag("--normalize-on-device", c.normalize_on_device,
                "Copy uint8 batches and normalise on the device (4x less host-to-device traffic)")->group(data);
  cmd->add_option("--min-crop-scale", c.min_crop_scale,
                  "Training crop: smallest area fraction of RandomResizedCrop (1: no crop, only resize)")
      ->capture_default_str()->check(real_range(0.01, 1.0))->group(data);
  cmd->add_flag("!--no-flip", c.hflip, "No random horizontal flip when training")->group(data);
  cmd->add_flag("!--keep-last", c.drop_last, "Keep the last partial batch of each epoch")->group(data);
  cmd->add_flag("--strict", c.strict_data, "Stop at the first bad sample instead of skipping it")->group(data);
  cmd->add_option("--max-samples", c.max_samples, "Use N training samples (0: all)")->check(int_range(0, lim::kMaxSamples))->group(data);
  cmd->add_option("--val-max-samples", c.val_max_samples, "Use N validation samples (0: all)")->check(int_range(0, lim::kMaxSamples))->group(data);
  cmd->add_option("--eval-every", c.eval_every_steps, "Evaluate on the validation split every N steps")
      ->check(int_range(0, lim::kMaxSteps))->group(data);
  cmd->add_option("--eval-every-epochs", c.eval_every_epochs, "Evaluate every N epochs")->check(int_range(0, lim::kMaxSteps))->group(data);
  cmd->add_flag("!--no-final-eval", c.eval_at_end, "No evaluation after the last step")->group(data);
  add_json_option(cmd, args->json)->group("Reporting");
  const char* ck = "Checkpoints";
  cmd->add_option("--checkpoint-dir", c.checkpoint_dir, "Write checkpoints to DIR (always one at the end of the run)")
      ->type_name("DIR")->group(ck);
  cmd->add_option("--checkpoint-every", c.checkpoint_every, "Also every N steps")->check(int_range(0, lim::kMaxSteps))->group(ck);
  cmd->add_option("--checkpoint-every-epochs", c.checkpoint_every_epochs, "Also every N epochs")
      ->check(int_range(0, lim::kMaxSteps))->group(ck);
  cmd->add_option("--checkpoint-keep", c.checkpoint_keep, "Newest checkpoints kept")->capture_default_str()
      ->check(int_range(1, lim::kMaxSteps))->group(ck);
  cmd->add_option("--resume", c.resume, "auto (newest valid checkpoint in --checkpoint-dir, or start fresh) or PATH")
      ->group(ck);
  const char* dp = "Data-parallel (under torchrun or crosstrain launch; docs/DISTRIBUTED.md)";
  cmd->add_flag("--distributed", c.distributed,
                "Join a process group even without torchrun's variables (a single process: rank 0 of 1)")->group(dp);
  cmd->add_option("--dist-backend", c.dist_backend, "auto (gloo on the CPU, nccl on CUDA, hccl on NPUs) | gloo | nccl | hccl")
      ->capture_default_str()->group(dp);
  cmd->add_option("--dist-timeout", c.dist_timeout_s, "Seconds any collective (and the rendezvous) may take")
      ->capture_default_str()->check(real_range(1, 86400))->group(dp);
  cmd->add_option("--bucket-cap-mb", c.bucket_cap_mb, "Gradient bucket size in MiB")->capture_default_str()
      ->check(real_range(0.001, 4096))->group(dp);
  cmd->add_flag("!--no-broadcast-buffers", c.broadcast_buffers,
                "Keep each rank's own buffers (BatchNorm statistics) instead of rank 0's before every forward")->group(dp);
  cmd->add_flag("--sync-bn", c.sync_bn, "BatchNorm statistics over the global batch, all ranks together (SyncBatchNorm)")
      ->group(dp);
  cmd->add_option("--grad-compression", c.grad_compression, "none | fp16 | bf16: all-reduce gradients in that type")
      ->capture_default_str()->check(CLI::IsMember({"none", "fp16", "bf16"}))->group(dp);
  cmd->add_option("--crash-after-step", c.crash_after_step, "Test aid: exit 137 after this step")->check(int_range(-1, lim::kMaxSteps))->group("");
  add_common_train_flags(cmd, c);
  add_dump_flags(cmd, args->dump, /*with_dir=*/true);
  cmd->callback([args] {
    refuse_outputs_over_inputs(train_paths(*args));
    exit_with(commands::train_command(*args));
  });
}

}  // namespace crosstrain::cli
