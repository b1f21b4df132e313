// main() for every test binary: GoogleTest, plus a fatal-signal handler that prints the native
// stack to stderr before the process dies, so a crash in CI leaves more than "SegFault" behind.
#include <execinfo.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

namespace {

void print_stack_and_die(int sig) {
  const char* name = strsignal(sig);
  (void)!::write(STDERR_FILENO, "\n*** fatal signal: ", 19);
  (void)!::write(STDERR_FILENO, name, std::strlen(name));
  (void)!::write(STDERR_FILENO, "\n", 1);
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  // The handler was installed with SA_RESETHAND: raising again takes the default action, so the
  // exit status still says which signal it was.
  ::raise(sig);
}

void install_crash_handler() {
  void* warm[1];
  ::backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
  struct sigaction sa {};
  sa.sa_handler = &print_stack_and_die;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  install_crash_handler();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
