// `xferlab-probe latency` and `xferlab-probe loaded`: memory latency by dependent pointer chase.
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
// loaded: the same chase on the first CPU while the other threads stream over buffers of their
// own, reading (or writing) one cache line and then spinning `delay` iterations before the next.
// From a long delay (idle) down to none (saturation), each point reports the chase's latency and
// the bandwidth the traffic threads moved meanwhile: the bandwidth–latency curve of the memory
// (as the Mess benchmark does).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "args.hpp"
#include "clock.hpp"
#include "json.hpp"
#include "persist.hpp"
#include "placement.hpp"
#include "precision.hpp"
#include "probe.hpp"
#include "region.hpp"

namespace xferlab {

namespace {


struct alignas(kLine) Line {
  Line* next;
  char pad[kLine - sizeof(Line*)];
};

// Links the first `count` lines of `lines` into one random cycle.
Line* build_cycle(Line* lines, size_t count, std::mt19937_64& rng) {
  std::vector<uint32_t> order(count);
  std::iota(order.begin(), order.end(), 0u);
  for (size_t i = count - 1; i > 0; --i) {  // Sattolo: a single cycle through every element
    std::uniform_int_distribution<size_t> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  for (size_t i = 0; i < count; ++i) lines[order[i]].next = &lines[order[(i + 1) % count]];
  return &lines[order[0]];
}

inline Line* chase(Line* p, uint64_t steps) {
  for (uint64_t i = 0; i < steps; ++i) p = p->next;
  return p;
}

// Chases from `start` for at least `min_time` seconds; returns seconds per load. The search for a
// step count starts at `steps_out` when given (the count a repeat of the same size found before),
// so the repeats after the first do not search again.
double timed_chase(Line*& start, double min_time, uint64_t& steps_out) {
  uint64_t steps = steps_out ? steps_out : 1 << 14;
  for (;;) {
    auto t0 = Clock::now();
    start = chase(start, steps);
    double seconds = since(t0);
    if (seconds >= min_time || steps >= (1ull << 40)) {
      steps_out = steps;
      return seconds / static_cast<double>(steps);
    }
    steps *= 2;
  }
}

std::unique_ptr<Region> chase_region(size_t bytes, int node, const std::string& hugepages) {
  RegionOptions options;
  options.bytes = bytes;
  options.node = node;
  options.hugepages = hugepages;
  auto region = Region::map(options);
  if (!region->binding().empty())
    throw BadArgument("memory node " + std::to_string(node) + " cannot hold the chase: " + region->binding());
  return region;
}

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

int run_loaded(Args& args) {
  const size_t llc = last_level_cache_bytes();
  const long long default_size = static_cast<long long>(std::max<size_t>(8 * llc, 128u << 20));
  const long long size = args.integer("size", default_size, 1 << 20, 1ll << 40);
  const auto cpus = args.given("cpus") ? parse_cpu_list(args.text("cpus", ""), "--cpus") : allowed_cpus();
  const int node = static_cast<int>(args.integer("node", -1, 0, 1023));
  const auto delays = args.integers("delays", "4096,1024,256,64,16,4,0", 0, 1ll << 30);
  const std::string traffic = args.words("traffic", "read", {"read", "write"})[0];
  const bool reading = traffic == "read";
  const double min_time = args.real("min-time", 0.1, 1e-3, 60.0);
  const std::string hugepages = args.words("hugepages", "thp", {"none", "thp", "hugetlb"})[0];
  args.finish();
  if (args.given("cpus")) check_cpus(cpus);
  if (node >= 0) check_node(node);
  if (cpus.size() < 2) throw BadArgument("loaded latency needs at least two CPUs: one chases, the others load");

  const int loaders = static_cast<int>(cpus.size()) - 1;
  auto chase_mem = chase_region(static_cast<size_t>(size), node, hugepages);
  const size_t per_loader = static_cast<size_t>(size) / kLine * kLine;
  auto load_mem = chase_region(per_loader * loaders, node, hugepages);
  std::memset(load_mem->data(), 1, per_loader * loaders);
  std::mt19937_64 rng(777);
  auto* lines = reinterpret_cast<Line*>(chase_mem->data());
  const size_t count = static_cast<size_t>(size) / kLine;
  Line* p = build_cycle(lines, count, rng);

  JsonLine()
      .str("probe", "loaded")
      .str("record", "setup")
      .integer("node", node)
      .integer("chase_cpu", cpus[0])
      .integer("traffic_threads", loaders)
      .str("traffic", traffic)
      .integer("size_bytes", size)
      .str("hugepages", hugepages)
      .str("clock", "std::chrono::steady_clock")
      .emit();

  pin_to_cpu(cpus[0]);
  p = chase(p, count);  // warm-up
  for (auto delay : delays) {
    std::atomic<bool> stop{false}, go{false};
    std::atomic<int> ready{0};
    // Each loader has its own cache line for its counts (no false sharing, no shared sink).
    struct alignas(kLine) Slot {
      uint64_t moved = 0;
      uint64_t acc = 0;
    };
    std::vector<Slot> slots(loaders);
    std::vector<std::thread> workers;
    for (int w = 0; w < loaders; ++w) {
      workers.emplace_back([&, w] {
        pin_to_cpu(cpus[1 + w]);
        char* base = load_mem->data() + static_cast<size_t>(w) * per_loader;
        uint64_t lines_moved = 0, acc = 0;
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        // The traffic kind is chosen once, outside the loop over cache lines.
        while (!stop.load(std::memory_order_relaxed)) {
          if (reading) {
            for (size_t off = 0; off < per_loader && !stop.load(std::memory_order_relaxed); off += kLine) {
              acc += *reinterpret_cast<volatile uint64_t*>(base + off);
              ++lines_moved;
              for (long long d = 0; d < delay; ++d) asm volatile("" ::: "memory");
            }
          } else {
            for (size_t off = 0; off < per_loader && !stop.load(std::memory_order_relaxed); off += kLine) {
              *reinterpret_cast<volatile uint64_t*>(base + off) = lines_moved;
              ++lines_moved;
              for (long long d = 0; d < delay; ++d) asm volatile("" ::: "memory");
            }
          }
        }
        slots[w].moved = lines_moved * kLine;
        slots[w].acc = acc;
      });
    }
    while (ready.load() < loaders) std::this_thread::yield();
    auto t0 = Clock::now();
    go.store(true);
    uint64_t steps = 0;
    double per_load = timed_chase(p, min_time, steps);
    stop.store(true);
    for (auto& t : workers) t.join();
    double seconds = since(t0);
    double bytes = 0;
    uint64_t seen = 0;
    for (const Slot& s : slots) {
      bytes += static_cast<double>(s.moved);
      seen ^= s.acc;
    }
    g_sink = seen;  // written by this thread alone, after the loaders joined
    JsonLine()
        .str("probe", "loaded")
        .str("record", "sample")
        .integer("delay", delay)
        .number("latency_seconds", per_load)
        .integer("loads", static_cast<long long>(steps))
        .number("traffic_bandwidth_bytes_per_second", bytes / seconds)
        .number("seconds", seconds)
        .emit();
  }
  g_sink = reinterpret_cast<uintptr_t>(p);
  return 0;
}

}  // namespace xferlab
