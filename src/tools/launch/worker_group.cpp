#include "tools/launch/worker_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "tools/launch/line_prefixer.h"
#include "tools/launch/output_sink.h"

namespace crosstrain::launch {

namespace {

using Clock = std::chrono::steady_clock;
constexpr Clock::time_point kNever = Clock::time_point::max();

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
// After the last worker exited, how long its pipes may stay open (held by a process that left
// the worker's process group) before the launcher stops reading them.
constexpr auto kDrainLimit = std::chrono::seconds(1);

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

bool is_stop_signal(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP; }

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error("launch: " + what + ": " + std::strerror(errno));
}

struct Stream {
  int fd = -1;                  // read end of the worker's pipe; -1 once closed
  OutputSink* sink = nullptr;   // the launcher's stream it goes to
  std::unique_ptr<LinePrefixer> lines;

  void emit(const std::string& text) {
    if (!text.empty()) sink->write(text);
  }
  void close() {
    if (fd < 0) return;
    emit(lines->finish());
    ::close(fd);
    fd = -1;
  }
  // Reads what is there; closes at end of stream.
  void read_some() {
    char buf[65536];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) return close();
    emit(lines->feed(std::string_view(buf, static_cast<size_t>(n))));
  }
};

struct Worker {
  WorkerSpec spec;
  pid_t pid = -1;
  bool running = false;
  Stream out, err;
};

