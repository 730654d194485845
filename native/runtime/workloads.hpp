// The offload runtime's workloads (issue 7): the seed's two case studies, done op by op on runtime
// handles (seed 002, Chen, Zhang and Austin, "Zipper: Latency-Tolerant Optimizations for
// High-Performance Buses": NAS Parallel Benchmarks on a posit kernel, VIP-Bench on an encryption
// enclave).
//
//   cg      posit32  NPB CG's inner loop (Bailey et al., "The NAS Parallel Benchmarks", RNR-94-007, 1994)
//   mg      posit32  NPB MG: 4 multigrid V-cycles on a periodic 3-D grid (RNR-94-007; NPB 3.4 mg.f90)
//   bubble  enc64    VIP-Bench bubble-sort, data-oblivious (Biernacki et al., IEEE SEED 2021)
//   gcd     enc64    VIP-Bench gcd-list: gcd of a list, by subtraction Euclid with a fixed step bound
//   kadane  enc64    VIP-Bench kadane: maximum subarray sum and where it ends
//
// Each workload runs once through the runtime (timed from the first request to the last value read)
// and once as the plain host computation (the same arithmetic with p32_* or int64), and checks that
// the two agree; see workloads_posit.cpp, workloads_posit_mg.cpp and workloads_enc.cpp for what each
// one reads and checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime.hpp"

namespace xferlab::runtime {

struct WorkloadResult {
  std::string name;
  std::string opset;        // "posit32" or "enc64"
  bool ok = false;          // the offloaded result equals the host's, and the independent checks hold
  std::string detail;       // one line: what was checked, and what differed if anything
  uint64_t size = 0;        // CG rows, MG's grid side, or array length
  double seconds = 0;       // wall time of the offloaded run (steady clock, first request to last read)
  double host_seconds = 0;  // the plain host computation (p32_* or int64 directly on the host)
};

std::vector<std::string> workload_names();
// "posit32" or "enc64"; throws std::invalid_argument for an unknown name.
const char* workload_opset(const std::string& name);
// The size used when run_workload gets 0: about ten thousand requests or fewer, which is about
// 0.01-0.05 s in sync mode on an emulated bus of 1 us (see workloads.cpp's table).
uint64_t default_size(const std::string& name);
// The size run_workload will use (0: the default); std::invalid_argument naming the allowed sizes if none.
uint64_t check_size(const std::string& name, uint64_t size);
// Run one workload on `rt` with inputs made from `seed`; size 0 means default_size(name). Throws
// std::invalid_argument for an unknown name or a size out of the workload's range.
WorkloadResult run_workload(Runtime& rt, const std::string& name, uint64_t size, uint64_t seed);

}  // namespace xferlab::runtime
