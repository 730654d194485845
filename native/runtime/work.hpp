// A request's compute weight (issue 29, the emulated device's compute speed): `rounds` rounds of
// SPECK-64's round function (Beaulieu et al., "The SIMON and SPECK Families of Lightweight Block
// Ciphers", ePrint 2013/404) on a value, a dependent chain the compiler cannot drop or shorten. The
// host's plain computation of a workload spends Options::work rounds on every operation; the emulated
// device spends work / device_speed rounds on every request (emulated_backend.cpp), so the device
// computes a request device_speed times faster than the host, in real work, on top of its interpreter.
#pragma once

#include <cstdint>

namespace xferlab::runtime {

inline uint64_t spend(uint64_t value, uint32_t rounds) {
  uint32_t x = static_cast<uint32_t>(value >> 32), y = static_cast<uint32_t>(value);
  for (uint32_t i = 0; i < rounds; i++) {
    x = ((x >> 8) | (x << 24)) + y;
    x ^= i;
    y = ((y << 3) | (y >> 29)) ^ x;
  }
  const uint64_t out = (static_cast<uint64_t>(x) << 32) | y;
  asm volatile("" : : "r"(out));  // the chain's result is used: it is computed, every round
  return out;
}

// The value itself, after the work: what a host machine's operation returns (workloads_common.hpp).
template <class V>
V weighed(V value, uint32_t rounds) {
  if (rounds) spend(static_cast<uint64_t>(value), rounds);
  return value;
}

}  // namespace xferlab::runtime
