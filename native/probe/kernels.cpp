// `xferlab-probe kernels`: what an OpenCL device does with memory once the data are there, and what
// touching host memory from a kernel costs (seeds 001 and 004). Four modes:
//
//   stream  BabelStream's kernels (copy c=a, mul b=s*c, add c=a+b, triad a=b+s*c, dot sum a*b) and a
//           read-only sum, over arrays of `--size` bytes in device memory, pinned host memory, the
//           application's host memory (CL_MEM_USE_HOST_PTR) or SVM; float or double, 1 to 16
//           elements per work-item; over a list of work-group counts and of concurrent instances
//           (one queue and disjoint arrays each: seed 004's "kernel copies"). Where it is timed:
//           run_stream_point(), the host clock around enqueue on every queue + finish of all, and
//           the device's event timestamps (first start to last end). Bytes as BabelStream counts
//           them: copy, mul, dot 2 arrays; add, triad 3; read 1.
//   faults  a kernel touching fresh shared (SVM) memory one byte per stride: first touch (the
//           device's page faults) against a second touch, then the host reading it back.
//   align   H2D/D2H copies from host buffers at offsets from a page, allocated by the runtime
//           (a mapped CL_MEM_ALLOC_HOST_PTR buffer) or by the application (posix_memalign).
//   d2d     device to device between two devices (run_d2d_mode): through the runtime in one context,
//           and staged through pinned host memory.
//   spmv    CSR y = A x, one row per work-item, from a matrix file xferlab writes (measure/kernels.py);
//           y goes back to a file so that Python checks it against SciPy.
//
// Every result is checked: stream against a host replay of the kernel on the same initial arrays,
// faults and align against the bytes written, spmv by the caller. One JSON line per timed sample.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "args.hpp"
#include "cl_device.hpp"
#include "json.hpp"
#include "probe.hpp"
#include "stream_check.hpp"

namespace xferlab {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The kernels, for TYPE (float or double) and W elements per work-item (VT: TYPE or TYPEW vectors).
// Grid-stride loops: any number of work-groups covers the arrays. dot and read leave one partial
// sum per work-group (a tree in local memory); the host adds the partials (as BabelStream does).
const char* kSource = R"CLC(
#if IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if W == 1
#define VT TYPE
#define VSUM(v) (v)
#else
#define VT CAT(TYPE, W)
#endif
#define CAT(a, b) CAT2(a, b)
#define CAT2(a, b) a##b
#if W == 2
#define VSUM(v) ((v).s0 + (v).s1)
#elif W == 4
#define VSUM(v) ((v).s0 + (v).s1 + (v).s2 + (v).s3)
#elif W == 8
#define VSUM(v) (VSUM4((v).lo) + VSUM4((v).hi))
#elif W == 16
#define VSUM(v) (VSUM8((v).lo) + VSUM8((v).hi))
#endif
#define VSUM4(v) ((v).s0 + (v).s1 + (v).s2 + (v).s3)
#define VSUM8(v) (VSUM4((v).lo) + VSUM4((v).hi))

// Each streaming kernel twice: a grid-stride loop (any number of groups), and _1, one element per
// work-item (the launch covers the arrays; a CPU device vectorizes it across work-items).
#define STREAM(name, params, body)                                                    \
  kernel void stream_##name params {                                                  \
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) body            \
  }                                                                                   \
  kernel void stream_##name##_1 params {                                              \
    size_t i = get_global_id(0);                                                      \
    if (i < n) body                                                                   \
  }
STREAM(copy, (global const VT* a, global VT* c, ulong n), { c[i] = a[i]; })
STREAM(mul, (global VT* b, global const VT* c, TYPE s, ulong n), { b[i] = s * c[i]; })
STREAM(add, (global const VT* a, global const VT* b, global VT* c, ulong n), { c[i] = a[i] + b[i]; })
STREAM(triad, (global VT* a, global const VT* b, global const VT* c, TYPE s, ulong n), { a[i] = b[i] + s * c[i]; })
void reduce_group(local TYPE* part, TYPE v, global TYPE* sums) {
  size_t l = get_local_id(0);
  part[l] = v;
  for (size_t step = get_local_size(0) / 2; step > 0; step /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < step) part[l] += part[l + step];
  }
  if (l == 0) sums[get_group_id(0)] = part[0];
}
kernel void stream_dot(global const VT* a, global const VT* b, global TYPE* sums, local TYPE* part, ulong n) {
  VT acc = (VT)(0);
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) acc += a[i] * b[i];
  reduce_group(part, VSUM(acc), sums);
}
kernel void stream_read(global const VT* a, global TYPE* sums, local TYPE* part, ulong n) {
  VT acc = (VT)(0);
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) acc += a[i];
  reduce_group(part, VSUM(acc), sums);
}
kernel void touch(global uchar* p, ulong stride, ulong n) {
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) p[i * stride] = (uchar)(i + 1);
}
kernel void spmv(global const ulong* rows, global const uint* cols, global const TYPE* vals, global const TYPE* x,
                 global TYPE* y, ulong n) {
  for (size_t r = get_global_id(0); r < n; r += get_global_size(0)) {
    TYPE acc = 0;
    for (ulong k = rows[r]; k < rows[r + 1]; ++k) acc += vals[k] * x[cols[k]];
    y[r] = acc;
  }
}
)CLC";

const std::vector<std::string> kKernels = {"copy", "mul", "add", "triad", "dot", "read"};
const std::vector<std::string> kMemories = {"device", "pinned", "host", "svm-coarse", "svm-fine"};

