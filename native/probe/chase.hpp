// The dependent pointer chase that `latency` (latency.cpp) and `loaded` (loaded.cpp) time: the cache
// lines of a working set linked into one random cycle (Sattolo's algorithm), so that every load depends
// on the one before and no prefetcher can guess the next line.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "args.hpp"
#include "clock.hpp"
#include "persist.hpp"
#include "region.hpp"

namespace xferlab {

struct alignas(kLine) Line {
  Line* next;
  char pad[kLine - sizeof(Line*)];
};

// Links the first `count` lines of `lines` into one random cycle.
inline Line* build_cycle(Line* lines, size_t count, std::mt19937_64& rng) {
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
inline double timed_chase(Line*& start, double min_time, uint64_t& steps_out) {
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

inline std::unique_ptr<Region> chase_region(size_t bytes, int node, const std::string& hugepages) {
  RegionOptions options;
  options.bytes = bytes;
  options.node = node;
  options.hugepages = hugepages;
  auto region = Region::map(options);
  if (!region->binding().empty())
    throw BadArgument("memory node " + std::to_string(node) + " cannot hold the chase: " + region->binding());
  return region;
}

}  // namespace xferlab
