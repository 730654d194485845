// `xferlab-probe network`'s non-blocking collectives with OSU's method (osu_iallreduce, osu_ialltoall,
// osu_ibcast, osu_iallgather, osu_ireduce, osu_igather, osu_iscatter, osu_ibarrier of the OSU
// Micro-Benchmarks 7, "Overall = Init + Compute + MPI_Wait"):
//   1. pure communication: each call started and waited for at once (a barrier between calls);
//   2. the same call with a compute phase between its start and its wait, the compute sized on each
//      rank to that rank's mean pure time (OSU's dummy compute; no MPI_Test calls inside it).
// Every rank's samples reach rank 0: per iteration the overall time of phase 2 (`seconds`), its
// compute time (`compute_seconds`) and phase 1's time of the same iteration (`pure_seconds`);
// the overlap, OSU's max(0, 100 * (1 - (overall - compute) / pure)) of the means, is computed from
// them in measure/network_results.py. Each phase's results are checked as the blocking tests'.
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "network_coll.hpp"

namespace xferlab::net {

namespace {

// The compute: real work, passes over a float buffer held in L1, each pass's sum carried into the
// next (a dependent chain the compiler can neither drop nor reorder), the number of passes calibrated
// on this rank before timing to last `target` seconds.
class Compute {
 public:
  explicit Compute(double target) : data_(256) {
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = 1.0f + static_cast<float>(i % 7) * 0.125f;
    long long n = 1;
    double per_pass = 0;
    for (;;) {  // double the passes until one run takes 2 ms, then the best of three runs of that many
      const double t = timed(n);
      if (t >= 2e-3 || n >= (1LL << 40)) {
        per_pass = std::min({t, timed(n), timed(n)}) / static_cast<double>(n);
        break;
      }
      n *= 2;
    }
    passes_ = target > 0 ? std::max(1LL, std::llround(target / per_pass)) : 0;
  }
  void run() { passes(passes_); }
  // The carried sum: used (the run fails if it is not finite), so the work must be done.
  float result() const { return carry_; }

 private:
  double timed(long long n) {
    const auto t0 = Clock::now();
    passes(n);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }
  void passes(long long n) {
    float carry = carry_;
    for (long long p = 0; p < n; ++p) {
      float sum = carry * 1e-3f;
      for (float v : data_) sum += v;
      carry = sum;
    }
    carry_ = carry;
  }
  std::vector<float> data_;
  long long passes_ = 0;
  float carry_ = 0;
};

double seconds_since(Clock::time_point t0, Clock::time_point t1) { return std::chrono::duration<double>(t1 - t0).count(); }

}  // namespace

void Runner::run_nbc(const std::string& test, long long size) {
  const int warm = iterations_for(o_, test, size, true), iters = iterations_for(o_, test, size, false);
  Collective c(o_, w_, backend_, path_, operation_of(test), size);
  std::vector<double> pure, overall, compute;
  pure.reserve(static_cast<size_t>(iters));
  M::Request request = M::REQUEST_NULL;
  auto wait = [&] { ok(g->Wait(&request, M::STATUS_IGNORE), "MPI_Wait"); };
  // 1. Pure communication: start, wait.
  ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
  for (int i = 0; i < warm + iters; ++i) {
    const auto t0 = Clock::now();
    c.start(&request);
    wait();
    c.finish();
    const auto t1 = Clock::now();
    if (i >= warm) pure.push_back(seconds_since(t0, t1));
    ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
  }
  long long wrong = c.check(o_.corrupt);
  // 2. The compute sized to this rank's mean pure time, then start, compute, wait.
  double mean = 0;
  for (double s : pure) mean += s;
  Compute work(mean / static_cast<double>(std::max(iters, 1)));
  c.reset();
  ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
  for (int i = 0; i < warm + iters; ++i) {
    const auto t0 = Clock::now();
    c.start(&request);
    const auto c0 = Clock::now();
    work.run();
    const auto c1 = Clock::now();
    wait();
    c.finish();
    const auto t1 = Clock::now();
    if (i >= warm) {
      overall.push_back(seconds_since(t0, t1));
      compute.push_back(seconds_since(c0, c1));
    }
    ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
  }
  if (!std::isfinite(work.result())) throw std::runtime_error("the compute phase's sum is not finite");
  if (wrong < 0) wrong = c.check(o_.corrupt);
  report_collective(test, size, overall, iters, warm, wrong, {{"compute_seconds", compute}, {"pure_seconds", pure}});
}

}  // namespace xferlab::net
