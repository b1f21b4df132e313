// `crosstrain models`: the model registry with parameter counts and forward cost.
#include <memory>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "tools/commands/commands.h"
#include "tools/train/train_config.h"

namespace crosstrain::cli {

void add_models_command(CLI::App& app) {
  auto args = std::make_shared<commands::ModelsArgs>();
  CLI::App* cmd = app.add_subcommand("models", "List the models with parameter count and forward GFLOPs per image");
  cmd->add_option("--num-classes", args->num_classes, "Classifier outputs")->capture_default_str()
      ->check(int_range(1, train::limits::kMaxNumClasses));
  cmd->add_option("--image-size", args->image_size, "Input size for the GFLOPs column")->capture_default_str()
      ->check(int_range(train::limits::kMinImageSize, train::limits::kMaxImageSize));
  cmd->add_flag("--small-stem", args->small_stem, "Small-input stem (3x3 stride 1, no max-pool)");
  add_json_option(cmd, args->json);
  cmd->callback([args] { exit_with(commands::models_command(*args)); });
}

}  // namespace crosstrain::cli
