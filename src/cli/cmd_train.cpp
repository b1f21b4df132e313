// `crosstrain train`: one training run, a summary table, optional JSON and per-step log.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/dump_flags.h"
#include "cli/train_flags.h"
#include "report/output.h"
#include "tools/train.h"
#include "tools/train_report.h"

namespace crosstrain::cli {

void add_train_command(CLI::App& app) {
  struct Args {
    tools::TrainConfig c;
    std::string json;
    DumpFlags dump;
  };
  auto args = std::make_shared<Args>();
  auto& c = args->c;
  CLI::App* cmd = app.add_subcommand("train", "Train a ResNet on synthetic data and report speed and memory");
  const char* model = "Model";
  cmd->add_option("--model", c.model, "resnet18 | resnet34 | resnet50 | resnet101 | resnet152")->capture_default_str()->group(model);
  cmd->add_option("--weights", c.weights_in, "Load a state dict saved with torch.save(dict(m.state_dict()), PATH)")
      ->type_name("PATH")->group(model);
  cmd->add_option("--save-weights", c.weights_out, "Write the trained state dict (torch.load reads it)")
      ->type_name("PATH")->group(model);
  const char* run = "Run";
  cmd->add_option("--batch-size", c.batch_size, "Images per step")->capture_default_str()->check(CLI::PositiveNumber)->group(run);
  cmd->add_option("--image-size", c.image_size, "Square input size in pixels")->capture_default_str()->check(CLI::Range(8, 4096))->group(run);
  cmd->add_option("--steps", c.steps, "Training steps")->capture_default_str()->check(CLI::PositiveNumber)->group(run);
  cmd->add_option("--warmup-steps", c.warmup_steps, "Steps excluded from timing statistics")->capture_default_str()
      ->check(CLI::NonNegativeNumber)->group(run);
  cmd->add_option("--precision", c.precision, "fp32 | tf32 | fp16 | bf16")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}))->group(run);
  cmd->add_option("--log", c.log_path, "Per-step JSON lines (step, loss, lr, loss_scale, step_ms)")->type_name("PATH")->group("Reporting");
  add_json_option(cmd, args->json)->group("Reporting");
  add_common_train_flags(cmd, c);
  add_dump_flags(cmd, args->dump, /*with_dir=*/true);
  cmd->callback([args] {
    const bool quiet = report::json_to_stdout(args->json);
    tools::TrainHooks hooks;
    hooks.messages = &std::cerr;
    tools::validate_config(args->c);
    auto dump = attach_dump(args->dump, args->dump.dir, args->c, hooks, /*host_batches=*/false);
    auto result = tools::run_training(args->c, hooks);
    if (dump.session) {
      dump.session->close();
      std::cerr << "dump: " << dump.session->dir() << " (" << dump.session->records_written() << " records)\n";
    }
    if (!quiet) std::cout << tools::render_train_summary(result);
    if (!args->json.empty()) {
      auto doc = tools::train_result_to_json(result);
      doc["schema_version"] = report::kJsonSchemaVersion;
      doc["kind"] = "train";
      report::write_json(doc, args->json);
    }
  });
}

}  // namespace crosstrain::cli
