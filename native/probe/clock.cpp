// `xferlab-probe clock`: what the host steady clock can resolve.
//
// Three figures, because they differ on real machines:
//  - reported_resolution_seconds: clock_getres(CLOCK_MONOTONIC), what the kernel claims;
//  - observed_tick_seconds: the smallest non-zero difference between consecutive reads;
//  - call_overhead_seconds: the median cost of one read, from back-to-back reads in batches.
// Every timing loop of the probe uses std::chrono::steady_clock (CLOCK_MONOTONIC on Linux).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <vector>

#include "json.hpp"
#include "probe.hpp"

namespace xferlab {

int run_clock(int samples) {
  using clock = std::chrono::steady_clock;
  timespec res{};
  clock_getres(CLOCK_MONOTONIC, &res);
  const double reported = static_cast<double>(res.tv_sec) + res.tv_nsec * 1e-9;

  // Smallest non-zero step between consecutive reads.
  long long min_step = -1;
  auto prev = clock::now();
  for (int i = 0; i < samples; ++i) {
    auto now = clock::now();
    long long step = std::chrono::duration_cast<std::chrono::nanoseconds>(now - prev).count();
    if (step > 0 && (min_step < 0 || step < min_step)) min_step = step;
    prev = now;
  }

  // Cost of one read: batches of back-to-back reads, median over batches.
  constexpr int kBatch = 1000;
  const int batches = std::max(samples / kBatch, 11);
  std::vector<double> per_call;
  per_call.reserve(batches);
  volatile long long sink = 0;
  for (int b = 0; b < batches + 1; ++b) {
    auto start = clock::now();
    for (int i = 0; i < kBatch; ++i) sink = sink + clock::now().time_since_epoch().count();
    auto stop = clock::now();
    if (b == 0) continue;  // warm-up batch discarded
    per_call.push_back(std::chrono::duration<double>(stop - start).count() / kBatch);
  }
  std::nth_element(per_call.begin(), per_call.begin() + per_call.size() / 2, per_call.end());

  JsonLine()
      .str("probe", "clock")
      .str("clock", "std::chrono::steady_clock")
      .str("source", "CLOCK_MONOTONIC")
      .number("reported_resolution_seconds", reported)
      .number("observed_tick_seconds", min_step > 0 ? min_step * 1e-9 : -1.0)
      .number("call_overhead_seconds", per_call[per_call.size() / 2])
      .str("statistic", "median over batches of 1000 reads")
      .integer("samples", samples)
      .integer("batches", batches)
      .emit();
  return 0;
}

}  // namespace xferlab