int arrays_moved(const std::string& k) {
  return (k == "add" || k == "triad") ? 3 : k == "read" ? 1 : 2;
}

// Host memory the application allocated: page-aligned, freed with the object.
struct AppMemory {
  explicit AppMemory(size_t bytes) {
    if (posix_memalign(&p, 4096, std::max<size_t>(bytes, 1)) != 0) throw std::runtime_error("posix_memalign failed");
  }
  ~AppMemory() { std::free(p); }
  AppMemory(const AppMemory&) = delete;
  AppMemory& operator=(const AppMemory&) = delete;
  void* p = nullptr;
};

// One array a kernel reads or writes, in one memory kind: a cl_mem (device, pinned, host) or an SVM
// pointer. fill()/get() move its contents from/to the host outside any timing.
class Array {
 public:
  Array(ClDevice& dev, const std::string& memory, size_t bytes) : dev_(dev), memory_(memory), bytes_(bytes) {
    using namespace cl;
    const Api& api = dev.api();
    cl_int err = CL_SUCCESS;
    if (memory == "svm-coarse" || memory == "svm-fine") {
      const cl_svm_mem_flags flags = CL_MEM_READ_WRITE | (memory == "svm-fine" ? CL_MEM_SVM_FINE_GRAIN_BUFFER : 0);
      svm_ = api.SVMAlloc(dev.context(), flags, std::max<size_t>(bytes, 64), 128);
      if (!svm_) throw std::runtime_error("clSVMAlloc of " + std::to_string(bytes) + " bytes (" + memory + ") failed");
      return;
    }
    cl_mem_flags flags = CL_MEM_READ_WRITE;
    void* host = nullptr;
    if (memory == "pinned") flags |= CL_MEM_ALLOC_HOST_PTR;
    if (memory == "host") {
      app_ = std::make_unique<AppMemory>(bytes);
      host = app_->p;
      flags |= CL_MEM_USE_HOST_PTR;
    }
    mem_ = api.CreateBuffer(dev.context(), flags, std::max<size_t>(bytes, 64), host, &err);
    cl_check(err, ("clCreateBuffer (" + memory + ")").c_str());
  }
  ~Array() {
    if (svm_) dev_.api().SVMFree(dev_.context(), svm_);
    if (mem_) dev_.api().ReleaseMemObject(mem_);
  }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  void bind(cl::cl_kernel k, cl::cl_uint i) {
    if (svm_)
      dev_.svm_arg(k, i, svm_);
    else
      dev_.arg(k, i, mem_);
  }
  void fill(const void* data) { move(const_cast<void*>(data), true); }
  void get(void* data) { move(data, false); }
  void* svm() const { return svm_; }

 private:
  void move(void* data, bool to_array) {
    using namespace cl;
    const Api& api = dev_.api();
    cl_command_queue q = dev_.queue(0);
    if (svm_) {
      if (memory_ == "svm-coarse")
        cl_check(api.EnqueueSVMMap(q, CL_TRUE, to_array ? CL_MAP_WRITE : CL_MAP_READ, svm_, bytes_, 0, nullptr, nullptr),
                 "clEnqueueSVMMap");
      if (to_array)
        std::memcpy(svm_, data, bytes_);
      else
        std::memcpy(data, svm_, bytes_);
      if (memory_ == "svm-coarse") cl_check(api.EnqueueSVMUnmap(q, svm_, 0, nullptr, nullptr), "clEnqueueSVMUnmap");
      cl_check(api.Finish(q), "clFinish");
      return;
    }
    if (to_array)
      cl_check(api.EnqueueWriteBuffer(q, mem_, CL_TRUE, 0, bytes_, data, 0, nullptr, nullptr), "clEnqueueWriteBuffer");
    else
      cl_check(api.EnqueueReadBuffer(q, mem_, CL_TRUE, 0, bytes_, data, 0, nullptr, nullptr), "clEnqueueReadBuffer");
  }

  ClDevice& dev_;
  std::string memory_;
  size_t bytes_;
  cl::cl_mem mem_ = nullptr;
  void* svm_ = nullptr;
  std::unique_ptr<AppMemory> app_;
};

// Device timestamps of a set of events: last end - first start (seconds), -1 if unavailable.
double device_span(const cl::Api& api, const std::vector<cl::cl_event>& events) {
  cl::cl_ulong first = ~0ull, last = 0;
  for (auto e : events) {
    cl::cl_ulong start = 0, end = 0;
    if (api.GetEventProfilingInfo(e, cl::CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) != cl::CL_SUCCESS ||
        api.GetEventProfilingInfo(e, cl::CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) != cl::CL_SUCCESS)
      return -1.0;
    first = std::min(first, start);
    last = std::max(last, end);
  }
  return last > first ? (last - first) * 1e-9 : -1.0;
}

template <class T>
struct Stream {
  ClDevice& dev;
  const std::string memory;
  size_t elements;  // per array
  int width;
  size_t local;

