// `xferlab-probe collab --pattern pad`: CHAI's PAD (Gómez-Luna et al., ISPASS 2017), in place: a
// rows x cols matrix of floats padded to rows x (cols + pad) in the same buffer. Row i moves from
// i*cols to i*(cols+pad); rows go from the last to the first, and a row is written only once every
// row j > i whose source its destination covers has been moved (one flag a row: the in-place
// dependency CHAI's PAD synchronizes with flags and atomics). Kernel: pad_rows in collab.cl.
//   D: static split: the device takes rows [0, k), k = round(rows * device-share): their cols*k
//      floats are copied to a device buffer of k*(cols+pad), padded there (flags and row counter in
//      device buffers), read back over the host's buffer after the host threads padded rows [k, rows)
//      in place (rows >= k never read or write below k*(cols+pad) except the device's read-back).
//   U: the matrix, the row counter and the flags in fine-grained SVM; device work-groups and host
//      threads pop rows from the same counter and wait on each other's flags (SVM atomics).
// Work-groups: on a CPU device the CPUs the host threads leave free, else one a compute unit (Pad::Pad).
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

Pad::Pad(Options& opts, ClDevice& d) : o(opts), dev(d) {
  k = dev.kernel("pad_rows");
  rows = o.size / o.cols;
  // Work-groups wait on each other's flags (and, in U, on the host threads') by spinning. On a CPU
  // device the compute units are this machine's CPUs, where the host threads run too: a work-group
  // for every unit puts more spinners than CPUs, and a row's owner, descheduled, holds up every row
  // after it (PoCL, 2 CPUs, 1 host thread: PAD U's mean 8.5x D's). There the work-groups are the CPUs
  // the host threads leave free (at least 1), in D and U alike; elsewhere one per compute unit.
  cl_device_type type = 0;
  dev.api().GetDeviceInfo(dev.id(), CL_DEVICE_TYPE, sizeof type, &type, nullptr);
  const size_t units = std::max<cl_uint>(1, dev.units);
  if (type & CL_DEVICE_TYPE_CPU) {
    const int left = o.process_cpus - (o.share < 1 ? o.host_threads : 0);
    groups = std::min(units, static_cast<size_t>(std::max(1, left)));
    groups_rule = "CPU device: its compute units are this machine's CPUs; work-groups = the " +
                  std::to_string(o.process_cpus) + " CPUs this process may use less the " +
                  std::to_string(o.share < 1 ? o.host_threads : 0) + " host threads, at least 1, at most the " +
                  std::to_string(units) + " compute units";
  } else {
    groups = units;
    groups_rule = "one a compute unit";
  }
  reference = pad_reference(o, rows);
}

long long Pad::host_rows(float* data, int* next, int* done, size_t lo, size_t hi) const {
  return pad_host_rows(o, data, next, done, lo, hi);
}

std::vector<float> pad_reference(const Options& o, size_t rows) {
  std::vector<float> reference(rows * (o.cols + o.pad), 0.0f);
  for (size_t i = 0; i < rows; ++i)  // out of place, the obvious way
    for (size_t j = 0; j < o.cols; ++j) reference[i * (o.cols + o.pad) + j] = float_at(i * o.cols + j, o.seed);
  return reference;
}

void pad_fill(const Options& o, size_t rows, float* data) {
  parallel(o.host_threads, rows * o.cols, [&](int, size_t lo, size_t hi) {
    for (size_t x = lo; x < hi; ++x) data[x] = float_at(x, o.seed);
  });
}

// Host threads pop rows of [lo, hi), from the last, from `next` (shared with the device in U) and
// wait on `done` for the rows their destination covers.
long long pad_host_rows(const Options& o, float* data, int* next, int* done, size_t lo, size_t hi) {
  std::atomic<long long> moved{0};
  const size_t c = o.cols, p = o.pad;
  parallel(o.host_threads, o.host_threads, [&](int, size_t, size_t) {
    long long mine = 0;
    for (;;) {
      const int t = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
      if (t < 0 || static_cast<size_t>(t) >= hi - lo) break;
      const size_t i = hi - 1 - static_cast<size_t>(t);
      const size_t last = std::min(hi - 1, (i * (c + p) + c - 1) / c);
      for (size_t j = i + 1; j <= last; ++j)
        while (!__atomic_load_n(&done[j], __ATOMIC_ACQUIRE)) std::this_thread::yield();
      std::memmove(data + i * (c + p), data + i * c, c * sizeof(float));
      __atomic_store_n(&done[i], 1, __ATOMIC_RELEASE);
      ++mine;
    }
    moved += mine;
  });
  return moved.load();
}

