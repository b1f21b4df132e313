// `doctor`, `models` and `op-check` in the engine: what this machine, build and device can do.
#include <iostream>
#include <stdexcept>
#include <string>

#include "report/envelope.h"
#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/commands/commands.h"
#include "tools/commands/torch_errors.h"
#include "tools/doctor/doctor.h"
#include "tools/train/model_catalog.h"
#include "tools/opcheck/op_check.h"
#include "tools/opcheck/replay.h"

namespace crosstrain::commands {

namespace {

int doctor_body(const DoctorArgs& args) {
  if (args.options.distributed) {  // rank 0 reports for the job; another rank only what stopped it alone
    const auto r = doctor::run_distributed_doctor(args.options);
    if (r.rank != 0 && r.joined) return r.ok() ? 0 : 1;
    if (!report::json_to_stdout(args.json)) std::cout << doctor::render_distributed_doctor(r);
    if (!args.json.empty())
      report::write_json(report::with_envelope("doctor", doctor::distributed_doctor_to_json(r)), args.json);
    std::cout.flush();
    if (doctor::tell_rank0(r, args.options)) std::cerr << "doctor: rank 0 was told that this rank will not join\n";
    return r.ok() ? 0 : 1;
  }
  const auto r = doctor::run_doctor(args.options);
  if (!report::json_to_stdout(args.json)) std::cout << doctor::render_doctor(r);
  if (!args.json.empty()) report::write_json(report::with_envelope("doctor", doctor::doctor_to_json(r)), args.json);
  return r.ok() ? 0 : 1;
}

int models_body(const ModelsArgs& args) {
  namespace lim = train::limits;
  if (args.num_classes < 1 || args.num_classes > lim::kMaxNumClasses)
    throw std::invalid_argument("--num-classes must be between 1 and " + std::to_string(lim::kMaxNumClasses));
  if (args.image_size < lim::kMinImageSize || args.image_size > lim::kMaxImageSize)
    throw std::invalid_argument("--image-size must be between " + std::to_string(lim::kMinImageSize) + " and " +
                                std::to_string(lim::kMaxImageSize));
  const auto models = train::list_models(args.num_classes, args.image_size, args.small_stem);
  if (!report::json_to_stdout(args.json)) {
    report::Table t({"model", "parameters", "GFLOPs/img (fwd)"});
    for (const auto& m : models)
      t.add_row({m.name, report::format_count(m.parameters), report::format_fixed(m.forward_gflops, 2)});
    std::cout << t.render() << "GFLOPs = 2 x multiply-accumulates at " << args.image_size << "x" << args.image_size
              << "; a training step costs about 3x the forward pass.\n";
  }
  if (!args.json.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& m : models)
      list.push_back({{"name", m.name}, {"parameters", m.parameters}, {"forward_gflops", m.forward_gflops}});
    report::write_json(report::with_envelope("models", {{"image_size", args.image_size},
                                                        {"num_classes", args.num_classes},
                                                        {"models", list}}),
                       args.json);
  }
  return 0;
}

int op_check_replay_body(const OpCheckArgs& args) {
  const auto r = opcheck::run_replay(args.options, &std::cerr);
  if (!args.json.empty()) report::write_json(report::with_envelope("op-check", opcheck::replay_to_json(r)), args.json);
  (report::json_to_stdout(args.json) ? std::cerr : std::cout) << opcheck::render_replay_console(r, args.options.top);
  return r.all_pass() ? 0 : 1;
}

int op_check_body(const OpCheckArgs& args) {
  if (!args.options.from_dump.empty()) return op_check_replay_body(args);
  const auto r = opcheck::run_op_check(args.options, &std::cerr);
  if (!args.json.empty()) report::write_json(report::with_envelope("op-check", opcheck::op_check_to_json(r)), args.json);
  (report::json_to_stdout(args.json) ? std::cerr : std::cout) << opcheck::render_op_check_console(r);
  return r.all_pass() ? 0 : 1;
}

}  // namespace

int doctor_command(const DoctorArgs& args) {
  return with_torch_errors([&] { return doctor_body(args); });
}

int models_command(const ModelsArgs& args) {
  return with_torch_errors([&] { return models_body(args); });
}

int op_check_command(const OpCheckArgs& args) {
  return with_torch_errors([&] { return op_check_body(args); });
}

}  // namespace crosstrain::commands