  // One (kernel, groups, instances) point: warm-up, timed iterations, then the check.
  void point(const std::string& kname, size_t groups, int instances, int iterations, int warmup, double max_seconds) {
    const size_t bytes = elements * sizeof(T);
    std::vector<T> a, b, c;
    stream_initial(elements, a, b, c);
    std::vector<std::unique_ptr<Array>> A, B, C, S;
    std::vector<cl::cl_kernel> kernels;
    const cl::cl_ulong nvec = elements / static_cast<size_t>(width);
    const T scalar = static_cast<T>(kStreamScalar);
    const bool covers = groups * local >= nvec && kname != "dot" && kname != "read";  // one element per work-item
    for (int k = 0; k < instances; ++k) {
      A.push_back(std::make_unique<Array>(dev, memory, bytes));
      B.push_back(std::make_unique<Array>(dev, memory, bytes));
      C.push_back(std::make_unique<Array>(dev, memory, bytes));
      S.push_back(std::make_unique<Array>(dev, "device", groups * sizeof(T)));
      A[k]->fill(a.data());
      B[k]->fill(b.data());
      C[k]->fill(c.data());
      cl::cl_kernel kern = dev.kernel(("stream_" + kname + (covers ? "_1" : "")).c_str());
      if (kname == "copy") {
        A[k]->bind(kern, 0), C[k]->bind(kern, 1), dev.arg(kern, 2, nvec);
      } else if (kname == "mul") {
        B[k]->bind(kern, 0), C[k]->bind(kern, 1), dev.arg(kern, 2, scalar), dev.arg(kern, 3, nvec);
      } else if (kname == "add") {
        A[k]->bind(kern, 0), B[k]->bind(kern, 1), C[k]->bind(kern, 2), dev.arg(kern, 3, nvec);
      } else if (kname == "triad") {
        A[k]->bind(kern, 0), B[k]->bind(kern, 1), C[k]->bind(kern, 2), dev.arg(kern, 3, scalar), dev.arg(kern, 4, nvec);
      } else if (kname == "dot") {
        A[k]->bind(kern, 0), B[k]->bind(kern, 1), S[k]->bind(kern, 2);
        cl_check(dev.api().SetKernelArg(kern, 3, local * sizeof(T), nullptr), "clSetKernelArg(local)");
        dev.arg(kern, 4, nvec);
      } else {  // read
        A[k]->bind(kern, 0), S[k]->bind(kern, 1);
        cl_check(dev.api().SetKernelArg(kern, 2, local * sizeof(T), nullptr), "clSetKernelArg(local)");
        dev.arg(kern, 3, nvec);
      }
      kernels.push_back(kern);
    }
    const double moved = static_cast<double>(arrays_moved(kname)) * static_cast<double>(bytes) * instances;
    const size_t global = groups * local;
    const auto& api = dev.api();
    const auto started = Clock::now();
    int done = 0;
    for (int it = 0; it < warmup + iterations; ++it) {
      std::vector<cl::cl_event> events(static_cast<size_t>(instances), nullptr);
      const auto t0 = Clock::now();
      for (int k = 0; k < instances; ++k) {
        cl_check(api.EnqueueNDRangeKernel(dev.queue(static_cast<size_t>(k)), kernels[k], 1, nullptr, &global, &local, 0,
                                          nullptr, &events[k]),
                 "clEnqueueNDRangeKernel");
        cl_check(api.Flush(dev.queue(static_cast<size_t>(k))), "clFlush");
      }
      for (int k = 0; k < instances; ++k) cl_check(api.Finish(dev.queue(static_cast<size_t>(k))), "clFinish");
      const double host = since(t0);
      const double device = device_span(api, events);
      for (auto e : events) api.ReleaseEvent(e);
      if (it < warmup) continue;
      JsonLine()
          .str("record", "sample")
          .str("kernel", kname)
          .str("memory", memory)
          .str("type", sizeof(T) == 8 ? "double" : "float")
          .integer("width", width)
          .integer("groups", static_cast<long long>(groups))
          .integer("local", static_cast<long long>(local))
          .integer("instances", instances)
          .boolean("grid_stride", !covers)
          .integer("size_bytes", static_cast<long long>(bytes))
          .integer("iteration", it - warmup)
          .number("host_seconds", host)
          .number("device_seconds", device)
          .number("bytes", moved)
          .emit();
      ++done;
      if (max_seconds > 0 && since(started) > max_seconds && done >= 2) break;
    }
    // The check: every instance's output against the host's replay of the same kernel.
    std::string what;
    for (int k = 0; k < instances && what.empty(); ++k) {
      std::vector<T> out(stream_reduces(kname) ? groups : elements);
      const char which = stream_output(kname);
      (stream_reduces(kname) ? S[k] : which == 'c' ? C[k] : which == 'b' ? B[k] : A[k])->get(out.data());
      what = stream_check(kname, k, a, b, c, out);
    }
    stream_validation(kname, memory, sizeof(T) == 8, width, static_cast<long long>(groups), instances, what);
  }
};

// The work-group size: 256, within the device's and the kernel's limits, a power of two (the
// reduction halves it).
size_t pick_local(ClDevice& dev, const char* kernel) {
  cl::cl_kernel k = dev.kernel(kernel);
  size_t most = 0;
  dev.api().GetKernelWorkGroupInfo(k, dev.id(), cl::CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most, nullptr);
  size_t local = std::min<size_t>({256, dev.max_group, most ? most : 256});
  size_t p = 1;
  while (p * 2 <= local) p *= 2;
  return p;
}

std::string options(const std::string& type, int width) {
  return std::string("-DTYPE=") + type + " -DIS_DOUBLE=" + (type == "double" ? "1" : "0") +
         " -DW=" + std::to_string(width);
}

