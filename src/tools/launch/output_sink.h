#pragma once
// The launcher's way out to one of its streams (stdout or stderr): text is queued and a thread of
// its own writes it, so a stream that does not take its bytes (a paused terminal, a `| tee` that
// stalled, a pipe nobody reads) blocks that thread only, never the loop that watches signals and
// workers.
//
//   OutputSink out(1, "stdout");
//   out.write(lines);                  // whole lines; dropped and counted when the queue is full
//   out.write_always("note\n");        // the launcher's own messages: queued even then
//   out.flush_until(deadline);         // true once everything queued has been written
//
// The queue holds at most `capacity` bytes of workers' output; text offered beyond that is dropped,
// whole, and its lines counted (dropped_lines()). A stream that fails (EPIPE: the reader is gone)
// takes nothing more. The writer thread is never joined: when the stream never takes its bytes, it
// stays blocked in write(2) until the process exits, which ends it.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace crosstrain::launch {

class OutputSink {
 public:
  static constexpr size_t kDefaultCapacity = size_t{8} << 20;

  // `name` ("stdout") is what the launcher's messages call the stream.
  OutputSink(int fd, std::string name, size_t capacity = kDefaultCapacity);
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  // Queues `text`; false (its lines counted as dropped) when it does not fit or the stream failed.
  bool write(const std::string& text);
  // Queues `text` whatever the queue holds (small, rare messages).
  void write_always(const std::string& text);
  // Waits until everything queued was written (or the stream failed), at most until `deadline`.
  bool flush_until(std::chrono::steady_clock::time_point deadline);

  const std::string& name() const { return name_; }
  size_t dropped_lines() const;
  // True once: the first time it is asked after lines were dropped (to say so when it starts).
  bool first_drop();
  size_t pending_bytes() const;  // queued or being written
  bool failed() const;           // a write failed: the rest is discarded

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::string name_;
  bool drop_told_ = false;
};

}  // namespace crosstrain::launch
