#pragma once
// The commands that need libtorch, as entry points over plain arguments. Torch-free header: the
// CLI defines every flag against these structs and calls these functions.
//
// Two implementations exist, and each binary links one:
//   - crosstrain-engine links the real ones (crosstrain_commands: train_command.cpp, ...), which
//     load libtorch;
//   - crosstrain, the torch-free front, links engine_handoff.cpp, whose versions replace the
//     process with crosstrain-engine (next to the front's executable) on the same command line.
// So flags, --help and usage errors are handled without libtorch, and the engine parses the same
// command line with the same flag definitions.
//
// Each returns the exit status (0, or 1 when the command ran and found a problem: runs that
// differ, a doctor check that failed) and throws std::invalid_argument for the caller's mistakes
// and std::runtime_error for failures while running, like the rest of the library.
#include <cstdint>
#include <string>

#include "tools/align/align_run.h"
#include "tools/bench/bench.h"
#include "tools/dist/comm_bench.h"
#include "tools/doctor/doctor.h"
#include "tools/dump/trainer/dump_attachment.h"
#include "tools/opcheck/op_check_options.h"
#include "tools/train/train_config.h"

namespace crosstrain::commands {

struct TrainArgs {
  train::TrainConfig config;
  std::string json;  // --json PATH ('-' = stdout)
  crosstrain::dump::DumpOptions dump;
};

struct BenchArgs {
  bench::BenchOptions options;
  std::string json;
};

struct DoctorArgs {
  doctor::DoctorOptions options;
  std::string json;
};

struct ModelsArgs {
  int64_t num_classes = 1000;
  int64_t image_size = 224;
  bool small_stem = false;
  std::string json;
};

struct OpCheckArgs {
  opcheck::OpCheckOptions options;
  std::string json;
};

struct AlignArgs {
  align::AlignOptions options;
  std::string json, html;
};

struct CommBenchArgs {
  dist::CommBenchOptions options;
  std::string json;
};

int train_command(const TrainArgs& args);
int bench_command(const BenchArgs& args);
int doctor_command(const DoctorArgs& args);
int models_command(const ModelsArgs& args);
int op_check_command(const OpCheckArgs& args);
int align_command(const AlignArgs& args);
int comm_bench_command(const CommBenchArgs& args);

}  // namespace crosstrain::commands
