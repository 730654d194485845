// `xferlab-probe latency`: memory latency by dependent pointer chase (chase.hpp).
//
// latency: for each working-set size, the cache lines of the set are linked into one random
// cycle (Sattolo's algorithm), so every load depends on the one before and no prefetcher can
// guess the next line. One pass over the cycle warms it up; then the chase runs for at least
// --min-time seconds (the step count doubles until it does), `--repeats` times, each timed with
// the steady clock; the figure is seconds per load. Working sets from the L1 cache to well past
// the last-level cache show each level as a step. With --precision a size repeats (at least
// --repeats, at most --max-repeats, within --max-time seconds of chasing) until the 95 % interval
// of its median latency is that narrow (precision.hpp); a "point" record says how it ended, with
// the point's set-up (building the cycle and the warm-up pass) and whole seconds.
//
// --budget SECONDS bounds the sweep: before each size after the first, its cost is estimated from
// the size before (set-up seconds per line, times the lines, doubled: a line can cost up to twice
// as much one size further, past a cache; plus that size's chase seconds), and a size that would end
// past the budget is not started: a "skipped" record names it, its estimate and the seconds left,
// and so for every size after it. The sweep so ends within its budget (give or take one point's
// misestimate), never killed from outside. --cold writes every line of the set back to memory and
// out of the caches (clflush) after building the cycle, so the warm-up pass, timed on its own
// ("warmup_seconds"), reads from memory: one small set then tells the memory's load-to-use latency
// without a set larger than the last-level cache (how `xferlab lab` calibrates its plan).
//
// loaded: the chase under traffic from the other CPUs, in loaded.cpp.
#include <cmath>
#include <cstdint>
#include <random>

#include "args.hpp"
#include "chase.hpp"
#include "clock.hpp"
#include "json.hpp"
#include "persist.hpp"
#include "placement.hpp"
#include "precision.hpp"
#include "probe.hpp"
#include "region.hpp"

namespace xferlab {

namespace {

volatile uintptr_t g_sink;

}  // namespace

int run_latency(Args& args) {
  const auto sizes = args.integers("sizes", "4096,16384,65536,262144,1048576,4194304,16777216,67108864", 128,
                                   1ll << 40);
  const int node = static_cast<int>(args.integer("node", -1, 0, 1023));
  const int cpu = static_cast<int>(args.integer("cpu", -1, 0, 65535));
  const double min_time = args.real("min-time", 0.02, 1e-4, 60.0);
  const int repeats = static_cast<int>(args.integer("repeats", 5, 1, 1000));
  const std::string hugepages = args.words("hugepages", "thp", {"none", "thp", "hugetlb"})[0];
  precision::Policy policy;
  policy.min_iterations = repeats;
  policy.max_iterations = repeats;
  precision::read_options(args, policy);
  const int max_repeats = static_cast<int>(args.integer("max-repeats", 1000, 1, 100000));
  if (policy.adaptive()) policy.max_iterations = std::max(repeats, max_repeats);
  const double budget = args.real("budget", 0.0, 0.0, 86400.0);  // 0: no bound
  const bool cold = args.flag("cold");
  args.finish();
  if (cold && best_flush() == Flush::none)
    throw BadArgument("--cold needs a cache-line flush instruction (clflush), which this CPU does not offer");
  if (node >= 0) check_node(node);
  if (cpu >= 0) {
    check_cpus({cpu});
    pin_to_cpu(cpu);
  }
  size_t largest = 0;
  for (auto s : sizes) largest = std::max(largest, static_cast<size_t>(s));
  auto region = chase_region(largest, node, hugepages);
  auto* lines = reinterpret_cast<Line*>(region->data());
  std::mt19937_64 rng(12345);

  JsonLine()
      .str("probe", "latency")
      .str("record", "setup")
      .integer("node", node)
      .integer("cpu", sched_getcpu())
      .str("hugepages", hugepages)
      .number("min_time_seconds", min_time)
      .integer("repeats", repeats)
      .number("precision", policy.adaptive() ? policy.precision : NAN)
      .number("max_time_seconds", policy.max_time)
      .number("budget_seconds", budget > 0 ? budget : NAN)
      .boolean("cold", cold)
      .raw("page_nodes", page_nodes_json(page_nodes(region->data(), largest)))
      .str("method", "dependent loads over a random cyclic permutation of 64-byte lines")
      .str("clock", "std::chrono::steady_clock")
      .emit();

  const auto sweep_start = Clock::now();
  double setup_per_line = 0.0, last_chase = 0.0;  // of the size before: the next one's estimate
  bool stopping = false;
  for (auto size : sizes) {
    size_t count = std::max<size_t>(2, static_cast<size_t>(size) / kLine);
    const double needed = 2.0 * setup_per_line * static_cast<double>(count) + last_chase;
    const double left = budget - since(sweep_start);
    if (budget > 0 && setup_per_line > 0 && (stopping || needed > left)) {
      stopping = true;  // the sizes are in the caller's order: none after a skipped one starts
      JsonLine()
          .str("probe", "latency")
          .str("record", "skipped")
          .integer("size_bytes", static_cast<long long>(count * kLine))
          .number("estimate_seconds", needed)
          .number("left_seconds", std::max(0.0, left))
          .str("reason", "its estimated time does not fit in what is left of --budget")
          .emit();
      continue;
    }
    const auto point_start = Clock::now();
    Line* p = build_cycle(lines, count, rng);
    if (cold) {
      write_back(lines, count * kLine, Flush::clflush);
      __atomic_thread_fence(__ATOMIC_SEQ_CST);  // the flushes done before the timed pass
    }
    const auto warm_start = Clock::now();
    p = chase(p, count);  // warm-up: one full pass
    const double warmup = since(warm_start), setup = since(point_start);
    precision::Repeat repeat(policy);
    uint64_t steps = 0;
    for (int r = 0;; ++r) {
      double per_load = timed_chase(p, min_time, steps);
      JsonLine()
          .str("probe", "latency")
          .str("record", "sample")
          .integer("size_bytes", static_cast<long long>(count * kLine))
          .integer("repeat", r)
          .number("latency_seconds", per_load)
          .integer("loads", static_cast<long long>(steps))
          .emit();
      // The interval is of the latency (seconds per load); the time limit counts the chase's seconds.
      if (!repeat.more(per_load, per_load * static_cast<double>(steps))) break;
    }
    const double seconds = since(point_start);
    setup_per_line = setup / static_cast<double>(count);
    last_chase = seconds - setup;
    JsonLine point;
    point.str("probe", "latency").str("record", "point").integer("size_bytes", static_cast<long long>(count * kLine));
    repeat.describe(point)
        .number("setup_seconds", setup)
        .number("warmup_seconds", warmup)
        .integer("lines", static_cast<long long>(count))
        .number("seconds", seconds)
        .emit();
    g_sink = reinterpret_cast<uintptr_t>(p);
  }
  return 0;
}

}  // namespace xferlab