int run_stream_mode(Args& args, int device) {
  const auto kernels = args.words("kernels", "copy,mul,add,triad,dot,read", kKernels);
  const auto memories = args.words("memory", "device", kMemories);
  const auto types = args.words("types", "float", {"float", "double"});
  const auto widths = args.integers("widths", "1", 1, 16);
  const long long size = args.integer("size", 64 << 20, 1024, 1ll << 40);
  const auto groups_list = args.integers("groups", "0", 0, 1 << 24);
  const auto instances_list = args.integers("instances", "1", 1, 64);
  const int iterations = static_cast<int>(args.integer("iterations", 20, 1, 1000000));
  const int warmup = static_cast<int>(args.integer("warmup", 2, 0, 1000));
  const double max_seconds = args.real("max-time", 0.0, 0.0, 3600.0);
  args.finish();
  for (long long w : widths)
    if (w != 1 && w != 2 && w != 4 && w != 8 && w != 16)
      throw BadArgument("--widths " + std::to_string(w) + " is not a vector width; allowed: 1, 2, 4, 8, 16");
  const int most_instances = static_cast<int>(*std::max_element(instances_list.begin(), instances_list.end()));
  ClDevice dev(device);
  if (static_cast<unsigned long long>(size) > dev.max_alloc)
    throw BadArgument("--size " + std::to_string(size) + " is above the device's largest allocation, " +
                      std::to_string(dev.max_alloc) + " bytes");
  cl::cl_ulong fp64 = 0;
  dev.api().GetDeviceInfo(dev.id(), cl::CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, nullptr);
  dev.open(static_cast<size_t>(most_instances), true);
  JsonLine()
      .str("record", "setup")
      .str("device_name", dev.text(cl::CL_DEVICE_NAME))
      .integer("device_index", device)
      .integer("compute_units", dev.units)
      .integer("max_work_group_size", static_cast<long long>(dev.max_group))
      .integer("max_allocation_bytes", static_cast<long long>(dev.max_alloc))
      .boolean("double", fp64 != 0)
      .integer("svm_capabilities", static_cast<long long>(dev.svm_caps))
      .emit();
  for (const std::string& memory : memories) {
    const bool svm = memory.rfind("svm", 0) == 0;
    if (svm && !(dev.svm_caps & (memory == "svm-fine" ? cl::CL_DEVICE_SVM_FINE_GRAIN_BUFFER
                                                      : cl::CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))) {
      JsonLine().str("record", "unavailable").str("memory", memory).str("reason", "the device has no " + memory + " SVM").emit();
      continue;
    }
    for (const std::string& type : types) {
      if (type == "double" && !fp64) {
        JsonLine().str("record", "unavailable").str("memory", memory).str("type", type)
            .str("reason", "the device has no double precision (cl_khr_fp64)").emit();
        continue;
      }
      for (long long width : widths) {
        ClDevice built(device);
        built.open(static_cast<size_t>(most_instances), true);
        built.build(kSource, {options(type, static_cast<int>(width))});
        const size_t local = pick_local(built, "stream_dot");
        const size_t elements = static_cast<size_t>(size) / (type == "double" ? 8 : 4) / static_cast<size_t>(width) *
                                static_cast<size_t>(width);
        for (long long g : groups_list) {
          for (long long instances : instances_list) {
            for (const std::string& kname : kernels) {
              // Auto: one work-item per vector for the streaming kernels (as BabelStream); for the
              // reductions about 8 vectors per work-item, at least 4 groups per compute unit
              // (BabelStream's fixed 4 per unit leaves a CPU device's work-items long serial loops).
              size_t groups = static_cast<size_t>(g);
              const size_t vectors = elements / static_cast<size_t>(width);
              if (groups == 0)
                groups = (kname == "dot" || kname == "read")
                             ? std::max<size_t>(4 * static_cast<size_t>(built.units), vectors / (local * 8))
                             : std::max<size_t>(1, std::min<size_t>((vectors + local - 1) / local, 1 << 20));
              if (type == "double") {
                Stream<double> s{built, memory, elements, static_cast<int>(width), local};
                s.point(kname, groups, static_cast<int>(instances), iterations, warmup, max_seconds);
              } else {
                Stream<float> s{built, memory, elements, static_cast<int>(width), local};
                s.point(kname, groups, static_cast<int>(instances), iterations, warmup, max_seconds);
              }
            }
          }
        }
      }
    }
  }
  return 0;
}

