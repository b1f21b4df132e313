#pragma once
// A profiler that needs nothing from the device: RecordFunction global callbacks see every ATen
// operator and user scope on every thread, and the allocator's memory reports arrive through the
// profiler slot of ThreadLocalDebugInfo. Writes torch.profiler's Chrome-trace schema.
#include <memory>
#include <string>

namespace crosstrain::profile {

class PortableRecorder {
 public:
  PortableRecorder(bool record_shapes, bool profile_memory, std::string device);
  ~PortableRecorder();
  void start();
  // Stops recording and writes the trace; returns the number of events written.
  size_t stop_and_write(const std::string& path);

 public:
  struct State;

 private:
  std::shared_ptr<State> state_;
  bool record_shapes_;
  bool profile_memory_;
  std::string device_;
  uint64_t callback_ = 0;
  bool running_ = false;
};

}  // namespace crosstrain::profile
