// Fault injection for tests of the Python side: XFERLAB_PROBE_FAULT makes a measuring subcommand fail on
// purpose, the way a real probe can (a crash, a hang, a stray line, an unexpected exit code).
//
//   XFERLAB_PROBE_FAULT=KIND[@N]   KIND: crash=SIGSEGV | crash=SIGBUS | crash=abort | hang | garbage | exit=CODE
//
// Without @N the fault happens before the subcommand starts; with @N, right after the N-th sample record
// ("record":"sample" or "samples") is printed, so that partial output exists. A crash first prints a line on
// stderr naming the injected fault; garbage prints one non-JSON line on stdout and carries on.
#pragma once
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace xferlab {
namespace fault {

struct Plan {
  std::string kind;  // "" when no fault is armed
  std::string name;  // the signal's, for a crash
  int signal_number = 0;
  int exit_code = 0;
  long long after = 0;  // 0: before the subcommand starts; N: after the N-th sample record
  long long samples = 0;
  bool done = false;
};

inline Plan& plan() {
  static Plan p;
  return p;
}

[[noreturn]] inline void bad(const std::string& text, const std::string& why) {
  throw std::invalid_argument("XFERLAB_PROBE_FAULT '" + text + "' " + why +
                              "; allowed: crash=SIGSEGV|SIGBUS|abort, hang, garbage, exit=N (0..255), each with "
                              "an optional @N (after the N-th sample record, N >= 1)");
}

inline void fire() {
  Plan& p = plan();
  if (p.done) return;
  p.done = true;
  if (p.kind == "garbage") {
    std::fputs("xferlab-probe fault injection: this line is not JSON\n", stdout);
    std::fflush(stdout);
    return;
  }
  std::fflush(stdout);
  const std::string when = p.after ? "after " + std::to_string(p.samples) + " sample records" : "before starting";
  if (p.kind == "hang") {
    for (;;) pause();
  }
  if (p.kind == "exit") {
    std::fprintf(stderr, "xferlab-probe: fault injected: exit %d %s\n", p.exit_code, when.c_str());
    std::fflush(stderr);
    _exit(p.exit_code);
  }
  // crash: no core file, the default action of the signal.
  struct rlimit none {0, 0};
  setrlimit(RLIMIT_CORE, &none);
  std::fprintf(stderr, "xferlab-probe: fault injected: %s %s\n", p.name.c_str(), when.c_str());
  std::fflush(stderr);
  signal(p.signal_number, SIG_DFL);
  raise(p.signal_number);
  _exit(128 + p.signal_number);  // not reached
}

// Reads XFERLAB_PROBE_FAULT; throws std::invalid_argument for a value it cannot use. Fires at once without @N.
inline void arm() {
  const char* env = std::getenv("XFERLAB_PROBE_FAULT");
  if (!env || !*env) return;
  const std::string text = env;
  Plan& p = plan();
  std::string spec = text;
  auto at = spec.find('@');
  if (at != std::string::npos) {
    const std::string count = spec.substr(at + 1);
    char* end = nullptr;
    p.after = std::strtoll(count.c_str(), &end, 10);
    if (count.empty() || *end || p.after < 1) bad(text, "has a bad @N");
    spec = spec.substr(0, at);
  }
  if (spec == "crash=SIGSEGV" || spec == "crash=SIGBUS" || spec == "crash=abort") {
    p.kind = "crash";
    p.name = spec == "crash=SIGSEGV" ? "SIGSEGV" : spec == "crash=SIGBUS" ? "SIGBUS" : "SIGABRT (abort)";
    p.signal_number = spec == "crash=SIGSEGV" ? SIGSEGV : spec == "crash=SIGBUS" ? SIGBUS : SIGABRT;
  } else if (spec == "hang" || spec == "garbage") {
    p.kind = spec;
  } else if (spec.rfind("exit=", 0) == 0) {
    const std::string code = spec.substr(5);
    char* end = nullptr;
    long value = std::strtol(code.c_str(), &end, 10);
    if (code.empty() || *end || value < 0 || value > 255) bad(text, "has a bad exit code");
    p.kind = "exit";
    p.exit_code = static_cast<int>(value);
  } else {
    bad(text, "is not a fault");
  }
  if (p.after == 0) fire();
}

// Counts one sample record (or, on a process that prints none, such as an MPI rank other than 0,
// one finished point) and fires after the N-th.
inline void count_sample() {
  Plan& p = plan();
  if (p.kind.empty() || p.done || p.after == 0) return;
  if (++p.samples == p.after) fire();
}

// Called by JsonLine::emit after each line: counts sample records and fires after the N-th.
inline void after_line(const std::string& line) {
  if (line.find("\"record\":\"sample") == std::string::npos) return;
  count_sample();
}

}  // namespace fault
}  // namespace xferlab
