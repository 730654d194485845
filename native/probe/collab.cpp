// `xferlab-probe collab`: collaborative CPU–device patterns in the manner of CHAI (Gómez-Luna et
// al., ISPASS 2017), the suite seed 001 runs on the AC922 in its 'D' and 'U' versions (Figure 4:
// time split into allocation, copy and kernel, normalized to D). OpenCL only; this file creates its
// own context, queue and program through the run-time loader.
//
//   histogram  data partitioning (CHAI HSTI): N pseudo-random 32-bit values binned by their top
//              byte into 256 bins; the device takes the first `device-share` of the input, T host
//              threads the rest, all adding into the same histogram. As in CHAI, every work-group
//              and every host thread counts into a private histogram (local memory / stack) and
//              then adds it to the shared one with one atomic add per bin.
//              D: the device's part is copied to a device buffer (clEnqueueWriteBuffer), the device
//                 counts into its own device-buffer histogram, which is read back
//                 (clEnqueueReadBuffer) and added to the host threads' histogram.
//              U: input and the one histogram live in fine-grained SVM; the kernel adds with
//                 atomic_fetch_add_explicit(memory_scope_all_svm_devices) (OpenCL C 2.0 or 3.0;
//                 CL1.2's atomic_add when the compiler refuses them: see build_kernels, and the
//                 setup record's atomics_path) while host threads add with __atomic_fetch_add to
//                 the same bins.
//   taskqueue  task partitioning (CHAI TQH, simplified): N floats in K = N / block tasks; a task
//              transforms its block in place, x <- x*31/32 + x*x/64 + 1/128, `iterations` times.
//              D: static split: the device's first tasks are copied over, transformed by one
//                 work-group per task, read back; host threads take the other tasks.
//              U: data and a task counter in fine-grained SVM; persistent device work-groups and
//                 host threads pop tasks from the same counter (atomic fetch-add) until none are
//                 left, working in place; the device's share is measured, not chosen
//                 (--device-share 0 or 1 runs the host or the device alone).
//
// Timing (std::chrono::steady_clock, per repeat): allocation (buffers / SVM, and initialising the
// inputs), copy (explicit transfers, 0 for U), kernel (from the kernel's enqueue until both it and
// the host threads are done: the wall time of the collaborative compute phase), total (all three,
// wall). Repeat 0 is a warm-up (it pays the kernel's first-launch compilation). Every repeat is
// validated outside the timed region against a host-only reference computed once.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../loaders/opencl_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "cl_device.hpp"
#include "json.hpp"
#include "probe.hpp"

