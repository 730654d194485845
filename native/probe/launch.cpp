// `xferlab-probe launch`: empty-kernel launch latency over the Backend interface (backend.hpp), with
// 0..8 buffer arguments, on the CPU the process is pinned to (--pin) or placed on (--cpus); each
// launch's host time (submit + wait, the steady clock) and, where the device reports them, its own
// timestamps; the CPUs of the runtime's other threads recorded beside. How often it repeats: exactly
// --count launches, or with --precision until the median's 95 % interval is that narrow (precision.hpp).
#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "args.hpp"
#include "backend.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "precision.hpp"
#include "probe.hpp"
#include "programs.hpp"

namespace xferlab {

namespace {

// The CPUs the process's other threads (the runtime's) may run on, as a JSON array: their union;
// `threads` counts those threads.
std::string other_threads_cpus(int& threads) {
  threads = 0;
  cpu_set_t all;
  CPU_ZERO(&all);
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      cpu_set_t set;
      if (tid <= 0 || tid == self || sched_getaffinity(tid, sizeof set, &set) != 0) continue;
      CPU_OR(&all, &all, &set);
      ++threads;
    }
    closedir(dir);
  }
  std::string out = "[";
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) out += (out.size() > 1 ? "," : "") + std::to_string(c);
  return out + "]";
}

}  // namespace

int run_launch(Args& args) {
  int device = 0;
  auto backend = open_backend(args, device);
  const long long count = args.integer("count", 10000, 1, 100000000);
  const int warmup = static_cast<int>(args.integer("warmup", 100, 0, 1000000));
  const auto arg_counts = args.integers("args", "0", 0, 8);
  const int pin = static_cast<int>(args.integer("pin", -1, 0, 65535));
  const std::vector<int> cpus = args.given("cpus") ? parse_cpu_list(args.text("cpus", ""), "--cpus") : std::vector<int>{};
  if (pin >= 0 && !cpus.empty()) throw BadArgument("--pin and --cpus: give one (--pin CPU pins to one CPU, --cpus LIST places on a set)");
  const int chunk = static_cast<int>(args.integer("chunk", 1000, 1, 1000000));
  // Fixed: exactly --count launches. With --precision: at least --min-count, at most --count.
  precision::Policy policy;
  policy.min_iterations = count;
  policy.max_iterations = count;
  precision::read_options(args, policy);
  const long long min_count = args.integer("min-count", std::min(count, 100LL), 1, 100000000);
  if (policy.adaptive()) policy.min_iterations = std::min(min_count, count);
  read_program_option(args);
  args.finish();
  if (pin >= 0) check_cpus({pin});
  if (!cpus.empty()) check_cpus(cpus);
  backend->open(device);
  backend->load_kernels();  // its build is no part of any timed launch
  std::vector<std::unique_ptr<Memory>> buffers;
  for (int i = 0; i < 8; ++i) buffers.push_back(backend->allocate_device(4096));
  // Only the submitting thread is pinned, and only once the runtime's own threads exist (PoCL starts
  // one worker per CPU when the platform is first used; a runtime may start more at the first launch,
  // hence one untimed launch first): threads inherit the affinity of the thread that creates them,
  // so pinning before open() confined the whole device to the submitting thread's CPU.
  if (pin >= 0 || !cpus.empty()) {
    backend->launch_empty({});
    if (pin >= 0) pin_to_cpu(pin);
    else if (!place_on_cpus(cpus)) throw std::runtime_error("could not place the host thread on --cpus");
  }
  int threads = 0;
  const std::string threads_cpus = other_threads_cpus(threads);
  JsonLine()
      .str("probe", "launch")
      .str("record", "setup")
      .str("backend", backend->name())
      .raw("device", backend->describe(device))
      .integer("pinned_cpu", pin >= 0 ? sched_getcpu() : -1)
      .str("host_cpus", cpus.empty() ? "" : cpu_list_text(allowed_cpus()))
      .integer("other_threads", threads)
      .raw("other_threads_cpus", threads_cpus)
      .integer("warmup", warmup)
      .number("precision", policy.adaptive() ? policy.precision : NAN)
      .number("max_time_seconds", policy.max_time)
      .str("clock", "std::chrono::steady_clock around set-arguments + submit + wait; device: profiling events")
      .emit();
  for (long long nargs : arg_counts) {
    std::vector<const Memory*> kernel_args;
    for (int i = 0; i < nargs; ++i) kernel_args.push_back(buffers[i].get());
    for (int w = 0; w < warmup; ++w) backend->launch_empty(kernel_args);
    std::vector<double> host, dev;
    auto flush = [&](long long first) {
      std::string h = "[", d = "[";
      char buf[40];
      for (size_t i = 0; i < host.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.17g", i ? "," : "", host[i]);
        h += buf;
        std::snprintf(buf, sizeof buf, "%s%.17g", i ? "," : "", dev[i]);
        d += buf;
      }
      JsonLine()
          .str("probe", "launch")
          .str("record", "samples")
          .integer("args", nargs)
          .integer("first_iteration", first)
          .raw("host_seconds", h + "]")
          .raw("device_seconds", d + "]")
          .emit();
      host.clear();
      dev.clear();
    };
    long long first = 0;
    precision::Repeat repeat(policy);
    for (long long i = 0;; ++i) {
      Timing t = backend->launch_empty(kernel_args);
      host.push_back(t.host_seconds);
      dev.push_back(t.device_seconds);
      const bool again = repeat.more(t.host_seconds);
      if (static_cast<int>(host.size()) == chunk) {
        flush(first);
        first = i + 1;
      }
      if (!again) break;
    }
    if (!host.empty()) flush(first);
    JsonLine point;
    point.str("probe", "launch").str("record", "point").integer("args", nargs)
        .integer("pinned_cpu", pin >= 0 ? sched_getcpu() : -1);
    repeat.describe(point).emit();
  }
  return 0;
}

}  // namespace xferlab
