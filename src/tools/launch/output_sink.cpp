#include "tools/launch/output_sink.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

namespace crosstrain::launch {

struct OutputSink::State {
  int fd = -1;
  size_t capacity = 0;
  std::mutex mutex;
  std::condition_variable changed;
  std::string queued;
  size_t in_flight = 0;  // bytes the writer took and has not finished writing
  size_t dropped = 0;
  bool failed = false;
  bool closing = false;

  // Blocking writes of everything queued, until the owner is gone and nothing is left.
  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return !queued.empty() || closing; });
      if (queued.empty()) return;  // closing, and everything written
      std::string chunk;
      chunk.swap(queued);
      in_flight = chunk.size();
      lock.unlock();
      const bool ok = write_all(chunk);
      lock.lock();
      in_flight = 0;
      if (!ok) {
        failed = true;
        queued.clear();
      }
      changed.notify_all();
    }
  }

  bool write_all(const std::string& data) const {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n >= 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // a non-blocking stream handed to the launcher: wait here, in this thread
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 1000);
        continue;
      }
      return false;
    }
    return true;
  }
};

namespace {

size_t lines_in(const std::string& text) {
  const auto n = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return n == 0 && !text.empty() ? 1 : n;
}

}  // namespace

OutputSink::OutputSink(int fd, std::string name, size_t capacity)
    : state_(std::make_shared<State>()), name_(std::move(name)) {
  state_->fd = fd;
  state_->capacity = capacity;
  // The writer takes no signals: the launcher's handlers run on the thread that watches for them.
  sigset_t all, before;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  std::thread([state = state_] { state->run(); }).detach();
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

OutputSink::~OutputSink() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->closing = true;
  state_->changed.notify_all();
}

bool OutputSink::write(const std::string& text) {
  if (text.empty()) return true;
  std::lock_guard<std::mutex> lock(state_->mutex);
  State& s = *state_;
  if (s.failed || s.queued.size() + s.in_flight + text.size() > s.capacity) {
    s.dropped += lines_in(text);
    return false;
  }
  s.queued += text;
  s.changed.notify_all();
  return true;
}

void OutputSink::write_always(const std::string& text) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->failed) return;
  state_->queued += text;
  state_->changed.notify_all();
}

bool OutputSink::flush_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  const State& s = *state_;
  return state_->changed.wait_until(lock, deadline, [&] { return s.failed || (s.queued.empty() && s.in_flight == 0); });
}

size_t OutputSink::dropped_lines() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->dropped;
}

bool OutputSink::first_drop() {
  if (drop_told_ || dropped_lines() == 0) return false;
  drop_told_ = true;
  return true;
}

size_t OutputSink::pending_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->queued.size() + state_->in_flight;
}

bool OutputSink::failed() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->failed;
}

}  // namespace crosstrain::launch