namespace xferlab {

namespace {

using namespace cl;
using Clock = std::chrono::steady_clock;

constexpr int kBins = 256;
constexpr size_t kLocal = 64;  // work-items per work-group

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The kernels. FP_CONTRACT OFF keeps the task transform bit-identical to the host's reference.
// SHARED_* are the atomics on memory shared with the host (U version): C11-style with the
// all-SVM-devices scope under OpenCL C 2.0, or CL1.2 atomic_add.
const char* kSource = R"CLC(
#pragma OPENCL FP_CONTRACT OFF
#if XFERLAB_C11
#define SHARED_UINT volatile __global atomic_uint
#define SHARED_INT volatile __global atomic_int
#define SHARED_ADD(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed, memory_scope_all_svm_devices)
#else
#define SHARED_UINT volatile __global uint
#define SHARED_INT volatile __global int
#define SHARED_ADD(p, v) atomic_add((p), (v))
#endif

// This work-group's slice of in[0, count), counted into l[256].
void count_slice(__global const uint* in, uint count, volatile __local uint* l) {
  const uint lid = get_local_id(0), lsize = get_local_size(0);
  const uint groups = get_num_groups(0), g = get_group_id(0);
  for (uint b = lid; b < 256; b += lsize) l[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint per = ((count + groups - 1) / groups + lsize - 1) / lsize * lsize;
  const uint first = min(count, g * per), end = min(count, first + per);
  for (uint i = first + lid; i < end; i += lsize) atomic_inc(&l[in[i] >> 24]);
  barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel void hist_d(__global const uint* in, uint count, volatile __global uint* hist) {
  volatile __local uint l[256];
  count_slice(in, count, l);
  for (uint b = get_local_id(0); b < 256; b += get_local_size(0))
    if (l[b]) atomic_add(&hist[b], l[b]);
}

__kernel void hist_u(__global const uint* in, uint count, SHARED_UINT* hist) {
  volatile __local uint l[256];
  count_slice(in, count, l);
  for (uint b = get_local_id(0); b < 256; b += get_local_size(0))
    if (l[b]) SHARED_ADD(&hist[b], l[b]);
}

float transform(float x, int iterations) {
  for (int k = 0; k < iterations; ++k) x = x * 0.96875f + x * x * 0.015625f + 0.0078125f;
  return x;
}

void run_task(__global float* data, uint n, uint block, int iterations, uint t) {
  const ulong first = (ulong)t * block, end = min((ulong)n, first + block);
  for (ulong i = first + get_local_id(0); i < end; i += get_local_size(0)) data[i] = transform(data[i], iterations);
}

// D: one work-group per task, tasks [0, number of groups).
__kernel void tasks_d(__global float* data, uint n, uint block, int iterations) {
  run_task(data, n, block, iterations, get_group_id(0));
}

// U: persistent work-groups pop tasks from the counter shared with the host threads.
__kernel void tasks_u(__global float* data, uint n, uint block, int iterations, uint tasks, SHARED_INT* next) {
  __local int task;
  for (;;) {
    if (get_local_id(0) == 0) task = SHARED_ADD(next, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int t = task;
    if (t >= (int)tasks) break;
    run_task(data, n, block, iterations, (uint)t);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
)CLC";

// The host's copy of the task transform over x[0, n): the same operations in the same order for
// each element as the kernel's `transform`, iterations outermost so that the compiler vectorizes
// the inner loop over a block that stays in cache.
inline void transform_span(float* x, size_t n, int iterations) {
  for (int k = 0; k < iterations; ++k)
    for (size_t i = 0; i < n; ++i) x[i] = x[i] * 0.96875f + x[i] * x[i] * 0.015625f + 0.0078125f;
}

// Deterministic pseudo-random input: a 64-bit mix (splitmix64's finalizer) of (seed, index).
inline uint32_t value_at(uint64_t i, uint64_t seed) {
  uint64_t z = i + seed * 0x9E3779B97F4A7C15ull + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
}
inline float float_at(uint64_t i, uint64_t seed) { return (value_at(i, seed) >> 8) * (1.0f / 16777216.0f); }

// Runs body(t, lo, hi) on `threads` std::threads over equal contiguous slices of [0, n).
template <class F>
void parallel(int threads, size_t n, F body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    pool.emplace_back([=, &body] { body(t, lo, hi); });
  }
  for (auto& th : pool) th.join();
}

struct Options {
  std::string pattern, version;
  int device = 0;
  size_t size = 0, block = 0;
  int iterations = 0, host_threads = 1, repeats = 1;
  double share = 0.5;
  uint64_t seed = 1;
  bool corrupt = false;
};

// What one repeat measured, and what its validation found.
struct Outcome {
  double allocation = 0, copy = 0, kernel = 0, total = 0;
  double device_share = 0;  // fraction of the work the device did
  size_t copied_bytes = 0;
  long long host_tasks = -1, device_tasks = -1;
  bool ok = true;
  long long wrong = 0, first_wrong = -1;
  double expected = 0, got = 0;
  std::string what;
};

// ---- histogram (CHAI HSTI) ----

struct Histogram {
  Options& o;
  ClDevice& dev;
  cl_kernel kd, ku;
  std::vector<uint64_t> reference = std::vector<uint64_t>(kBins, 0);

  Histogram(Options& opts, ClDevice& d) : o(opts), dev(d) {
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

  size_t device_values() const { return static_cast<size_t>(std::llround(o.size * o.share)); }
  size_t groups() const { return std::max<size_t>(1, dev.units * 4); }

  // Host threads: count [lo, hi) privately, then add to `shared` with one atomic per bin.
  static void count_host(const uint32_t* in, size_t lo, size_t hi, uint32_t* shared) {
    uint32_t mine[kBins] = {};
    for (size_t i = lo; i < hi; ++i) ++mine[in[i] >> 24];
    for (int b = 0; b < kBins; ++b)
      if (mine[b]) __atomic_fetch_add(&shared[b], mine[b], __ATOMIC_RELAXED);
  }

  void fill_input(uint32_t* in) const {
    parallel(o.host_threads, o.size, [&](int, size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) in[i] = value_at(i, o.seed);
    });
  }

  Outcome run() {
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
      cl_mem din = dev.buffer(nd * 4), dhist = dev.buffer(kBins * 4);
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
      dev.release(din);
      dev.release(dhist);
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
    // validation
    for (int b = 0; b < kBins; ++b) {
      if (final_hist[b] != reference[b]) {
        if (out.ok) {
          out.first_wrong = b;
          out.expected = static_cast<double>(reference[b]);
          out.got = final_hist[b];
        }
        out.ok = false;
        ++out.wrong;
      }
    }
    if (!out.ok) {
      std::ostringstream msg;
      msg << out.wrong << " of " << kBins << " bins differ; bin " << out.first_wrong << ": expected "
          << static_cast<long long>(out.expected) << ", got " << static_cast<long long>(out.got);
      out.what = msg.str();
    }
    return out;
  }
};

// ---- task queue (CHAI TQH, simplified) ----

struct TaskQueue {
  Options& o;
  ClDevice& dev;
  cl_kernel kd, ku;
  size_t tasks;
  std::vector<float> reference;

  TaskQueue(Options& opts, ClDevice& d) : o(opts), dev(d) {
    kd = dev.kernel("tasks_d");
    ku = dev.kernel("tasks_u");
    tasks = (o.size + o.block - 1) / o.block;
    reference.resize(o.size);
    parallel(o.host_threads, tasks, [&](int, size_t lo, size_t hi) {
      for (size_t i = lo * o.block; i < std::min(o.size, hi * o.block); ++i) reference[i] = float_at(i, o.seed);
      for (size_t t = lo; t < hi; ++t) run_task(reference.data(), t);
    });
  }

  void run_task(float* data, size_t t) const {
    const size_t first = t * o.block, end = std::min(o.size, first + o.block);
    transform_span(data + first, end - first, o.iterations);
  }

  void fill_input(float* data) const {
    parallel(o.host_threads, o.size, [&](int, size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) data[i] = float_at(i, o.seed);
    });
  }

  // Host threads pop tasks from `next` (host-only in D, shared with the device in U) below `end`.
  long long host_work(float* data, int* next, size_t end) const {
    std::atomic<long long> done{0};
    parallel(o.host_threads, o.host_threads, [&](int, size_t, size_t) {
      long long mine = 0;
      for (;;) {
        const int t = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
        if (t < 0 || static_cast<size_t>(t) >= end) break;
        run_task(data, static_cast<size_t>(t));
        ++mine;
      }
      done += mine;
    });
    return done.load();
  }

  Outcome run() {
    Outcome out;
    const float* result = nullptr;
    std::unique_ptr<float, void (*)(void*)> host_data(nullptr, std::free);
    float* svm_data = nullptr;
    int* svm_next = nullptr;
    auto t0 = Clock::now();
    if (o.version == "D") {
      const size_t kd_tasks = static_cast<size_t>(std::llround(tasks * o.share));
      const size_t dev_floats = std::min(o.size, kd_tasks * o.block);
      float* data = static_cast<float*>(std::aligned_alloc(4096, (o.size * 4 + 4095) / 4096 * 4096));
      if (!data) throw std::runtime_error("out of host memory for the tasks' data");
      host_data.reset(data);
      cl_mem dbuf = dev.buffer(dev_floats * 4);
      fill_input(data);
      out.allocation = since(t0);
      auto t1 = Clock::now();
      dev.write(dbuf, data, dev_floats * 4);
      out.copy = since(t1);
      auto t2 = Clock::now();
      if (kd_tasks) {
        dev.arg(kd, 0, dbuf);
        dev.arg(kd, 1, static_cast<cl_uint>(dev_floats));
        dev.arg(kd, 2, static_cast<cl_uint>(o.block));
        dev.arg(kd, 3, static_cast<cl_int>(o.iterations));
        dev.launch(kd, kd_tasks, kLocal);
      }
      int next = static_cast<int>(kd_tasks);
      out.host_tasks = host_work(data, &next, tasks);
      dev.finish();
      out.kernel = since(t2);
      auto t3 = Clock::now();
      dev.read(dbuf, data, dev_floats * 4);
      out.copy += since(t3);
      out.total = since(t0);
      out.copied_bytes = 2 * dev_floats * 4;
      out.device_tasks = static_cast<long long>(kd_tasks);
      dev.release(dbuf);
      result = data;
    } else {
      try {
        svm_data = static_cast<float*>(dev.svm(o.size * 4, false));
        svm_next = static_cast<int*>(dev.svm(sizeof(int), true));
        *svm_next = 0;
        fill_input(svm_data);
        out.allocation = since(t0);
        auto t2 = Clock::now();
        if (o.share > 0) {  // --device-share 0: the host alone (a baseline)
          dev.svm_arg(ku, 0, svm_data);
          dev.arg(ku, 1, static_cast<cl_uint>(o.size));
          dev.arg(ku, 2, static_cast<cl_uint>(o.block));
          dev.arg(ku, 3, static_cast<cl_int>(o.iterations));
          dev.arg(ku, 4, static_cast<cl_uint>(tasks));
          dev.svm_arg(ku, 5, svm_next);
          dev.launch(ku, std::max<cl_uint>(1, dev.units), kLocal);
        }
        out.host_tasks = o.share < 1 ? host_work(svm_data, svm_next, tasks) : 0;  // 1: the device alone
        dev.finish();
        out.kernel = since(t2);
        out.total = since(t0);
        out.device_tasks = static_cast<long long>(tasks) - out.host_tasks;
        result = svm_data;
      } catch (...) {
        dev.svm_free(svm_next);
        dev.svm_free(svm_data);
        throw;
      }
    }
    out.device_share = tasks ? static_cast<double>(out.device_tasks) / tasks : 0.0;
    if (o.corrupt) const_cast<float*>(result)[o.size / 2] += 1.0f;  // test hook: validation must catch it
    // validation: every element against the host-only reference
    for (size_t i = 0; i < o.size; ++i) {
      const float want = reference[i], have = result[i];
      if (!(std::fabs(have - want) <= 1e-6f * std::max(1.0f, std::fabs(want)))) {
        if (out.ok) {
          out.first_wrong = static_cast<long long>(i);
          out.expected = want;
          out.got = have;
        }
        out.ok = false;
        ++out.wrong;
      }
    }
    if (!out.ok) {
      std::ostringstream msg;
      msg.precision(9);
      msg << out.wrong << " of " << o.size << " elements differ; element " << out.first_wrong << " (task "
          << out.first_wrong / static_cast<long long>(o.block) << "): expected " << out.expected << ", got " << out.got;
      out.what = msg.str();
    }
    dev.svm_free(svm_next);
    dev.svm_free(svm_data);
    return out;
  }
};

std::string capabilities_json(cl_device_atomic_capabilities caps) {
  std::string out = "[";
  const struct {
    cl_device_atomic_capabilities bit;
    const char* name;
  } names[] = {{CL_DEVICE_ATOMIC_ORDER_RELAXED, "relaxed"},      {CL_DEVICE_ATOMIC_ORDER_ACQ_REL, "acq_rel"},
               {CL_DEVICE_ATOMIC_ORDER_SEQ_CST, "seq_cst"},      {CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM, "work_item"},
               {CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP, "work_group"}, {CL_DEVICE_ATOMIC_SCOPE_DEVICE, "device"},
               {CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES, "all_devices"}};
  for (auto& n : names)
    if (caps & n.bit) out += std::string(out.size() > 1 ? "," : "") + "\"" + n.name + "\"";
  return out + "]";
}

// Why the U version cannot run on `dev`, or "".
std::string lacks_shared_atomics(ClDevice& dev) {
  if (!dev.svm_api()) return "the OpenCL library has no SVM entry points (clSVMAlloc, clSetKernelArgSVMPointer: OpenCL 2.0)";
  if (!(dev.svm_caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) || !(dev.svm_caps & CL_DEVICE_SVM_ATOMICS))
    return "device '" + dev.text(CL_DEVICE_NAME) + "' lacks fine-grained SVM buffers with SVM atomics "
           "(CL_DEVICE_SVM_CAPABILITIES = " + std::to_string(dev.svm_caps) + ")";
  return "";
}

// Builds the kernels, trying in turn: OpenCL C 2.0 (the C11 atomics with
// memory_scope_all_svm_devices); OpenCL C 3.0 with them; OpenCL C 3.0 with the feature macro
// __opencl_c_atomic_scope_all_devices defined by us, only when the device reports
// CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES (OpenCL 3.0 ties the macro to that capability; PoCL 3.x
// reports the capability but its compiler leaves the macro undefined, and its CL2.0 mode lacks the
// C11 atomic functions); last, OpenCL C 1.2's atomic_add. Sets the options and the atomics that
// were built; returns the seconds it took.
double build_kernels(ClDevice& dev, std::string& options, std::string& atomics, std::string& path) {
  auto t0 = Clock::now();
  const std::string c11 = "atomic_fetch_add_explicit(memory_order_relaxed, memory_scope_all_svm_devices)";
  std::vector<std::string> tried = {"-cl-std=CL2.0 -DXFERLAB_C11=1", "-cl-std=CL3.0 -DXFERLAB_C11=1"};
  std::vector<std::string> names = {"OpenCL C 2.0 " + c11, "OpenCL C 3.0 " + c11};
  std::vector<std::string> paths = {"c11-cl2.0", "c11-cl3.0"};
  if (dev.atomic_caps & CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES) {
    tried.push_back("-cl-std=CL3.0 -DXFERLAB_C11=1 -D__opencl_c_atomic_scope_all_devices=1");
    names.push_back("OpenCL C 3.0 " + c11 +
                    " (feature macro __opencl_c_atomic_scope_all_devices defined by xferlab: the device reports "
                    "CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES)");
    paths.push_back("c11-cl3.0-feature-defined");
  }
  tried.push_back("-DXFERLAB_C11=0");
  names.push_back("OpenCL C 1.2 atomic_add (no memory scope)");
  paths.push_back("cl1.2-atomic_add");
  const size_t built = dev.build(kSource, tried);
  options = tried[built];
  atomics = names[built];
  path = paths[built];
  return since(t0);
}

// One word from `allowed` (not a list).
std::string one_of(Args& args, const char* name, const char* fallback, const std::vector<std::string>& allowed) {
  auto words = args.words(name, fallback, allowed);
  if (words.size() != 1) throw BadArgument(std::string("--") + name + " takes one value, not a list");
  return words[0];
}

}  // namespace

int run_collab(Args& args) {
  const std::string backend = args.text("backend", "opencl");
  Options o;
  o.device = static_cast<int>(args.integer("device", 0, 0, 4096));
  o.pattern = one_of(args, "pattern", "histogram", {"histogram", "taskqueue"});
  o.version = one_of(args, "version", "D", {"D", "U"});
  o.size = static_cast<size_t>(args.integer("size", 16ll << 20, 1, (1ll << 31) - 1));
  o.block = static_cast<size_t>(args.integer("block", 4096, 1, 1 << 24));
  o.iterations = static_cast<int>(args.integer("iterations", 16, 0, 1 << 20));
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  o.host_threads = static_cast<int>(args.integer("host-threads", std::max(1u, cores / 2), 1, 1024));
  o.repeats = static_cast<int>(args.integer("repeats", 5, 1, 100000));
  o.share = args.real("device-share", 0.5, 0.0, 1.0);
  o.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, 1ll << 62));
  o.corrupt = args.flag("corrupt");
  args.finish();
  if (backend != "opencl") throw BadArgument("--backend '" + backend + "' is not allowed; collab runs on: opencl");
  if (o.pattern == "taskqueue" && (o.size + o.block - 1) / o.block > (1u << 30))
    throw BadArgument("--size / --block gives more than 2^30 tasks");

