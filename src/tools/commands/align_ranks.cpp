#include "tools/commands/align_ranks.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "tools/launch/launcher.h"

namespace crosstrain::commands {

namespace {

constexpr const char* kRoleVariable = "CROSSTRAIN_ALIGN_SIDE";  // "SIDE:OUT"

// This process's command line as the kernel holds it.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  for (size_t start = 0; start < raw.size();) {
    const size_t end = raw.find('\0', start);
    argv.push_back(raw.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (argv.empty()) throw std::runtime_error("cannot read this process's command line from /proc/self/cmdline");
  return argv;
}

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
  request.program.argv = own_command_line();
  request.extra_env[kRoleVariable] = side + ":" + std::filesystem::absolute(out).string();
  return launch::run_launch(request);
}

}  // namespace crosstrain::commands