Outcome Pad::run() {
  Outcome out;
  const size_t c = o.cols, p = o.pad, padded = rows * (c + p);
  const float* result = nullptr;
  std::unique_ptr<float, void (*)(void*)> host_data(nullptr, std::free);
  std::vector<int> host_flags;
  float* svm_data = nullptr;
  int* svm_flags = nullptr;
  auto fill = [&](float* data) { pad_fill(o, rows, data); };
  auto set_args = [&](cl_uint n) {
    dev.arg(k, 1, n);
    dev.arg(k, 2, static_cast<cl_uint>(c));
    dev.arg(k, 3, static_cast<cl_uint>(p));
  };
  auto t0 = Clock::now();
  if (o.version == "D") {
    const size_t kd = std::min(rows, static_cast<size_t>(std::llround(rows * o.share)));
    float* data = static_cast<float*>(std::aligned_alloc(4096, (padded * 4 + 4095) / 4096 * 4096));
    if (!data) throw std::runtime_error("out of host memory for PAD's matrix");
    host_data.reset(data);
    host_flags.assign(rows + 1, 0);  // the host's flags, and its row counter last
    auto dbuf = dev.buffer(kd * (c + p) * 4);
    auto dflags = dev.buffer(kd * 4);
    auto dnext = dev.buffer(4);
    const std::vector<int> zeros(kd + 1, 0);
    fill(data);
    out.allocation = since(t0);
    auto t1 = Clock::now();
    dev.write(dbuf, data, kd * c * 4);
    dev.write(dflags, zeros.data(), kd * 4);  // the device's flags and row counter (copies too)
    dev.write(dnext, zeros.data(), 4);
    out.copy = since(t1);
    auto t2 = Clock::now();
    if (kd) {
      dev.arg(k, 0, dbuf);
      set_args(static_cast<cl_uint>(kd));
      dev.arg(k, 4, dnext);
      dev.arg(k, 5, dflags);
      dev.launch(k, groups, kLocal);
    }
    out.host_tasks = host_rows(data, &host_flags[rows], host_flags.data(), kd, rows);
    dev.finish();
    out.kernel = since(t2);
    auto t3 = Clock::now();
    dev.read(dbuf, data, kd * (c + p) * 4);
    out.copy += since(t3);
    out.total = since(t0);
    out.copied_bytes = (kd * c + kd * (c + p)) * 4;
    out.device_tasks = static_cast<long long>(kd);
    result = data;
  } else {
    try {
      svm_data = static_cast<float*>(dev.svm(padded * 4, false));
      svm_flags = static_cast<int*>(dev.svm((rows + 1) * sizeof(int), true));  // flags, then the row counter
      std::memset(svm_flags, 0, (rows + 1) * sizeof(int));
      fill(svm_data);
      out.allocation = since(t0);
      auto t2 = Clock::now();
      if (o.share > 0) {  // --device-share 0: the host alone
        dev.svm_arg(k, 0, svm_data);
        set_args(static_cast<cl_uint>(rows));
        dev.svm_arg(k, 4, svm_flags + rows);
        dev.svm_arg(k, 5, svm_flags);
        dev.launch(k, groups, kLocal);
      }
      out.host_tasks = o.share < 1 ? host_rows(svm_data, svm_flags + rows, svm_flags, 0, rows) : 0;
      dev.finish();
      out.kernel = since(t2);
      out.total = since(t0);
      out.device_tasks = static_cast<long long>(rows) - out.host_tasks;
      result = svm_data;
    } catch (...) {
      dev.svm_free(svm_flags);
      dev.svm_free(svm_data);
      throw;
    }
  }
  out.device_share = rows ? static_cast<double>(out.device_tasks) / rows : 0.0;
  if (o.corrupt) const_cast<float*>(result)[(rows / 2) * (c + p)] += 1.0f;  // test hook: validation must catch it
  pad_check(o, rows, result, reference, out);
  dev.svm_free(svm_flags);
  dev.svm_free(svm_data);
  return out;
}

void pad_check(const Options& o, size_t rows, const float* result, const std::vector<float>& reference, Outcome& out) {
  const size_t c = o.cols, p = o.pad;
  for (size_t i = 0; i < rows; ++i)  // validation: every cell that is not padding, against the reference
    compare_exactly(result, reference.data(), i * (c + p), i * (c + p) + c, out);
  if (!out.ok) {
    std::ostringstream msg;
    msg.precision(9);
    msg << out.wrong << " of " << rows * c << " cells differ; first at row " << out.first_wrong / static_cast<long long>(c + p)
        << ", column " << out.first_wrong % static_cast<long long>(c + p) << ": expected " << out.expected << ", got "
        << out.got;
    out.what = msg.str();
  }
}

}  // namespace xferlab::collab
