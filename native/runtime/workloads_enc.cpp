// The enc64 workloads (issue 7; list and sources in workloads.hpp): VIP-Bench kernels on encrypted
// handles, and the same kernels on plain int64 (wrapping like enc64). The host reads only their final
// answers (never a comparison: they are data-oblivious).
#include "workloads_common.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace xferlab::runtime {
namespace workloads_detail {
namespace {

// A 64-bit word as int64, two's complement (written out as enc64.h does: C++17 leaves the plain
// conversion implementation-defined above INT64_MAX).
int64_t wrap(uint64_t u) { return (u >> 63) ? -(int64_t)(~u) - 1 : (int64_t)u; }

struct EncDevice {
  using V = Enc;
  Runtime& rt;
  V constant(int64_t v) const { return Enc::encrypt(rt, v); }
  V add(const V& a, const V& b) const { return a + b; }
  V sub(const V& a, const V& b) const { return a - b; }
  V less(const V& a, const V& b) const { return a.lt(b); }
  V pick(const V& c, const V& a, const V& b) const { return select(c, a, b); }
  V larger(const V& a, const V& b) const { return max(a, b); }
  // Every decryption is issued before the first is read, as a futures API allows (Enc::decrypt
  // would wait for each in turn).
  std::vector<int64_t> reveal(const std::vector<V>& values) const {
    std::vector<CellRef> plain;
    for (const V& v : values) plain.push_back(rt.submit(XF_OP_E_DECRYPT, Operand(v.cell())));
    std::vector<int64_t> out;
    for (const CellRef& c : plain) out.push_back(wrap(rt.read(c)));
    return out;
  }
};

struct EncHost {
  using V = int64_t;
  uint32_t work = 0;  // rounds of work (work.hpp) on every operation: Options::work
  V constant(int64_t v) const { return v; }
  V add(V a, V b) const { return weighed(wrap((uint64_t)a + (uint64_t)b), work); }
  V sub(V a, V b) const { return weighed(wrap((uint64_t)a - (uint64_t)b), work); }
  V less(V a, V b) const { return weighed<V>(a < b ? 1 : 0, work); }
  V pick(V c, V a, V b) const { return weighed(c != 0 ? a : b, work); }
  V larger(V a, V b) const { return weighed(a < b ? b : a, work); }
  std::vector<int64_t> reveal(const std::vector<V>& values) const {  // one decryption a value on the device
    for (V v : values) weighed(v, work);
    return values;
  }
};

// VIP-Bench bubble-sort in its data-oblivious mode: size - 1 passes over every adjacent pair (no early
// exit, no shrinking), each compared with lt and swapped with two selects: 3 (n-1)^2 requests.
template <class M>
std::vector<int64_t> bubble_sort(const M& m, std::vector<typename M::V> d) {
  for (size_t pass = 0; pass + 1 < d.size(); pass++) {
    for (size_t j = 0; j + 1 < d.size(); j++) {
      auto swap = m.less(d[j + 1], d[j]);
      auto low = m.pick(swap, d[j + 1], d[j]);
      auto high = m.pick(swap, d[j], d[j + 1]);
      d[j] = low;
      d[j + 1] = high;
    }
  }
  return m.reveal(d);
}

// VIP-Bench gcd-list: the gcd of a list, folded pair by pair. VIP-Bench divides; enc64 has no division,
// so each pair runs Euclid by subtraction (docs/enc64.md): the larger of a, b becomes the difference.
// For 0 < a, b <= vmax, max(a, b) - 1 <= vmax - 1 steps make both equal to the gcd, and further steps
// change nothing, so every pair takes the public bound vmax - 1 steps: 6 requests a step.
const int64_t kGcdMax = 64;

template <class M>
std::vector<int64_t> gcd_list(const M& m, const std::vector<typename M::V>& v) {
  auto a = v[0];  // the gcd so far
  for (size_t i = 1; i < v.size(); i++) {
    auto b = v[i];
    for (int64_t step = 0; step < kGcdMax - 1; step++) {
      auto a_larger = m.less(b, a);
      auto b_larger = m.less(a, b);
      auto a_next = m.pick(a_larger, m.sub(a, b), a);
      auto b_next = m.pick(b_larger, m.sub(b, a), b);
      a = a_next;
      b = b_next;
    }
  }
  return m.reveal({a});
}

// VIP-Bench kadane in its data-oblivious mode: the largest sum of a contiguous subarray (0 for the
// empty one) and the index where it ends (-1 if empty): here = max(here + a_i, 0); if best < here,
// best = here and ends = i, with the condition as an encrypted 0/1 and two selects: 5 requests an element.
template <class M>
std::vector<int64_t> kadane(const M& m, const std::vector<typename M::V>& v) {
  const auto zero = m.constant(0);
  auto here = zero, best = zero, ends = m.constant(-1);
  for (size_t i = 0; i < v.size(); i++) {
    here = m.larger(m.add(here, v[i]), zero);
    auto better = m.less(best, here);
    ends = m.pick(better, m.constant((int64_t)i), ends);
    best = m.pick(better, here, best);
  }
  return m.reveal({best, ends});
}

std::vector<int64_t> vip_inputs(const std::string& name, uint64_t n, uint64_t seed) {
  Randlc rng(seed);
  std::vector<int64_t> v;
  if (name == "gcd") {
    // A common factor, so that the answer is not almost always 1.
    int64_t factor = rng.between(1, 8);
    for (uint64_t i = 0; i < n; i++) v.push_back(factor * rng.between(1, kGcdMax / factor));
  } else if (name == "kadane") {
    for (uint64_t i = 0; i < n; i++) v.push_back(rng.between(-30000, 30000));  // VIP-Bench's range
  } else {
    for (uint64_t i = 0; i < n; i++) v.push_back(rng.between(-2147483648LL, 2147483647LL));
  }
  return v;
}

template <class M>
std::vector<int64_t> vip_kernel(const std::string& name, const M& m, const std::vector<typename M::V>& v) {
  if (name == "bubble") return bubble_sort(m, v);
  if (name == "gcd") return gcd_list(m, v);
  return kadane(m, v);
}

// The answer computed another way, sharing no code with the kernels.
std::vector<int64_t> vip_check(const std::string& name, std::vector<int64_t> v) {
  if (name == "bubble") {
    std::sort(v.begin(), v.end());
    return v;
  }
  if (name == "gcd") {
    int64_t g = 0;
    for (int64_t x : v) g = std::gcd(g, x);
    return {g};
  }
  // Kadane from prefix sums: the best subarray ending at e is P[e+1] - min_{s <= e+1} P[s] (0 when
  // empty); the end is the first e reaching the best, or -1 if the best is 0.
  int64_t prefix = 0, low = 0, best = 0, ends = -1;
  for (size_t e = 0; e < v.size(); e++) {
    prefix += v[e];
    if (prefix - low > best) {
      best = prefix - low;
      ends = (int64_t)e;
    }
    low = std::min(low, prefix);
  }
  return {best, ends};
}

std::string join(const std::vector<int64_t>& v, size_t most = 4) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < most; i++) s += (i ? " " : "") + std::to_string(v[i]);
  return s + (v.size() > most ? " ..." : "");
}

}  // namespace

WorkloadResult run_vip(Runtime& rt, const std::string& name, uint64_t n, uint64_t seed) {
  WorkloadResult res;
  const std::vector<int64_t> plain = vip_inputs(name, n, seed);
  std::vector<Enc> cipher;  // the data owner encrypts before the run (not timed, as in VIP-Bench)
  for (int64_t x : plain) cipher.push_back(Enc::encrypt(rt, x));
  const auto [dev, host] = timed_pair(res, [&] { return vip_kernel(name, EncDevice{rt}, cipher); },
                                      [&] { return vip_kernel(name, EncHost{rt.options().work}, plain); });
  const std::vector<int64_t> check = vip_check(name, plain);
  res.ok = dev == host && host == check;
  res.detail = "decrypted " + join(dev) + (dev == host ? "; equals" : "; DIFFERS from") + " the int64 run" +
               (host == check ? "; equals" : "; DIFFERS from") + " the independent check (" +
               (name == "bubble" ? "std::sort"
                : name == "gcd"  ? "std::gcd"
                                 : "prefix sums") +
               ")";
  return res;
}

}  // namespace workloads_detail
}  // namespace xferlab::runtime
