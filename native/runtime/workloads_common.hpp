// What the workload files share (workloads.cpp: the table and these helpers; workloads_posit.cpp: cg;
// workloads_posit_mg.cpp: mg; workloads_enc.cpp: the VIP kernels). Not part of the API: that is
// workloads.hpp. The op headers come in interp.h's order (xf_exec calls the sets' functions).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "workloads.hpp"
#include "xf_portable.h"
#include "posit32.h"
#include "enc64.h"
#include "interp.h"
#include "work.hpp"

namespace xferlab::runtime {
namespace workloads_detail {

// Seconds since t0 on the steady clock (the workloads' timer).
double since(std::chrono::steady_clock::time_point t0);

// Every workload's timed pair: device() (the run offloaded on the runtime), then host() (the same
// on the host), each timed into res.seconds and res.host_seconds; returns both results.
template <class Device, class Host>
auto timed_pair(WorkloadResult& res, Device device, Host host) {
  auto t0 = std::chrono::steady_clock::now();
  auto on_device = device();
  res.seconds = since(t0);
  t0 = std::chrono::steady_clock::now();
  auto on_host = host();
  res.host_seconds = since(t0);
  return std::make_pair(std::move(on_device), std::move(on_host));
}

// printf into a string, for the one-line details (up to four numbers).
std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0);

// NPB's random number generator randlc (Bailey et al., RNR-94-007, and the NPB sources):
// x_{k+1} = 5^13 x_k mod 2^46, returned as x_{k+1} / 2^46 in (0, 1). NPB starts at x_0 = 314159265
// (CG's makea, MG's zran3); seed s starts at 314159265 + 2s (odd, so the sequence never reaches 0),
// so seed 0 is NPB's own sequence.
class Randlc {
 public:
  explicit Randlc(uint64_t seed);
  double next();
  int64_t between(int64_t lo, int64_t hi);  // lo + floor(next() * (hi - lo + 1))

 private:
  uint64_t x_;
};

// One workload: run it offloaded on rt and on the host, check it; name, opset and size are filled in
// by run_workload. `size` is already within the table's range.
WorkloadResult run_cg(Runtime& rt, const std::string& name, uint64_t size, uint64_t seed);
WorkloadResult run_mg(Runtime& rt, const std::string& name, uint64_t size, uint64_t seed);
WorkloadResult run_vip(Runtime& rt, const std::string& name, uint64_t size, uint64_t seed);

// ---------------------------------------------------------------------------------------------------
// The posit32 machines of the posit workloads (workloads_posit.cpp, workloads_posit_mg.cpp): the
// device machine issues requests through Posit handles, the host machine computes the same with p32_*.
// Method names differ from the handles' friend functions (fma, sqrt) so that the calls find those by
// argument-dependent lookup. `number` rounds a double to a posit; Out is what `read` gives the host.

struct PositDevice {
  using V = Posit;
  using Out = uint32_t;
  Runtime& rt;
  V constant(uint32_t bits) const { return Posit::from_bits(rt, bits); }
  V number(double x) const { return Posit(rt, x); }
  V add(const V& a, const V& b) const { return a + b; }
  V mul(const V& a, const V& b) const { return a * b; }
  V sub(const V& a, const V& b) const { return a - b; }
  V divide(const V& a, const V& b) const { return a / b; }
  V negate(const V& a) const { return -a; }
  V fmadd(const V& a, const V& b, const V& c) const { return fma(a, b, c); }
  V root(const V& a) const { return sqrt(a); }
  uint32_t read(const V& a) const { return a.bits(); }
};

struct PositHost {
  using V = uint32_t;
  using Out = uint32_t;
  uint32_t work = 0;  // rounds of work (work.hpp) on every operation: Options::work
  V constant(uint32_t bits) const { return bits; }
  V number(double x) const { return p32_from_f64(x); }
  V add(V a, V b) const { return weighed(p32_add(a, b), work); }
  V mul(V a, V b) const { return weighed(p32_mul(a, b), work); }
  V sub(V a, V b) const { return weighed(p32_sub(a, b), work); }
  V divide(V a, V b) const { return weighed(p32_div(a, b), work); }
  V negate(V a) const { return weighed(p32_neg(a), work); }
  V fmadd(V a, V b, V c) const { return weighed(p32_fma(a, b, c), work); }
  V root(V a) const { return weighed(p32_sqrt(a), work); }
  uint32_t read(V a) const { return a; }
};

}  // namespace workloads_detail
}  // namespace xferlab::runtime
