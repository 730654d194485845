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
#include "kernels_cl.hpp"
#include "stream_check.hpp"

namespace xferlab {
namespace kcl {

const char* const kSource = R"CLC(
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

Launch launch_all(ClDevice& dev, const std::vector<cl::cl_kernel>& kernels, size_t global, size_t local) {
  const auto& api = dev.api();
  std::vector<cl::cl_event> events(kernels.size(), nullptr);
  const auto t0 = Clock::now();
  for (size_t k = 0; k < kernels.size(); ++k) {
    cl_check(api.EnqueueNDRangeKernel(dev.queue(k), kernels[k], 1, nullptr, &global, &local, 0, nullptr, &events[k]),
             "clEnqueueNDRangeKernel");
    cl_check(api.Flush(dev.queue(k)), "clFlush");
  }
  for (size_t k = 0; k < kernels.size(); ++k) cl_check(api.Finish(dev.queue(k)), "clFinish");
  Launch out;
  out.host_seconds = since(t0);
  out.device_seconds = device_span(api, events);
  for (auto e : events) api.ReleaseEvent(e);
  return out;
}

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

}  // namespace kcl

namespace {

using namespace kcl;

const std::vector<std::string> kKernels = {"copy", "mul", "add", "triad", "dot", "read"};
const std::vector<std::string> kMemories = {"device", "pinned", "host", "svm-coarse", "svm-fine"};

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
    const StreamPoint point{kname, memory, sizeof(T) == 8, width, static_cast<long long>(groups),
                            static_cast<long long>(local), instances, !covers, static_cast<long long>(bytes)};
    const auto started = Clock::now();
    int done = 0;
    for (int it = 0; it < warmup + iterations; ++it) {
      const Launch timed = launch_all(dev, kernels, groups * local, local);
      if (it < warmup) continue;
      stream_sample(point, it - warmup, timed.host_seconds, timed.device_seconds);
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
    stream_validation(point, what);
  }
};

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

}  // namespace

int run_kernels_cuda(Args& args, int device, const std::string& mode);  // kernels_cuda.cpp

int run_kernels(Args& args) {
  const std::string backend = args.words("backend", "opencl", {"opencl", "cuda"}).front();
  const int device = static_cast<int>(args.integer("device", 0, 0, 1023));
  const std::string mode = args.words("mode", "stream", {"stream", "faults", "align", "spmv", "d2d", "ptx"}).front();
  if (backend == "cuda") return run_kernels_cuda(args, device, mode);  // kernels_cuda.cpp
  if (mode == "faults") return kcl::run_faults_mode(args, device);
  if (mode == "align") return kcl::run_align_mode(args, device);
  if (mode == "spmv") return kcl::run_spmv_mode(args, device);
  if (mode == "d2d") return kcl::run_d2d_mode(args, device);
  if (mode == "ptx") throw BadArgument("--mode ptx is the CUDA backend's (its kernels' PTX): add --backend cuda");
  return run_stream_mode(args, device);
}

}  // namespace xferlab
