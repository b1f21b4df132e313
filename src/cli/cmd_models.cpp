// `crosstrain models`: the model registry with parameter counts and forward cost.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/model_catalog.h"

namespace crosstrain::cli {

void add_models_command(CLI::App& app) {
  struct Args {
    int64_t num_classes = 1000;
    int64_t image_size = 224;
    bool small_stem = false;
    std::string json;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("models", "List the models with parameter count and forward GFLOPs per image");
  cmd->add_option("--num-classes", args->num_classes, "Classifier outputs")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--image-size", args->image_size, "Input size for the GFLOPs column")->capture_default_str()
      ->check(CLI::Range(8, 4096));
  cmd->add_flag("--small-stem", args->small_stem, "Small-input stem (3x3 stride 1, no max-pool)");
  add_json_option(cmd, args->json);
  cmd->callback([args] {
    auto models = tools::list_models(args->num_classes, args->image_size, args->small_stem);
    if (!report::json_to_stdout(args->json)) {
      report::Table t({"model", "parameters", "GFLOPs/img (fwd)"});
      for (const auto& m : models)
        t.add_row({m.name, report::format_count(m.parameters), report::format_fixed(m.forward_gflops, 2)});
      std::cout << t.render() << "GFLOPs = 2 x multiply-accumulates at " << args->image_size << "x" << args->image_size
                << "; a training step costs about 3x the forward pass.\n";
    }
    if (!args->json.empty()) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& m : models)
        list.push_back({{"name", m.name}, {"parameters", m.parameters}, {"forward_gflops", m.forward_gflops}});
      report::write_json({{"schema_version", report::kJsonSchemaVersion}, {"kind", "models"},
                          {"image_size", args->image_size}, {"num_classes", args->num_classes}, {"models", list}},
                         args->json);
    }
  });
}

}  // namespace crosstrain::cli
