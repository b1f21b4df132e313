#include "tools/align/align_ranks.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "report/envelope.h"
#include "tools/launch/launcher.h"

namespace crosstrain::align {

namespace {

constexpr const char* kRoleVariable = "CROSSTRAIN_ALIGN_SIDE";  // "SIDE:OUT"

}  // namespace

std::optional<AlignWorkerRole> align_worker_role() {
  const char* role = std::getenv(kRoleVariable);
  if (!role) return std::nullopt;
  const std::string text = role;
  const auto colon = text.find(':');
  if (colon == std::string::npos || (text.substr(0, colon) != "a" && text.substr(0, colon) != "b"))
    throw std::invalid_argument(std::string(kRoleVariable) + ": expected SIDE:DIR, got '" + text + "'");
  AlignWorkerRole r;
  r.side = text.substr(0, colon);
  r.out = text.substr(colon + 1);
  return r;
}

int run_side_ranks(const std::string& side, int nproc, const std::string& out) {
  launch::LaunchRequest request;
  request.shape.nproc_per_node = nproc;
  request.shape.master_port = 0;
  request.program.path = std::filesystem::read_symlink("/proc/self/exe").string();
  request.program.argv = report::command_line();  // as main() received it
  if (request.program.argv.empty()) throw std::logic_error("the command line was not recorded (report::set_command_line)");
  request.extra_env[kRoleVariable] = side + ":" + std::filesystem::absolute(out).string();
  return launch::run_launch(request);
}

}  // namespace crosstrain::align
