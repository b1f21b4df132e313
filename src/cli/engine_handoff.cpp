// The torch-free front's versions of the libtorch commands (tools/commands/commands.h): by the
// time one is called, CLI11 has parsed and checked the command line here, without libtorch. The
// process then becomes crosstrain-engine, found next to this executable, on the same command line
// (argv[0] included, so messages read the same). The engine parses it again with the same flag
// definitions and runs the command; its output, exit status and signals are the process's own.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/envelope.h"
#include "tools/commands/commands.h"

namespace crosstrain::commands {

namespace {

namespace fs = std::filesystem;

constexpr const char* kEngineName = "crosstrain-engine";

fs::path engine_path() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot locate this executable through /proc/self/exe: " + ec.message());
  return self.parent_path() / kEngineName;
}

[[noreturn]] void hand_off(const std::string& command) {
  const fs::path engine = engine_path();
  if (::access(engine.c_str(), X_OK) != 0)
    throw std::runtime_error("'" + command + "' runs in " + kEngineName + " (it needs libtorch), which is not at " +
                             engine.string() + ": " + std::strerror(errno) +
                             "; build crosstrain with -DCROSSTRAIN_WITH_TORCH=ON");
  const std::vector<std::string>& line = report::command_line();
  if (line.empty()) throw std::logic_error("the command line was not recorded (report::set_command_line)");
  std::vector<char*> argv;
  for (const auto& arg : line) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::execv(engine.c_str(), argv.data());
  throw std::runtime_error("cannot start " + engine.string() + ": " + std::strerror(errno));
}

}  // namespace

int train_command(const TrainArgs&) { hand_off("train"); }
int bench_command(const BenchArgs&) { hand_off("bench"); }
int doctor_command(const DoctorArgs&) { hand_off("doctor"); }
int models_command(const ModelsArgs&) { hand_off("models"); }
int op_check_command(const OpCheckArgs&) { hand_off("op-check"); }
int align_command(const AlignArgs&) { hand_off("align"); }
int comm_bench_command(const CommBenchArgs&) { hand_off("comm-bench"); }

}  // namespace crosstrain::commands