void signal_group(const Worker& w, int sig) {
  if (w.pid > 0) ::kill(-w.pid, sig);  // ESRCH (group already gone) is fine
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_worker(const Program& program, char* const argv[], char* const envp[], int out_fd, int err_fd,
                              pid_t parent) {
  // Signals are blocked here (see start_one) until the handlers are the defaults again.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
  ::close(g_signal_pipe[0]);
  ::close(g_signal_pipe[1]);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the launcher died before the line above
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  if (out_fd >= 0) ::dup2(out_fd, 1);
  if (err_fd >= 0) ::dup2(err_fd, 2);
  ::execve(program.path.c_str(), argv, envp);
  const char* why = std::strerror(errno);
  const char* head = "crosstrain launch: cannot run ";
  [[maybe_unused]] ssize_t n = ::write(2, head, std::strlen(head));
  n = ::write(2, program.path.c_str(), program.path.size());
  n = ::write(2, ": ", 2);
  n = ::write(2, why, std::strlen(why));
  n = ::write(2, "\n", 1);
  ::_exit(127);
}

class GroupRun {
 public:
  GroupRun(const Program& program, const GroupOptions& options, SignalWatch& signals)
      : program_(program), options_(options), signals_(signals) {}

  ~GroupRun() {
    for (auto& w : workers_) {
      if (w.running) {
        signal_group(w, SIGKILL);
        int status;
        ::waitpid(w.pid, &status, 0);
      }
      w.out.close();
      w.err.close();
    }
  }

  void start(const std::vector<WorkerSpec>& specs) {
    if (options_.prefix_output && (!options_.out || !options_.err))
      throw std::logic_error("launch: prefixed output needs the launcher's output sinks");
    workers_.reserve(specs.size());
    for (const auto& spec : specs) {
      workers_.emplace_back();
      start_one(workers_.back(), spec);
    }
  }

  GroupResult wait() {
    Clock::time_point kill_at = kNever, drain_until = kNever;
    for (;;) {
      reap();
      const bool any_running = running_count() > 0;
      if (!any_running && !finished_) {
        finished_ = true;
        for (auto& w : workers_) signal_group(w, SIGKILL);  // what a worker left behind
        drain_until = Clock::now() + kDrainLimit;
      }
      if (!any_running && (open_streams() == 0 || Clock::now() >= drain_until)) break;
      if (any_running && kill_at != kNever && Clock::now() >= kill_at) {
        note("workers still running " + seconds(options_.kill_timeout_s) + " after " + signal_name(stop_sent_) +
             ": sending SIGKILL");
        kill_all();
        kill_at = kNever;
      }

      std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
      std::vector<Stream*> streams;
      for (auto& w : workers_)
        for (Stream* s : {&w.out, &w.err})
          if (s->fd >= 0) {
            fds.push_back({s->fd, POLLIN, 0});
            streams.push_back(s);
          }
      int timeout_ms = -1;
      auto limit = [&](Clock::time_point t) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count() + 1;
        ms = ms < 0 ? 0 : ms;
        if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = static_cast<int>(ms);
      };
      if (any_running && kill_at != kNever) limit(kill_at);
      if (!any_running) limit(drain_until);
      if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) throw system_error("poll");

      if (fds[0].revents & POLLIN)
        for (int sig : signals_.take()) on_launcher_signal(sig, kill_at);
      for (size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) streams[i - 1]->read_some();
      tell_first_drops();
      if (stopping_ && kill_at == kNever && !killed_sent_ && running_count() > 0) kill_at = Clock::now() + timeout();
    }
    for (auto& w : workers_) {
      w.out.close();
      w.err.close();
    }
    return result_;
  }

 private:
  void start_one(Worker& w, const WorkerSpec& spec) {
    w.spec = spec;
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (options_.prefix_output) {
      if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw system_error("pipe");
      if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        throw system_error("pipe");
      }
    }
    // Everything the child needs is built before fork().
    std::vector<char*> argv, envp;
    for (const auto& a : program_.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const pid_t parent = ::getpid();
    // Signals stay blocked until the child has reset its handlers: the launcher's handlers would
    // write into the launcher's signal pipe from the child.
    sigset_t all, before;
    sigfillset(&all);
    ::sigprocmask(SIG_SETMASK, &all, &before);
    const pid_t pid = ::fork();
    if (pid == 0) exec_worker(program_, argv.data(), envp.data(), out_pipe[1], err_pipe[1], parent);
    const int fork_errno = errno;
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    for (int fd : {out_pipe[1], err_pipe[1]})
      if (fd >= 0) ::close(fd);
    if (pid < 0) {
      for (int fd : {out_pipe[0], err_pipe[0]})
        if (fd >= 0) ::close(fd);
      errno = fork_errno;
      throw system_error("cannot start worker " + std::to_string(spec.rank));
    }
    ::setpgid(pid, pid);  // also here, so the group exists before the launcher signals it
    w.pid = pid;
    w.running = true;
    if (options_.prefix_output) {
      const std::string prefix = "[rank" + std::to_string(spec.rank) + "]: ";
      w.out = Stream{out_pipe[0], options_.out, std::make_unique<LinePrefixer>(prefix)};
      w.err = Stream{err_pipe[0], options_.err, std::make_unique<LinePrefixer>(prefix)};
    }
  }

  void reap() {
    for (auto& w : workers_) {
      if (!w.running) continue;
      int status = 0;
      pid_t r = ::waitpid(w.pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) continue;
      w.running = false;
      WorkerEnd end{w.spec.rank, w.spec.local_rank, 0, 0};
      if (r < 0) end.exit_code = 127;  // not ours to wait for any more: count it as failed
      else if (WIFSIGNALED(status)) end.signal = WTERMSIG(status);
      else end.exit_code = WEXITSTATUS(status);
      result_.ends.push_back(end);
      if (end.failed() && !stopping_) {
        result_.first_failure = end;
        stopping_ = true;
        stop_sent_ = SIGTERM;
        if (running_count() > 0)
          note("rank " + std::to_string(end.rank) + " failed (" + end.describe() + "): stopping the other workers");
        for (auto& other : workers_) signal_group(other, SIGTERM);
      }
    }
  }

  void on_launcher_signal(int sig, Clock::time_point& kill_at) {
    if (!is_stop_signal(sig)) return;  // SIGCHLD: reap() runs at the top of the loop
    if (result_.stop_signal == 0 && !killed_sent_) {
      result_.stop_signal = sig;
      stopping_ = true;
      stop_sent_ = sig;
      note("got " + signal_name(sig) + ": forwarding it to the workers (again to kill them)");
      for (auto& w : workers_) signal_group(w, sig);
      kill_at = Clock::now() + timeout();
    } else {
      if (result_.stop_signal == 0) result_.stop_signal = sig;
      if (running_count() > 0) {
        note("got " + signal_name(sig) + " again: sending SIGKILL to the workers");
        kill_all();
      }
      kill_at = kNever;
    }
  }

  // Once per stream and launch: its reader stopped taking lines (the count comes at the end).
  void tell_first_drops() {
    for (OutputSink* sink : {options_.out, options_.err})
      if (sink && sink->first_drop())
        note("the launcher's " + sink->name() + " is not taking the workers' output (a paused terminal, a pipe "
             "nobody reads): their lines are dropped until it does");
  }

  void kill_all() {
    for (auto& w : workers_)
      if (w.running) signal_group(w, SIGKILL);
    killed_sent_ = true;
    result_.killed = true;
  }

  size_t running_count() const {
    size_t n = 0;
    for (const auto& w : workers_) n += w.running;
    return n;
  }
  size_t open_streams() const {
    size_t n = 0;
    for (const auto& w : workers_) n += (w.out.fd >= 0) + (w.err.fd >= 0);
    return n;
  }
  Clock::duration timeout() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.kill_timeout_s));
  }
  static std::string seconds(double s) {
    std::string text = std::to_string(s);
    text.erase(text.find_last_not_of('0') + 1);
    if (!text.empty() && text.back() == '.') text.pop_back();
    return text + " s";
  }
  void note(const std::string& line) const {
    if (options_.note) options_.note(line);
  }

  const Program& program_;
  const GroupOptions& options_;
  SignalWatch& signals_;
  std::vector<Worker> workers_;
  GroupResult result_;
  bool stopping_ = false;
  int stop_sent_ = SIGTERM;  // what the workers were asked to stop with
  bool killed_sent_ = false;
  bool finished_ = false;
};