int run_faults_mode(Args& args, int device) {
  const auto memories = args.words("memory", "svm-fine,svm-coarse", {"svm-fine", "svm-coarse"});
  const long long size = args.integer("size", 64 << 20, 4096, 1ll << 40);
  const auto strides = args.integers("strides", "4096", 1, 1 << 30);
  const int repeats = static_cast<int>(args.integer("repeats", 5, 1, 100000));
  args.finish();
  ClDevice dev(device);
  dev.open(1, true);
  dev.build(kSource, {options("float", 1)});
  cl::cl_kernel touch = dev.kernel("touch");
  const auto& api = dev.api();
  cl::cl_command_queue q = dev.queue(0);
  const size_t local = pick_local(dev, "touch");
  for (const std::string& memory : memories) {
    const bool fine = memory == "svm-fine";
    if (!(dev.svm_caps & (fine ? cl::CL_DEVICE_SVM_FINE_GRAIN_BUFFER : cl::CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))) {
      JsonLine().str("record", "unavailable").str("memory", memory).str("reason", "the device has no " + memory + " SVM").emit();
      continue;
    }
    for (long long stride : strides) {
      const cl::cl_ulong touches = static_cast<cl::cl_ulong>(size / stride);
      const size_t groups = std::max<size_t>(1, std::min<size_t>((touches + local - 1) / local, 4096));
      const size_t global = groups * local;
      for (int r = 0; r < repeats; ++r) {
        Array fresh(dev, memory, static_cast<size_t>(size));  // never touched by the host
        fresh.bind(touch, 0);
        dev.arg(touch, 1, static_cast<cl::cl_ulong>(stride));
        dev.arg(touch, 2, touches);
        double seconds[2];
        double device_seconds[2];
        for (int pass = 0; pass < 2; ++pass) {
          cl::cl_event e = nullptr;
          const auto t0 = Clock::now();
          cl_check(api.EnqueueNDRangeKernel(q, touch, 1, nullptr, &global, &local, 0, nullptr, &e), "clEnqueueNDRangeKernel");
          cl_check(api.Finish(q), "clFinish");
          seconds[pass] = since(t0);
          device_seconds[pass] = device_span(api, {e});
          api.ReleaseEvent(e);
        }
        // The host reads back what the device wrote, one byte per stride, and checks it.
        const auto t0 = Clock::now();
        auto* p = static_cast<unsigned char*>(fresh.svm());
        if (!fine) cl_check(api.EnqueueSVMMap(q, cl::CL_TRUE, cl::CL_MAP_READ, p, static_cast<size_t>(size), 0, nullptr, nullptr),
                            "clEnqueueSVMMap");
        long long wrong = -1;
        for (cl::cl_ulong i = 0; i < touches && wrong < 0; ++i)
          if (p[i * stride] != static_cast<unsigned char>(i + 1)) wrong = static_cast<long long>(i);
        if (!fine) cl_check(api.EnqueueSVMUnmap(q, p, 0, nullptr, nullptr), "clEnqueueSVMUnmap");
        cl_check(api.Finish(q), "clFinish");
        const double back = since(t0);
        JsonLine()
            .str("record", "sample")
            .str("memory", memory)
            .integer("size_bytes", size)
            .integer("stride_bytes", stride)
            .integer("touches", static_cast<long long>(touches))
            .integer("repeat", r)
            .number("first_seconds", seconds[0])
            .number("second_seconds", seconds[1])
            .number("first_device_seconds", device_seconds[0])
            .number("second_device_seconds", device_seconds[1])
            .number("host_back_seconds", back)
            .boolean("ok", wrong < 0)
            .str("what", wrong < 0 ? "every touched byte read back" : "touch " + std::to_string(wrong) + " wrong")
            .emit();
      }
    }
  }
  return 0;
}

