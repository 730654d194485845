// The offload runtime's workloads (issue 7): the table (names, operation sets, sizes) and what the
// workload files share; see workloads.hpp for the list and the sources. The kernels are in
// workloads_posit.cpp (cg), workloads_posit_mg.cpp (mg) and workloads_enc.cpp (bubble, gcd, kadane).
//
// Every kernel is written once, as a template over a "machine": the device machine issues requests
// through the runtime's handles (Posit, Enc), the host machine does the same arithmetic directly
// (p32_* from posit32.h, or plain int64). The offloaded run must give the host run's bits; each
// workload also checks its answer in a way that does not share the kernel's code, or against a
// published figure.
#include "workloads_common.hpp"

#include <cstdio>
#include <stdexcept>

namespace xferlab::runtime {
namespace workloads_detail {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string format(const char* fmt, double a, double b, double c, double d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

namespace {
constexpr uint64_t kRandlcMask = (uint64_t(1) << 46) - 1;
}

// The product is taken modulo 2^64 by unsigned arithmetic, whose low 46 bits are the product's
// modulo 2^46.
Randlc::Randlc(uint64_t seed) : x_(((314159265u + 2 * seed) & kRandlcMask) | 1u) {}

double Randlc::next() {
  x_ = (x_ * 1220703125u) & kRandlcMask;         // 5^13
  return (double)x_ * (1.0 / 70368744177664.0);  // 2^-46
}

int64_t Randlc::between(int64_t lo, int64_t hi) { return lo + (int64_t)(next() * (double)(hi - lo + 1)); }

}  // namespace workloads_detail

namespace {

// ---------------------------------------------------------------------------------------------------
// The table. Default sizes give ~5,000-12,000 requests each (counts in the comments, seed 1), about
// 0.01-0.05 s in sync mode on the emulated bus at 1 us one way; the bounds keep indices in 32 bits
// and runs finite.

using Run = WorkloadResult (*)(Runtime&, const std::string&, uint64_t, uint64_t);

struct Spec {
  const char* name;
  const char* opset;
  uint64_t default_size;
  uint64_t min_size;
  uint64_t max_size;
  Run run;
};

const Spec kSpecs[] = {
    {"cg", "posit32", 32, 3, 1u << 16, workloads_detail::run_cg},     // 32 rows: 7,953 requests (21 iterations)
    {"mg", "posit32", 4, 4, 32, workloads_detail::run_mg},            // 4^3 grid: 12,170 requests (4 V-cycles)
    {"bubble", "enc64", 48, 2, 1u << 12, workloads_detail::run_vip},  // 3 (n-1)^2 + n decrypts = 6,675 requests
    {"gcd", "enc64", 16, 2, 1u << 16, workloads_detail::run_vip},  // (n-1) x 63 steps x 6 + 1 decrypt = 5,671 requests
    {"kadane", "enc64", 1024, 1, 1u << 22, workloads_detail::run_vip},  // 5 n + 2 decrypts = 5,122 requests
};

const Spec& spec(const std::string& name) {
  for (const Spec& s : kSpecs)
    if (name == s.name) return s;
  std::string choices;
  for (const Spec& s : kSpecs) choices += std::string(choices.empty() ? "" : ", ") + s.name;
  throw std::invalid_argument("unknown workload '" + name + "' (choose from " + choices + ")");
}

}  // namespace

std::vector<std::string> workload_names() {
  std::vector<std::string> names;
  for (const Spec& s : kSpecs) names.push_back(s.name);
  return names;
}

const char* workload_opset(const std::string& name) { return spec(name).opset; }

uint64_t default_size(const std::string& name) { return spec(name).default_size; }

uint64_t check_size(const std::string& name, uint64_t size) {
  const Spec& s = spec(name);
  if (size == 0) size = s.default_size;
  if (size < s.min_size || size > s.max_size)
    throw std::invalid_argument("size " + std::to_string(size) + " for workload '" + name + "' is out of range (" +
                                std::to_string(s.min_size) + ".." + std::to_string(s.max_size) + ")");
  if (std::string(s.name) == "mg" && (size & (size - 1)))
    throw std::invalid_argument("size " + std::to_string(size) +
                                " for workload 'mg' is not a power of two (the grid's side: 4, 8, 16 or 32)");
  return size;
}

WorkloadResult run_workload(Runtime& rt, const std::string& name, uint64_t size, uint64_t seed) {
  const Spec& s = spec(name);
  size = check_size(name, size);
  WorkloadResult res = s.run(rt, name, size, seed);
  res.name = s.name;
  res.opset = s.opset;
  res.size = size;
  return res;
}

}  // namespace xferlab::runtime
