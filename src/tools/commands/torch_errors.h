#pragma once
// The engine's command boundary for libtorch's exceptions. c10::Error's what() carries a C++
// backtrace of 20-odd frames after the message; a user needs the message. Every command of
// commands.h runs its body through this, so its errors reach the CLI as one line:
//
//   int train_command(const TrainArgs& a) { return with_torch_errors([&] { ...; return 0; }); }
#include <c10/util/Exception.h>

#include <stdexcept>
#include <string>

namespace crosstrain::commands {

// c10::Error becomes std::runtime_error with the first line of what_without_backtrace() (libtorch's
// dispatcher errors list every registered backend on further lines). Other exceptions pass as they are.
template <typename Body>
int with_torch_errors(Body&& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    msg = msg.substr(0, msg.find('\n'));
    throw std::runtime_error(msg);
  }
}

}  // namespace crosstrain::commands