int run_align_mode(Args& args, int device) {
  const auto offsets = args.integers("offsets", "0,1,8,16,32,64,256,4096", 0, 1 << 20);
  const auto allocators = args.words("allocators", "runtime,application", {"runtime", "application"});
  const auto directions = args.words("directions", "h2d,d2h", {"h2d", "d2h"});
  const long long size = args.integer("size", 16 << 20, 1, 1ll << 40);
  const int iterations = static_cast<int>(args.integer("iterations", 10, 1, 1000000));
  args.finish();
  ClDevice dev(device);
  dev.open(1, true);
  const auto& api = dev.api();
  cl::cl_command_queue q = dev.queue(0);
  const size_t bytes = static_cast<size_t>(size);
  const long long most = *std::max_element(offsets.begin(), offsets.end());
  const size_t span = bytes + static_cast<size_t>(most) + 4096;
  ClDevice::Buffer target = dev.buffer(bytes);
  for (const std::string& allocator : allocators) {
    // Runtime: a CL_MEM_ALLOC_HOST_PTR buffer mapped for its host pointer (what the vendors advise
    // for DMA-speed copies); application: posix_memalign'ed pages, as seed 004's engineer used.
    std::unique_ptr<AppMemory> app;
    cl::cl_mem pinned = nullptr;
    unsigned char* base = nullptr;
    cl::cl_int err = cl::CL_SUCCESS;
    if (allocator == "runtime") {
      pinned = api.CreateBuffer(dev.context(), cl::CL_MEM_READ_WRITE | cl::CL_MEM_ALLOC_HOST_PTR, span, nullptr, &err);
      cl_check(err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
      base = static_cast<unsigned char*>(api.EnqueueMapBuffer(q, pinned, cl::CL_TRUE, cl::CL_MAP_READ | cl::CL_MAP_WRITE, 0,
                                                              span, 0, nullptr, nullptr, &err));
      cl_check(err, "clEnqueueMapBuffer");
    } else {
      app = std::make_unique<AppMemory>(span);
      base = static_cast<unsigned char*>(app->p);
    }
    const uintptr_t page = (reinterpret_cast<uintptr_t>(base) + 4095) / 4096 * 4096;
    for (long long offset : offsets) {
      unsigned char* host = reinterpret_cast<unsigned char*>(page + static_cast<uintptr_t>(offset));
      for (const std::string& direction : directions) {
        for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 7 + offset);
        if (direction == "d2h") {
          dev.write(target, host, bytes);  // the device holds the pattern; the host side is cleared
          std::memset(host, 0, bytes);
        }
        for (int it = 0; it < iterations + 1; ++it) {
          cl::cl_event e = nullptr;
          const auto t0 = Clock::now();
          if (direction == "h2d")
            err = api.EnqueueWriteBuffer(q, target.get(), cl::CL_TRUE, 0, bytes, host, 0, nullptr, &e);
          else
            err = api.EnqueueReadBuffer(q, target.get(), cl::CL_TRUE, 0, bytes, host, 0, nullptr, &e);
          cl_check(err, direction == "h2d" ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer");
          const double host_seconds = since(t0);
          const double device_seconds = device_span(api, {e});
          api.ReleaseEvent(e);
          if (it == 0) continue;  // warm-up
          JsonLine()
              .str("record", "sample")
              .str("allocator", allocator)
              .integer("offset_bytes", offset)
              .str("direction", direction)
              .integer("size_bytes", size)
              .integer("iteration", it - 1)
              .number("host_seconds", host_seconds)
              .number("device_seconds", device_seconds)
              .emit();
        }
        std::vector<unsigned char> check(bytes);
        if (direction == "h2d")
          dev.read(target, check.data(), bytes);
        else
          std::memcpy(check.data(), host, bytes);
        long long wrong = -1;
        for (size_t i = 0; i < bytes && wrong < 0; ++i)
          if (check[i] != static_cast<unsigned char>(i * 7 + offset)) wrong = static_cast<long long>(i);
        JsonLine()
            .str("record", "validation")
            .str("allocator", allocator)
            .integer("offset_bytes", offset)
            .str("direction", direction)
            .boolean("ok", wrong < 0)
            .str("what", wrong < 0 ? "every byte as sent" : "byte " + std::to_string(wrong) + " wrong")
            .emit();
      }
    }
    if (pinned) {
      api.EnqueueUnmapMemObject(q, pinned, base, 0, nullptr, nullptr);
      api.Finish(q);
      api.ReleaseMemObject(pinned);
    }
  }
  return 0;
}

template <class T>
void spmv_run(ClDevice& dev, std::ifstream& in, uint64_t rows, uint64_t cols, uint64_t nnz,
              const std::vector<long long>& groups_list, const std::vector<long long>& instances_list, int iterations,
              const std::string& output) {
  std::vector<uint64_t> row_ptr(rows + 1);
  std::vector<uint32_t> col(nnz);
  std::vector<T> val(nnz), x(cols);
  in.read(reinterpret_cast<char*>(row_ptr.data()), static_cast<std::streamsize>(row_ptr.size() * 8));
  in.read(reinterpret_cast<char*>(col.data()), static_cast<std::streamsize>(col.size() * 4));
  in.read(reinterpret_cast<char*>(val.data()), static_cast<std::streamsize>(val.size() * sizeof(T)));
  in.read(reinterpret_cast<char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(T)));
  if (!in) throw BadArgument("--matrix: the file ends early (not a matrix xferlab wrote?)");
  if (row_ptr[0] != 0 || row_ptr[rows] != nnz) throw BadArgument("--matrix: row pointers do not span the entries");
  for (uint32_t c : col)
    if (c >= cols) throw BadArgument("--matrix: a column index is out of range");
  const int most = static_cast<int>(*std::max_element(instances_list.begin(), instances_list.end()));
  struct Copy {
    ClDevice::Buffer r, c, v, x, y;
  };
  std::vector<Copy> copies;
  cl::cl_kernel kern_proto = nullptr;
  (void)kern_proto;
  for (int k = 0; k < most; ++k) {
    copies.push_back(Copy{dev.buffer(row_ptr.size() * 8), dev.buffer(col.size() * 4), dev.buffer(val.size() * sizeof(T)),
                          dev.buffer(x.size() * sizeof(T)), dev.buffer(rows * sizeof(T))});
    dev.write(copies[k].r, row_ptr.data(), row_ptr.size() * 8);
    dev.write(copies[k].c, col.data(), col.size() * 4);
    dev.write(copies[k].v, val.data(), val.size() * sizeof(T));
    dev.write(copies[k].x, x.data(), x.size() * sizeof(T));
  }
  const size_t local = pick_local(dev, "spmv");
  // Bytes: the matrix (values, column indices, row pointers), x once, y once: the least an SpMV moves.
  const double moved = static_cast<double>(nnz) * (sizeof(T) + 4) + static_cast<double>(rows + 1) * 8 +
                       static_cast<double>(cols + rows) * sizeof(T);
  const auto& api = dev.api();
  for (long long g : groups_list) {
    const size_t groups = g ? static_cast<size_t>(g) : std::max<size_t>(1, (rows + local - 1) / local);
    const size_t global = groups * local;
    for (long long instances : instances_list) {
      std::vector<cl::cl_kernel> kernels;
      for (int k = 0; k < instances; ++k) {
        cl::cl_kernel kern = dev.kernel("spmv");
        dev.arg(kern, 0, copies[k].r), dev.arg(kern, 1, copies[k].c), dev.arg(kern, 2, copies[k].v);
        dev.arg(kern, 3, copies[k].x), dev.arg(kern, 4, copies[k].y), dev.arg(kern, 5, static_cast<cl::cl_ulong>(rows));
        kernels.push_back(kern);
      }
      for (int it = 0; it < iterations + 1; ++it) {
        std::vector<cl::cl_event> events(static_cast<size_t>(instances), nullptr);
        const auto t0 = Clock::now();
        for (int k = 0; k < instances; ++k) {
          cl_check(api.EnqueueNDRangeKernel(dev.queue(static_cast<size_t>(k)), kernels[k], 1, nullptr, &global, &local, 0,
                                            nullptr, &events[k]),
                   "clEnqueueNDRangeKernel");
          cl_check(api.Flush(dev.queue(static_cast<size_t>(k))), "clFlush");
        }
        for (int k = 0; k < instances; ++k) cl_check(api.Finish(dev.queue(static_cast<size_t>(k))), "clFinish");
        const double host = since(t0);
        const double device = device_span(api, events);
        for (auto e : events) api.ReleaseEvent(e);
        if (it == 0) continue;
        JsonLine()
            .str("record", "sample")
            .str("kernel", "spmv")
            .str("type", sizeof(T) == 8 ? "double" : "float")
            .integer("rows", static_cast<long long>(rows))
            .integer("nnz", static_cast<long long>(nnz))
            .integer("groups", static_cast<long long>(groups))
            .integer("local", static_cast<long long>(local))
            .integer("instances", instances)
            .integer("iteration", it - 1)
            .number("host_seconds", host)
            .number("device_seconds", device)
            .number("bytes", moved * static_cast<double>(instances))
            .number("flops", 2.0 * static_cast<double>(nnz) * static_cast<double>(instances))
            .emit();
      }
      // Every instance's y to the output file, one after the other, for the caller to check.
      std::ofstream out(output + "." + std::to_string(groups) + "x" + std::to_string(instances), std::ios::binary);
      std::vector<T> y(rows);
      for (int k = 0; k < instances; ++k) {
        dev.read(copies[k].y, y.data(), rows * sizeof(T));
        out.write(reinterpret_cast<const char*>(y.data()), static_cast<std::streamsize>(rows * sizeof(T)));
      }
      if (!out) throw std::runtime_error("cannot write " + output);
      JsonLine()
          .str("record", "result")
          .integer("groups", static_cast<long long>(groups))
          .integer("instances", instances)
          .str("file", output + "." + std::to_string(groups) + "x" + std::to_string(instances))
          .emit();
    }
  }
}

