#pragma once
// A deadline for the steps of a rendezvous that c10d does not bound itself. A TCPStore client
// blocks in recv(2) without end when MASTER_PORT belongs to a service that accepts connections and
// never answers, and Gloo's connections between ranks can outlive the timeout several times.
//
//   RendezvousDeadline deadline(master_port, [&](const std::string& step) { say(step); _Exit(1); });
//   deadline.arm("connecting to the store", timeout);  // each step its own limit
//   ... c10d calls ...
//   deadline.disarm();
//
// When a step's limit passes, every TCP socket of this process connected to `port` is shut down, so
// a store call blocked on it fails at once and the caller's error path runs (expired() tells it
// why). If the step still has not ended `grace` later, on_stuck(step) runs on the watchdog thread;
// it must not return (it prints one line and exits). Torch-free.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace crosstrain::dist {

class RendezvousDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  RendezvousDeadline(int port, std::function<void(const std::string& step)> on_stuck,
                     std::chrono::milliseconds grace = std::chrono::milliseconds(3000));
  ~RendezvousDeadline();
  RendezvousDeadline(const RendezvousDeadline&) = delete;
  RendezvousDeadline& operator=(const RendezvousDeadline&) = delete;

  void arm(const std::string& step, std::chrono::milliseconds limit);
  void disarm();
  bool expired() const;  // the limit of the current (or last) step passed

 private:
  void watch();

  int port_;
  std::function<void(const std::string&)> on_stuck_;
  std::chrono::milliseconds grace_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string step_;
  Clock::time_point limit_ = Clock::time_point::max();
  bool expired_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

// Shuts down (SHUT_RDWR) every connected TCP socket of this process whose peer port is `port`;
// returns how many.
int shut_down_sockets_to(int port);

}  // namespace crosstrain::dist
