// Counting a window of request records as the bus sees them (BusCounters, runtime.hpp): one function for
// both backends, reading only the records (what crossed), never the runtime's bookkeeping. Include it
// after ops/interp.h (the record layout).
#pragma once

#include <cstdint>

#include "runtime.hpp"

#ifndef XF_INTERP_H
#error "bus_count.hpp reads the record layout of ops/interp.h: include that first"
#endif

namespace xferlab::runtime {

inline uint64_t bus_lines(uint64_t bytes) { return (bytes + 63) / 64; }

// One write of n records (n x XF_WORDS words) and the doorbell that starts them.
inline void count_window(BusCounters& c, const uint64_t* words, uint32_t n) {
  c.doorbells++;
  c.records += n;
  c.lines_received += bus_lines(uint64_t(n) * XF_WORDS * 8);
  for (uint32_t i = 0; i < n; i++) {
    const uint64_t head = words[uint64_t(i) * XF_WORDS];
    for (int k = 0; k < 3; k++) c.forwarded += ((head >> (16 + 2 * k)) & 3u) == XF_SLOT;
    c.kept += (head & XF_WANT) == 0;
  }
}

// One read asked of the device and its answer of `bytes`, carrying `values` 8-byte results; `status`: a
// read of the status word (no result in it).
inline void count_read(BusCounters& c, uint64_t bytes, uint64_t values, bool status = false) {
  c.read_requests++;
  c.lines_sent += bus_lines(bytes);
  c.values_sent += values;
  c.status_reads += status;
}

}  // namespace xferlab::runtime