int run_spmv_mode(Args& args, int device) {
  const std::string matrix = args.text("matrix", "");
  const std::string output = args.text("output", "");
  const auto groups_list = args.integers("groups", "0", 0, 1 << 24);
  const auto instances_list = args.integers("instances", "1", 1, 64);
  const int iterations = static_cast<int>(args.integer("iterations", 20, 1, 1000000));
  args.finish();
  if (matrix.empty() || output.empty()) throw BadArgument("spmv needs --matrix FILE and --output PREFIX");
  std::ifstream in(matrix, std::ios::binary);
  if (!in) throw BadArgument("--matrix '" + matrix + "' cannot be read");
  char magic[8] = {0};
  uint64_t head[4] = {0};  // rows, cols, nnz, value bytes (4 or 8)
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(head), sizeof head);
  if (!in || std::memcmp(magic, "XFCSR1\0\0", 8) != 0 || (head[3] != 4 && head[3] != 8))
    throw BadArgument("--matrix '" + matrix + "' is not a CSR file xferlab wrote");
  const int most = static_cast<int>(*std::max_element(instances_list.begin(), instances_list.end()));
  ClDevice dev(device);
  dev.open(static_cast<size_t>(most), true);
  dev.build(kSource, {options(head[3] == 8 ? "double" : "float", 1)});
  JsonLine()
      .str("record", "setup")
      .str("device_name", dev.text(cl::CL_DEVICE_NAME))
      .integer("device_index", device)
      .integer("compute_units", dev.units)
      .integer("rows", static_cast<long long>(head[0]))
      .integer("cols", static_cast<long long>(head[1]))
      .integer("nnz", static_cast<long long>(head[2]))
      .emit();
  if (head[3] == 8)
    spmv_run<double>(dev, in, head[0], head[1], head[2], groups_list, instances_list, iterations, output);
  else
    spmv_run<float>(dev, in, head[0], head[1], head[2], groups_list, instances_list, iterations, output);
  return 0;
}

