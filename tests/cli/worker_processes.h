#pragma once
// Binary-level tests of data-parallel commands: processes started as a launcher starts workers
// (torchrun's variables, one free loopback port), their output in files, waited for with a deadline.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace crosstrain::testing {

inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

using Env = std::map<std::string, std::string>;
using Clock = std::chrono::steady_clock;

class Workers {
 public:
  explicit Workers(std::filesystem::path dir) : dir_(std::move(dir)) {}
  // `n` ranks of `args` (a crosstrain command line) on one free port.
  Workers(std::filesystem::path dir, int n, const std::string& args) : dir_(std::move(dir)) {
    const int port = free_port();
    for (int r = 0; r < n; ++r) start(torchrun(r, n, port), args);
  }
  ~Workers() {
    for (pid_t p : pids_)
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Rank r of n on the loopback at `port`, plus `extra` variables.
  static Env torchrun(int r, int n, int port, const Env& extra = {}) {
    Env e = {{"RANK", std::to_string(r)},        {"LOCAL_RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(n)},
             {"LOCAL_WORLD_SIZE", std::to_string(n)}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}};
    for (const auto& [k, v] : extra) e[k] = v;
    return e;
  }
  // Starts `crosstrain ARGS` with exactly `env`'s launcher variables, after the shell words `wrapper`
  // (`ip netns exec NS`, `unshare ...`) when given; returns its index.
  int start(const Env& env, const std::string& args, const std::string& wrapper = "") {
    const int i = static_cast<int>(pids_.size());
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                            "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"})
        ::unsetenv(v);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      const std::string cmd = "exec " + wrapper + (wrapper.empty() ? "" : " ") + binary() + " " + args + " > " +
                              out(i).string() + " 2> " + err(i).string();
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids_.push_back(pid);
    return i;
  }
  std::filesystem::path out(int i) const { return dir_ / ("out" + std::to_string(i) + ".txt"); }
  std::filesystem::path err(int i) const { return dir_ / ("err" + std::to_string(i) + ".txt"); }
  std::string output(int i) const { return read_file(out(i)) + read_file(err(i)); }
  pid_t pid(int i) const { return pids_[static_cast<size_t>(i)]; }
  // The exit code of process i (128 + signal when killed), or -1 when it still runs at `deadline`.
  int wait(int i, Clock::time_point deadline) {
    pid_t& p = pids_[static_cast<size_t>(i)];
    while (true) {
      int status = 0;
      if (::waitpid(p, &status, WNOHANG) == p) {
        p = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (Clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  std::filesystem::path dir_;
  std::vector<pid_t> pids_;
};

}  // namespace crosstrain::testing