  ClDevice dev(o.device);
  if (o.version == "U") {
    std::string why = lacks_shared_atomics(dev);
    if (!why.empty()) throw NotAvailable(why);
  }
  if (o.size * 4 > dev.max_alloc)
    throw BadArgument("--size " + std::to_string(o.size) + " needs " + std::to_string(o.size * 4) +
                      "-byte buffers, above the device's largest allocation of " + std::to_string(dev.max_alloc) + " bytes");
  if (dev.max_group && dev.max_group < kLocal)
    throw NotAvailable("the device's work-groups hold at most " + std::to_string(dev.max_group) + " work-items; collab needs " +
                       std::to_string(kLocal));
  dev.open();
  std::string options, atomics, path;
  const double build_seconds = build_kernels(dev, options, atomics, path);

  std::unique_ptr<Histogram> hist;
  std::unique_ptr<TaskQueue> queue;
  if (o.pattern == "histogram") hist = std::make_unique<Histogram>(o, dev);
  else queue = std::make_unique<TaskQueue>(o, dev);

  const bool u = o.version == "U";
  std::string shared;
  if (o.pattern == "histogram")
    shared = u ? atomics + " on one fine-grained SVM histogram; host: __atomic_fetch_add"
               : "none shared: device histogram in a device buffer, read back and added to the host threads' one";
  else
    shared = u ? atomics + " on a fine-grained SVM task counter; host: __atomic_fetch_add"
               : "none shared: static split, the device's tasks copied over and back";
  JsonLine setup;
  setup.str("probe", "collab")
      .str("record", "setup")
      .str("backend", "opencl")
      .integer("device_index", o.device)
      .str("device_name", dev.text(CL_DEVICE_NAME))
      .str("device_version", dev.text(CL_DEVICE_VERSION))
      .str("opencl_c", dev.text(CL_DEVICE_OPENCL_C_VERSION))
      .integer("compute_units", dev.units)
      .boolean("svm_fine_grain", dev.svm_caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)
      .boolean("svm_atomics", dev.svm_caps & CL_DEVICE_SVM_ATOMICS)
      .raw("atomic_memory_capabilities", capabilities_json(dev.atomic_caps))
      .str("build_options", options)
      .str("atomics", atomics)
      .str("atomics_path", path)
      .str("build_refused", dev.refused)
      .number("build_seconds", build_seconds)
      .str("shared_atomics", shared)
      .str("pattern", o.pattern)
      .str("version", o.version)
      .integer("size", static_cast<long long>(o.size))
      .integer("host_threads", o.host_threads)
      .number("device_share", o.share)
      .integer("repeats", o.repeats)
      .integer("seed", static_cast<long long>(o.seed))
      .integer("local_size", kLocal);
  if (o.pattern == "histogram") {
    setup.integer("bins", kBins).integer("work_groups", static_cast<long long>(hist->groups()));
  } else {
    setup.integer("block", static_cast<long long>(o.block))
        .integer("tasks", static_cast<long long>(queue->tasks))
        .integer("iterations", o.iterations)
        .str("split", u ? "dynamic" : "static")
        .integer("work_groups", u ? static_cast<long long>(std::max<cl_uint>(1, dev.units)) : -1);
  }
  setup.str("clock", "std::chrono::steady_clock; kernel = enqueue to completion of kernel and host threads")
      .boolean("corrupt", o.corrupt)
      .emit();