// Device to device between two OpenCL devices: "runtime" (both in one context, clEnqueueCopyBuffer
// on the destination's queue: the runtime moves the bytes as it can, peer or through the host; a
// write on the source's queue first puts the data there) and "staged" (a read on the source's queue
// into pinned host memory, a write on the destination's). Both timed with the host clock, checked.
int run_d2d_mode(Args& args, int device) {
  using namespace cl;
  const int peer = static_cast<int>(args.integer("peer", 1, 0, 1023));
  const long long size = args.integer("size", 64 << 20, 1, 1ll << 40);
  const int iterations = static_cast<int>(args.integer("iterations", 10, 1, 1000000));
  args.finish();
  Api api{};
  std::string why = load(api);
  if (!why.empty()) throw NotAvailable(why);
  auto all = all_devices(api, why);
  if (all.size() < 2)
    throw NotAvailable("device to device needs two OpenCL devices; this machine has " + std::to_string(all.size()) +
                       " (PoCL 3 gives two with POCL_DEVICES=\"pthread pthread\"; newer PoCL \"cpu cpu\")");
  for (int d : {device, peer})
    if (d >= static_cast<int>(all.size()))
      throw BadArgument("device " + std::to_string(d) + " does not exist; OpenCL devices: 0.." + std::to_string(all.size() - 1));
  if (device == peer) throw BadArgument("--peer " + std::to_string(peer) + " is the source device itself");
  const cl_device_id ids[2] = {all[device].second, all[peer].second};
  const bool one_platform = all[device].first == all[peer].first;
  cl_int err = CL_SUCCESS;
  const size_t bytes = static_cast<size_t>(size);
  std::vector<unsigned char> pattern(bytes), back(bytes);
  for (size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>(i * 13 + 5);
  // One context per device for the staged path (also across platforms), one for both otherwise.
  struct Side {
    cl_context context = nullptr;
    cl_command_queue queue = nullptr;
    cl_mem buffer = nullptr;
  };
  JsonLine()
      .str("record", "setup")
      .str("device_name", device_text(api, ids[0], CL_DEVICE_NAME))
      .integer("device_index", device)
      .str("peer_name", device_text(api, ids[1], CL_DEVICE_NAME))
      .integer("peer_index", peer)
      .boolean("one_platform", one_platform)
      .emit();
  for (const std::string path : {"staged", "runtime"}) {
    if (path == "runtime" && !one_platform) {
      JsonLine().str("record", "unavailable").str("path", path)
          .str("reason", "the two devices are on different platforms: no context holds both").emit();
      continue;
    }
    Side side[2];
    cl_context shared = nullptr;
    if (path == "runtime") {
      shared = api.CreateContext(nullptr, 2, ids, nullptr, nullptr, &err);
      cl_check(err, "clCreateContext (two devices)");
    }
    cl_mem pinned = nullptr;
    void* host = nullptr;
    for (int k = 0; k < 2; ++k) {
      side[k].context = shared ? shared : api.CreateContext(nullptr, 1, &ids[k], nullptr, nullptr, &err);
      cl_check(err, "clCreateContext");
      side[k].queue = make_queue(api, side[k].context, ids[k], false, err);
      cl_check(err, "clCreateCommandQueue");
      side[k].buffer = api.CreateBuffer(side[k].context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
      cl_check(err, "clCreateBuffer");
    }
    if (path == "staged") {
      pinned = api.CreateBuffer(side[0].context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &err);
      cl_check(err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
      host = api.EnqueueMapBuffer(side[0].queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr,
                                  nullptr, &err);
      cl_check(err, "clEnqueueMapBuffer");
    }
    for (int it = 0; it < iterations + 1; ++it) {
      // The source device gets the data (untimed), the destination is cleared.
      cl_check(api.EnqueueWriteBuffer(side[0].queue, side[0].buffer, CL_TRUE, 0, bytes, pattern.data(), 0, nullptr, nullptr),
               "clEnqueueWriteBuffer");
      std::fill(back.begin(), back.end(), 0);
      cl_check(api.EnqueueWriteBuffer(side[1].queue, side[1].buffer, CL_TRUE, 0, bytes, back.data(), 0, nullptr, nullptr),
               "clEnqueueWriteBuffer");
      const auto t0 = Clock::now();
      if (path == "staged") {
        cl_check(api.EnqueueReadBuffer(side[0].queue, side[0].buffer, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr),
                 "clEnqueueReadBuffer");
        cl_check(api.EnqueueWriteBuffer(side[1].queue, side[1].buffer, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr),
                 "clEnqueueWriteBuffer");
      } else {
        cl_check(api.EnqueueCopyBuffer(side[1].queue, side[0].buffer, side[1].buffer, 0, 0, bytes, 0, nullptr, nullptr),
                 "clEnqueueCopyBuffer");
        cl_check(api.Finish(side[1].queue), "clFinish");
      }
      const double seconds = since(t0);
      if (it == 0) continue;
      JsonLine()
          .str("record", "sample")
          .str("path", path)
          .integer("size_bytes", size)
          .integer("iteration", it - 1)
          .number("host_seconds", seconds)
          .emit();
    }
    cl_check(api.EnqueueReadBuffer(side[1].queue, side[1].buffer, CL_TRUE, 0, bytes, back.data(), 0, nullptr, nullptr),
             "clEnqueueReadBuffer");
    const bool ok = back == pattern;
    JsonLine().str("record", "validation").str("path", path).boolean("ok", ok)
        .str("what", ok ? "every byte on the peer as written on the source" : "the peer holds other bytes").emit();
    if (pinned) {
      api.EnqueueUnmapMemObject(side[0].queue, pinned, host, 0, nullptr, nullptr);
      api.Finish(side[0].queue);
      api.ReleaseMemObject(pinned);
    }
    for (int k = 0; k < 2; ++k) {
      if (side[k].buffer) api.ReleaseMemObject(side[k].buffer);
      if (side[k].queue) api.ReleaseCommandQueue(side[k].queue);
    }
    if (shared)
      api.ReleaseContext(shared);
    else
      for (int k = 0; k < 2; ++k) api.ReleaseContext(side[k].context);
  }
  return 0;
}

}  // namespace

int run_kernels_cuda(Args& args, int device, const std::string& mode);  // kernels_cuda.cpp

int run_kernels(Args& args) {
  const std::string backend = args.words("backend", "opencl", {"opencl", "cuda"}).front();
  const int device = static_cast<int>(args.integer("device", 0, 0, 1023));
  const std::string mode = args.words("mode", "stream", {"stream", "faults", "align", "spmv", "d2d", "ptx"}).front();
  if (backend == "cuda") return run_kernels_cuda(args, device, mode);  // kernels_cuda.cpp
  if (mode == "faults") return run_faults_mode(args, device);
  if (mode == "align") return run_align_mode(args, device);
  if (mode == "spmv") return run_spmv_mode(args, device);
  if (mode == "d2d") return run_d2d_mode(args, device);
  if (mode == "ptx") throw BadArgument("--mode ptx is the CUDA backend's (its kernels' PTX): add --backend cuda");
  return run_stream_mode(args, device);
}

}  // namespace xferlab
