// `xferlab-probe collab --pattern trns`: CHAI's TRNS (Gómez-Luna et al., ISPASS 2017), the in-place
// transposition PTTWAC (Sung, Liu and Hwu, InPar 2012) as CHAI runs it: a height x width matrix of
// floats seen as height rows of width / super-element super-elements, [A][B][s] transposed in place
// to [B][A][s] by following cycles, one flag a super-element swapped with an atomic exchange; every
// super-element but the last is a task (a cycle start) popped from one counter. Kernel: trns_cycles
// in collab.cl.
//   D: as CHAI's OpenCL-D/CUDA-D TRNS, which runs "CPU-only or GPU-only" (a cycle crosses the whole
//      matrix, so there is no static split without shared flags): the device alone, the matrix, the
//      flags and the counter copied over, the matrix read back; --device-share 0: the host threads
//      alone, in place in host memory.
//   U: as CHAI's OpenCL-U TRNS: the matrix, the flags and the counter in fine-grained SVM; device
//      work-groups and host threads pop cycle starts from the same counter (dynamic partitioning)
//      and swap the same flags (SVM atomics); --device-share 0 or 1 runs one side alone.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "collab.hpp"

namespace xferlab::collab {

using namespace cl;

Trns::Trns(Options& opts, ClDevice& d) : o(opts), dev(d) {
  k = dev.kernel("trns_cycles");
  tiles_per_row = o.width / o.super_element;
  tiles = o.height * tiles_per_row;
  reference.assign(o.height * o.width, 0.0f);
  const size_t s = o.super_element;
  for (size_t r = 0; r < o.height; ++r)  // out of place: super-element (r, c) to (c, r)
    for (size_t c = 0; c < tiles_per_row; ++c)
      for (size_t j = 0; j < s; ++j)
        reference[(c * o.height + r) * s + j] = float_at((r * tiles_per_row + c) * s + j, o.seed);
}

// Host threads pop cycle starts from `head` (shared with the device in U) and follow each cycle
// while its flags are clear, as CHAI's run_cpu_threads does. Returns the starts they popped.
long long Trns::host_cycles(float* data, int* finished, int* head) const {
  std::atomic<long long> popped{0};
  const uint64_t A = o.height, B = tiles_per_row, M = tiles - 1, s = o.super_element;
  parallel(o.host_threads, o.host_threads, [&](int, size_t, size_t) {
    std::vector<float> held(s), next_held(s);
    long long mine = 0;
    for (;;) {
      const int t = __atomic_fetch_add(head, 1, __ATOMIC_RELAXED);
      if (t < 0 || static_cast<uint64_t>(t) >= M) break;
      ++mine;
      const uint64_t g = static_cast<uint64_t>(t);
      uint64_t next = g * A - M * (g / B);
      if (next == g) continue;  // a fixed point: nothing moves
      std::memcpy(held.data(), data + g * s, s * sizeof(float));
      // the start read before its flag is checked: an add of 0 with release, as CHAI's atomic check
      int done = __atomic_fetch_add(&finished[g], 0, __ATOMIC_ACQ_REL);
      while (!done) {
        std::memcpy(next_held.data(), data + next * s, s * sizeof(float));
        done = __atomic_exchange_n(&finished[next], 1, __ATOMIC_ACQ_REL);
        if (!done) std::memcpy(data + next * s, held.data(), s * sizeof(float));
        held.swap(next_held);
        next = next * A - M * (next / B);
      }
    }
    popped += mine;
  });
  return popped.load();
}

Outcome Trns::run() {
  Outcome out;
  const size_t floats = o.height * o.width, starts = cycle_starts();
  const float* result = nullptr;
  std::unique_ptr<float, void (*)(void*)> host_data(nullptr, std::free);
  float* svm_data = nullptr;
  int* svm_flags = nullptr;
  auto fill = [&](float* data) {
    parallel(o.host_threads, floats, [&](int, size_t lo, size_t hi) {
      for (size_t x = lo; x < hi; ++x) data[x] = float_at(x, o.seed);
    });
  };
  auto set_args = [&] {
    dev.arg(k, 1, static_cast<cl_uint>(o.height));
    dev.arg(k, 2, static_cast<cl_uint>(tiles_per_row));
    dev.arg(k, 3, static_cast<cl_uint>(o.super_element));
  };
  auto t0 = Clock::now();
  if (o.version == "D") {
    const bool device = o.share > 0;  // CHAI's D: one side alone, the device unless --device-share 0
    float* data = static_cast<float*>(std::aligned_alloc(4096, (floats * 4 + 4095) / 4096 * 4096));
    if (!data) throw std::runtime_error("out of host memory for TRNS's matrix");
    host_data.reset(data);
    std::vector<int> host_flags(device ? 0 : tiles + 1, 0);  // the host's flags, then its counter
    // the device's matrix, flags and counter (4-byte stand-ins when the host works alone)
    auto dbuf = dev.buffer(device ? floats * 4 : 4);
    auto dflags = dev.buffer(device ? tiles * 4 : 4);
    auto dhead = dev.buffer(4);
    const std::vector<int> zeros(device ? tiles + 1 : 0, 0);
    fill(data);
    out.allocation = since(t0);
    auto t1 = Clock::now();
    if (device) {
      dev.write(dbuf, data, floats * 4);
      dev.write(dflags, zeros.data(), tiles * 4);
      dev.write(dhead, zeros.data(), 4);
      out.copied_bytes = (floats + tiles + 1) * 4;
    }
    out.copy = since(t1);
    auto t2 = Clock::now();
    if (device) {
      dev.arg(k, 0, dbuf);
      set_args();
      dev.arg(k, 4, dhead);
      dev.arg(k, 5, dflags);
      dev.launch(k, std::max<cl_uint>(1, dev.units), kLocal);
      dev.finish();
      out.host_tasks = 0;
    } else {
      out.host_tasks = host_cycles(data, host_flags.data(), &host_flags[tiles]);
    }
    out.kernel = since(t2);
    auto t3 = Clock::now();
    if (device) {
      dev.read(dbuf, data, floats * 4);
      out.copied_bytes += floats * 4;
    }
    out.copy += since(t3);
    out.total = since(t0);
    out.device_tasks = static_cast<long long>(starts) - out.host_tasks;
    result = data;
  } else {
    try {
      svm_data = static_cast<float*>(dev.svm(floats * 4, false));
      svm_flags = static_cast<int*>(dev.svm((tiles + 1) * sizeof(int), true));  // flags, then the counter
      std::memset(svm_flags, 0, (tiles + 1) * sizeof(int));
      fill(svm_data);
      out.allocation = since(t0);
      auto t2 = Clock::now();
      if (o.share > 0) {  // --device-share 0: the host alone
        dev.svm_arg(k, 0, svm_data);
        dev.svm_arg(k, 4, svm_flags + tiles);
        dev.svm_arg(k, 5, svm_flags);
        set_args();
        dev.launch(k, std::max<cl_uint>(1, dev.units), kLocal);
      }
      out.host_tasks = o.share < 1 ? host_cycles(svm_data, svm_flags, svm_flags + tiles) : 0;
      dev.finish();
      out.kernel = since(t2);
      out.total = since(t0);
      out.device_tasks = static_cast<long long>(starts) - out.host_tasks;
      result = svm_data;
    } catch (...) {
      dev.svm_free(svm_flags);
      dev.svm_free(svm_data);
      throw;
    }
  }
  out.device_share = starts ? static_cast<double>(out.device_tasks) / starts : (o.share > 0 ? 1.0 : 0.0);
  if (o.corrupt) const_cast<float*>(result)[floats / 2] += 1.0f;  // test hook: validation must catch it
  compare_exactly(result, reference.data(), 0, floats, out);  // validation: every float, against the out-of-place transpose
  if (!out.ok) {  // the transposed matrix: width / s rows of height super-elements
    const long long row = static_cast<long long>(o.height * o.super_element);
    std::ostringstream msg;
    msg.precision(9);
    msg << out.wrong << " of " << floats << " floats differ; first at row " << out.first_wrong / row << ", column "
        << out.first_wrong % row << " of the transposed matrix: expected " << out.expected << ", got " << out.got;
    out.what = msg.str();
  }
  dev.svm_free(svm_flags);
  dev.svm_free(svm_data);
  return out;
}

}  // namespace xferlab::collab
