// `xferlab-probe collab --pattern histogram`: data partitioning in the manner of CHAI's HSTI (see
// collab.cpp for the method and the timing). N pseudo-random 32-bit values binned by their top byte
// into 256 bins; the device takes the first `device-share` of the input, T host threads the rest,
// all adding into the same histogram. Every work-group and every host thread counts into a private
// histogram (local memory / stack) and then adds it to the shared one with one atomic add per bin.
//   D: the device's part is copied to a device buffer, counted into a device-buffer histogram,
//      read back and added to the host threads' histogram.
//   U: input and the one histogram live in fine-grained SVM; kernel and host threads add atomically
//      to the same bins.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collab.hpp"

namespace xferlab::collab {

using namespace cl;


Histogram::Histogram(Options& opts, ClDevice& d) : o(opts), dev(d) {
  kd = dev.kernel("hist_d");
  ku = dev.kernel("hist_u");
  // The host-only reference, computed once, outside every timed region.
  std::vector<std::vector<uint64_t>> parts(o.host_threads, std::vector<uint64_t>(kBins, 0));
  parallel(o.host_threads, o.size, [&](int t, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) ++parts[t][value_at(i, o.seed) >> 24];
  });
  for (auto& p : parts)
    for (int b = 0; b < kBins; ++b) reference[b] += p[b];
}

size_t Histogram::device_values() const { return static_cast<size_t>(std::llround(o.size * o.share)); }
size_t Histogram::groups() const { return std::max<size_t>(1, dev.units * 4); }

// Host threads: count [lo, hi) privately, then add to `shared` with one atomic per bin.
void Histogram::count_host(const uint32_t* in, size_t lo, size_t hi, uint32_t* shared) {
  uint32_t mine[kBins] = {};
  for (size_t i = lo; i < hi; ++i) ++mine[in[i] >> 24];
  for (int b = 0; b < kBins; ++b)
    if (mine[b]) __atomic_fetch_add(&shared[b], mine[b], __ATOMIC_RELAXED);
}

void Histogram::fill_input(uint32_t* in) const {
  parallel(o.host_threads, o.size, [&](int, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) in[i] = value_at(i, o.seed);
  });
}

Outcome Histogram::run() {
  Outcome out;
  const size_t nd = device_values(), nh = o.size - nd;
  out.device_share = o.size ? static_cast<double>(nd) / o.size : 0.0;
  std::vector<uint32_t> final_hist(kBins, 0);
  auto t0 = Clock::now();
  if (o.version == "D") {
    // allocation: host input, host histogram, device input and device histogram buffers
    uint32_t* in = static_cast<uint32_t*>(std::aligned_alloc(4096, (o.size * 4 + 4095) / 4096 * 4096));
    if (!in) throw std::runtime_error("out of host memory for the input");
    std::unique_ptr<uint32_t, void (*)(void*)> guard(in, std::free);
    std::vector<uint32_t> host_hist(kBins, 0), dev_hist(kBins, 0);
    auto din = dev.buffer(nd * 4), dhist = dev.buffer(kBins * 4);  // released when this scope ends, however
    fill_input(in);
    out.allocation = since(t0);
    // copy in: the device's part of the input, and a zeroed histogram
    auto t1 = Clock::now();
    dev.write(din, in, nd * 4);
    dev.write(dhist, dev_hist.data(), kBins * 4);
    out.copy = since(t1);
    // compute: kernel and host threads together
    auto t2 = Clock::now();
    if (nd) {
      dev.arg(kd, 0, din);
      dev.arg(kd, 1, static_cast<cl_uint>(nd));
      dev.arg(kd, 2, dhist);
      dev.launch(kd, groups(), kLocal);
    }
    if (nh) parallel(o.host_threads, nh, [&](int, size_t lo, size_t hi) { count_host(in + nd, lo, hi, host_hist.data()); });
    dev.finish();
    out.kernel = since(t2);
    // copy out: the device's histogram, merged into the host's
    auto t3 = Clock::now();
    dev.read(dhist, dev_hist.data(), kBins * 4);
    for (int b = 0; b < kBins; ++b) final_hist[b] = host_hist[b] + dev_hist[b];
    out.copy += since(t3);
    out.total = since(t0);
    out.copied_bytes = nd * 4 + 2 * kBins * 4;
  } else {
    uint32_t* in = static_cast<uint32_t*>(dev.svm(o.size * 4, false));
    uint32_t* hist = nullptr;
    try {
      hist = static_cast<uint32_t*>(dev.svm(kBins * 4, true));
      std::memset(hist, 0, kBins * 4);
      fill_input(in);
      out.allocation = since(t0);
      auto t2 = Clock::now();
      if (nd) {
        dev.svm_arg(ku, 0, in);
        dev.arg(ku, 1, static_cast<cl_uint>(nd));
        dev.svm_arg(ku, 2, hist);
        dev.launch(ku, groups(), kLocal);
      }
      if (nh) parallel(o.host_threads, nh, [&](int, size_t lo, size_t hi) { count_host(in + nd, lo, hi, hist); });
      dev.finish();
      out.kernel = since(t2);
      out.total = since(t0);
      if (o.corrupt) hist[kBins / 2] += 1;  // test hook: damage the result, which validation must catch
      std::memcpy(final_hist.data(), hist, kBins * 4);
    } catch (...) {
      dev.svm_free(hist);
      dev.svm_free(in);
      throw;
    }
    dev.svm_free(hist);
    dev.svm_free(in);
  }
  if (o.corrupt && o.version == "D") final_hist[kBins / 2] += 1;
  check_histogram(final_hist, reference, out);
  return out;
}

}  // namespace xferlab::collab