  int failed = 0;
  std::string first_failure;
  for (int r = 0; r < o.repeats; ++r) {
    Outcome out = hist ? hist->run() : queue->run();
    JsonLine sample;
    sample.str("probe", "collab")
        .str("record", "sample")
        .str("pattern", o.pattern)
        .str("version", o.version)
        .integer("repeat", r)
        .boolean("warmup", r == 0)
        .number("allocation_seconds", out.allocation)
        .number("copy_seconds", out.copy)
        .number("kernel_seconds", out.kernel)
        .number("total_seconds", out.total)
        .integer("host_threads", o.host_threads)
        .number("device_share", out.device_share)
        .integer("copied_bytes", static_cast<long long>(out.copied_bytes));
    if (queue) sample.integer("device_tasks", out.device_tasks).integer("host_tasks", out.host_tasks);
    sample.emit();
    JsonLine valid;
    valid.str("probe", "collab")
        .str("record", "validation")
        .str("pattern", o.pattern)
        .str("version", o.version)
        .integer("repeat", r)
        .boolean("ok", out.ok)
        .integer("wrong", out.wrong)
        .integer("first_wrong_index", out.first_wrong);
    if (!out.ok) valid.number("expected", out.expected).number("got", out.got).str("what", out.what);
    valid.emit();
    if (!out.ok && !failed++) first_failure = "repeat " + std::to_string(r) + ": " + out.what;
  }
  if (failed) {
    std::fprintf(stderr, "xferlab-probe: collab: validation failed in %d of %d repeats; first, %s\n", failed, o.repeats,
                 first_failure.c_str());
    return 1;
  }
  return 0;
}

}  // namespace xferlab
