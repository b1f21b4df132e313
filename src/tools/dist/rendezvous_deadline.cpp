#include "tools/dist/rendezvous_deadline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

namespace crosstrain::dist {

RendezvousDeadline::RendezvousDeadline(int port, std::function<void(const std::string&)> on_stuck,
                                       std::chrono::milliseconds grace)
    : port_(port), on_stuck_(std::move(on_stuck)), grace_(grace), thread_([this] { watch(); }) {}

RendezvousDeadline::~RendezvousDeadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void RendezvousDeadline::arm(const std::string& step, std::chrono::milliseconds limit) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    step_ = step;
    limit_ = Clock::now() + limit;
    expired_ = false;
  }
  changed_.notify_all();
}

void RendezvousDeadline::disarm() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = Clock::time_point::max();
  }
  changed_.notify_all();
}

bool RendezvousDeadline::expired() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return expired_;
}

void RendezvousDeadline::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (stopping_) return;
    if (limit_ == Clock::time_point::max()) {
      changed_.wait(lock);
      continue;
    }
    const Clock::time_point limit = limit_;
    const bool past = expired_;
    const Clock::time_point next = past ? limit + grace_ : limit;
    if (changed_.wait_until(lock, next, [&] { return stopping_ || limit_ != limit; })) continue;
    if (!past) {
      expired_ = true;
      lock.unlock();
      shut_down_sockets_to(port_);
      lock.lock();
      continue;
    }
    const std::string step = step_;
    lock.unlock();
    on_stuck_(step);  // does not return
    lock.lock();
    limit_ = Clock::time_point::max();
  }
}

int shut_down_sockets_to(int port) {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code link_ec;
    if (std::filesystem::read_symlink(entry.path(), link_ec).string().rfind("socket:", 0) != 0) continue;
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;  // not connected
    int peer_port = -1;
    if (peer.ss_family == AF_INET) peer_port = ntohs(reinterpret_cast<sockaddr_in*>(&peer)->sin_port);
    if (peer.ss_family == AF_INET6) peer_port = ntohs(reinterpret_cast<sockaddr_in6*>(&peer)->sin6_port);
    if (peer_port == port && ::shutdown(fd, SHUT_RDWR) == 0) ++n;
  }
  return n;
}

}  // namespace crosstrain::dist