struct sigaction g_saved[4];
constexpr int kWatched[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
struct sigaction g_saved_pipe;

}  // namespace

SignalWatch::SignalWatch() {
  if (g_signal_pipe[0] >= 0) throw std::logic_error("launch: one SignalWatch at a time");
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw system_error("pipe");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  for (size_t i = 0; i < 4; ++i) ::sigaction(kWatched[i], &sa, &g_saved[i]);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &g_saved_pipe);
}

SignalWatch::~SignalWatch() {
  for (size_t i = 0; i < 4; ++i) ::sigaction(kWatched[i], &g_saved[i], nullptr);
  ::sigaction(SIGPIPE, &g_saved_pipe, nullptr);
  ::close(g_signal_pipe[0]);
  ::close(g_signal_pipe[1]);
  g_signal_pipe[0] = g_signal_pipe[1] = -1;
}

int SignalWatch::fd() const { return g_signal_pipe[0]; }

std::vector<int> SignalWatch::take() {
  std::vector<int> out;
  unsigned char buf[64];
  ssize_t n;
  while ((n = ::read(g_signal_pipe[0], buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n; ++i) out.push_back(buf[i]);
  return out;
}

std::string WorkerEnd::describe() const {
  if (signal != 0) return "killed by " + signal_name(signal);
  return "exit code " + std::to_string(exit_code);
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGPIPE: return "SIGPIPE";
    case SIGQUIT: return "SIGQUIT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "signal " + std::to_string(sig);
  }
}

GroupResult run_worker_group(const Program& program, const std::vector<WorkerSpec>& workers,
                             const GroupOptions& options, SignalWatch& signals) {
  GroupRun run(program, options, signals);
  run.start(workers);
  return run.wait();
}

}  // namespace crosstrain::launch
