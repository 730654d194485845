// `xferlab-probe kernels --backend cuda`: BabelStream's kernels (copy, mul, add, triad, dot, read)
// on a CUDA GPU through the driver API (native/loaders/cuda_loader.hpp), over device memory
// (cuMemAlloc), pinned host memory (cuMemHostAlloc, mapped; a kernel reads it through its unified
// address: seed 001's kernel streaming CPU memory over the link), managed memory (cuMemAllocManaged)
// and managed memory prefetched to the device (cuMemPrefetchAsync); and the first touch of managed
// memory by a kernel (seed 001's page-fault cost), without and with a prefetch.
//
// The kernels are PTX written here (stream_ptx() builds them for f32 and f64), following NVIDIA's
// "Parallel Thread Execution ISA" reference: grid-stride loops over one element per thread, as the
// OpenCL kernels of kernels.cpp; dot and read leave one partial sum per thread, which the host adds.
// Width 1 only (the OpenCL path has vector widths). Timing as kernels.cpp: the host clock around
// launch on every instance's stream and the synchronization of all, and CUDA events around each.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../loaders/cuda_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "json.hpp"
#include "probe.hpp"
#include "stream_check.hpp"

namespace xferlab {

namespace collab {
std::string cuda_histogram_ptx();  // collab_cuda.cpp
}

using namespace cuda;

namespace {

using Clock = std::chrono::steady_clock;
#define XF_CU(d, fn, ...) cuda_check((d).fn(__VA_ARGS__), #fn)

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One kernel's PTX: `params` are the .param declarations, `body` the loop body for element %rd5
// (byte offset %rd8), with {T} the type (f32, f64) and {S} log2 of its size.
std::string entry(const std::string& name, const std::string& params, const std::string& loads,
                  const std::string& body, const std::string& after = "") {
  std::string text = ".visible .entry " + name + "(" + params + ")\n{\n" +
                     "  .reg .pred %p;\n  .reg .u32 %r<5>;\n  .reg .u64 %rd<20>;\n  .reg .{T} %f<8>;\n  .reg .u16 %rs<2>;\n" +
                     loads +
                     "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n  mov.u32 %r4, %nctaid.x;\n"
                     "  mul.wide.u32 %rd5, %r1, %r2;\n  cvt.u64.u32 %rd6, %r3;\n  add.u64 %rd5, %rd5, %rd6;\n"
                     "  mov.u64 %rd15, %rd5;\n"  // this thread's index, for the partial sums
                     "  mul.wide.u32 %rd7, %r4, %r2;\n"
                     "LOOP:\n  setp.ge.u64 %p, %rd5, %rd4;\n  @%p bra DONE;\n  shl.b64 %rd8, %rd5, {S};\n" +
                     body + "  add.u64 %rd5, %rd5, %rd7;\n  bra LOOP;\nDONE:\n" + after + "  ret;\n}\n";
  return text;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

std::string stream_ptx() {
  const std::string p3 = ".param .u64 a, .param .u64 b, .param .u64 c";
  const std::string ld3 = "  ld.param.u64 %rd1, [a];\n  ld.param.u64 %rd2, [b];\n  ld.param.u64 %rd3, [c];\n"
                          "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n  cvta.to.global.u64 %rd3, %rd3;\n";
  std::string kernels;
  // copy: c = a
  kernels += entry("xferlab_copy_{T}", ".param .u64 a, .param .u64 c, .param .u64 n",
                   "  ld.param.u64 %rd1, [a];\n  ld.param.u64 %rd3, [c];\n  ld.param.u64 %rd4, [n];\n"
                   "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd3, %rd3;\n",
                   "  add.u64 %rd9, %rd1, %rd8;\n  ld.global.{T} %f1, [%rd9];\n  add.u64 %rd10, %rd3, %rd8;\n"
                   "  st.global.{T} [%rd10], %f1;\n");
  // mul: b = s * c
  kernels += entry("xferlab_mul_{T}", ".param .u64 b, .param .u64 c, .param .{T} s, .param .u64 n",
                   "  ld.param.u64 %rd2, [b];\n  ld.param.u64 %rd3, [c];\n  ld.param.{T} %f0, [s];\n  ld.param.u64 %rd4, [n];\n"
                   "  cvta.to.global.u64 %rd2, %rd2;\n  cvta.to.global.u64 %rd3, %rd3;\n",
                   "  add.u64 %rd9, %rd3, %rd8;\n  ld.global.{T} %f1, [%rd9];\n  mul.rn.{T} %f2, %f0, %f1;\n"
                   "  add.u64 %rd10, %rd2, %rd8;\n  st.global.{T} [%rd10], %f2;\n");
  // add: c = a + b
  kernels += entry("xferlab_add_{T}", p3 + ", .param .u64 n", ld3 + "  ld.param.u64 %rd4, [n];\n",
                   "  add.u64 %rd9, %rd1, %rd8;\n  ld.global.{T} %f1, [%rd9];\n  add.u64 %rd10, %rd2, %rd8;\n"
                   "  ld.global.{T} %f2, [%rd10];\n  add.rn.{T} %f3, %f1, %f2;\n  add.u64 %rd11, %rd3, %rd8;\n"
                   "  st.global.{T} [%rd11], %f3;\n");
  // triad: a = b + s * c
  kernels += entry("xferlab_triad_{T}", p3 + ", .param .{T} s, .param .u64 n",
                   ld3 + "  ld.param.{T} %f0, [s];\n  ld.param.u64 %rd4, [n];\n",
                   "  add.u64 %rd9, %rd2, %rd8;\n  ld.global.{T} %f1, [%rd9];\n  add.u64 %rd10, %rd3, %rd8;\n"
                   "  ld.global.{T} %f2, [%rd10];\n  fma.rn.{T} %f3, %f0, %f2, %f1;\n  add.u64 %rd11, %rd1, %rd8;\n"
                   "  st.global.{T} [%rd11], %f3;\n");
  // dot: sums[thread] = sum of a * b over the thread's elements
  const std::string partial = "  shl.b64 %rd12, %rd15, {S};\n  add.u64 %rd13, %rd3, %rd12;\n  st.global.{T} [%rd13], %f5;\n";
  kernels += entry("xferlab_dot_{T}", ".param .u64 a, .param .u64 b, .param .u64 sums, .param .u64 n",
                   "  ld.param.u64 %rd1, [a];\n  ld.param.u64 %rd2, [b];\n  ld.param.u64 %rd3, [sums];\n"
                   "  ld.param.u64 %rd4, [n];\n  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n"
                   "  cvta.to.global.u64 %rd3, %rd3;\n  mov.{T} %f5, 0{Z};\n",
                   "  add.u64 %rd9, %rd1, %rd8;\n  ld.global.{T} %f1, [%rd9];\n  add.u64 %rd10, %rd2, %rd8;\n"
                   "  ld.global.{T} %f2, [%rd10];\n  fma.rn.{T} %f5, %f1, %f2, %f5;\n", partial);
  // read: sums[thread] = sum of a over the thread's elements
  kernels += entry("xferlab_read_{T}", ".param .u64 a, .param .u64 sums, .param .u64 n",
                   "  ld.param.u64 %rd1, [a];\n  ld.param.u64 %rd3, [sums];\n  ld.param.u64 %rd4, [n];\n"
                   "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd3, %rd3;\n  mov.{T} %f5, 0{Z};\n",
                   "  add.u64 %rd9, %rd1, %rd8;\n  ld.global.{T} %f1, [%rd9];\n  add.rn.{T} %f5, %f5, %f1;\n", partial);
  std::string module = "//\n// xferlab: BabelStream's kernels and a first-touch kernel (PTX written by xferlab)\n//\n"
                       ".version 6.0\n.target sm_50\n.address_size 64\n\n";
  module += replace_all(replace_all(replace_all(kernels, "{T}", "f32"), "{S}", "2"), "{Z}", "f00000000");
  module += replace_all(replace_all(replace_all(kernels, "{T}", "f64"), "{S}", "3"), "{Z}", "d0000000000000000");
  // touch: p[i * stride] = (u8)(i + 1), i < n
  module += replace_all(entry("xferlab_touch", ".param .u64 p, .param .u64 stride, .param .u64 n",
                              "  ld.param.u64 %rd1, [p];\n  ld.param.u64 %rd2, [stride];\n  ld.param.u64 %rd4, [n];\n"
                              "  cvta.to.global.u64 %rd1, %rd1;\n",
                              "  mul.lo.u64 %rd9, %rd5, %rd2;\n  add.u64 %rd10, %rd1, %rd9;\n  add.u64 %rd11, %rd5, 1;\n"
                              "  cvt.u16.u64 %rs1, %rd11;\n  st.global.u8 [%rd10], %rs1;\n"),
                        "{T}", "f32");
  return replace_all(module, "{S}", "0");
}

const std::vector<std::string> kKernels = {"copy", "mul", "add", "triad", "dot", "read"};
const std::vector<std::string> kMemories = {"device", "pinned", "managed", "managed-prefetch"};

struct Gpu {
  const Driver& d;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  std::string ptx;
  explicit Gpu(int index) : d(cuda_driver()) {
    int count = 0;
    XF_CU(d, cuDeviceGetCount, &count);
    if (index >= count)
      throw BadArgument("device " + std::to_string(index) + " does not exist; CUDA devices: 0.." + std::to_string(count - 1));
    XF_CU(d, cuDeviceGet, &dev, index);
    XF_CU(d, cuCtxCreate, &ctx, CU_CTX_SCHED_SPIN | CU_CTX_MAP_HOST, dev);
    ptx = stream_ptx();
    XF_CU(d, cuModuleLoadData, &module, ptx.c_str());
  }
  ~Gpu() {
    if (module) d.cuModuleUnload(module);
    if (ctx) d.cuCtxDestroy(ctx);
  }
  int attribute(CUdevice_attribute a) const {
    int v = 0;
    return d.cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
  }
  CUfunction function(const std::string& name) {
    CUfunction f = nullptr;
    XF_CU(d, cuModuleGetFunction, &f, module, name.c_str());
    return f;
  }
};

// An array in one memory kind, addressed by a unified pointer a kernel can use.
struct GpuArray {
  Gpu& g;
  std::string memory;
  size_t bytes;
  CUdeviceptr ptr = 0;
  void* host = nullptr;
  GpuArray(Gpu& gpu, const std::string& kind, size_t n) : g(gpu), memory(kind), bytes(std::max<size_t>(n, 1)) {
    if (memory == "device") {
      XF_CU(g.d, cuMemAlloc, &ptr, bytes);
    } else if (memory == "pinned") {
      XF_CU(g.d, cuMemHostAlloc, &host, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
      ptr = reinterpret_cast<CUdeviceptr>(host);  // unified addressing: the host pointer is the device's too
    } else {
      XF_CU(g.d, cuMemAllocManaged, &ptr, bytes, CU_MEM_ATTACH_GLOBAL);
      host = reinterpret_cast<void*>(ptr);
    }
  }
  ~GpuArray() {
    if (memory == "pinned")
      g.d.cuMemFreeHost(host);
    else if (ptr)
      g.d.cuMemFree(ptr);
  }
  GpuArray(const GpuArray&) = delete;
  GpuArray& operator=(const GpuArray&) = delete;
  void put(const void* data) {
    if (memory == "device")
      XF_CU(g.d, cuMemcpyHtoD, ptr, data, bytes);
    else
      std::memcpy(host, data, bytes);
    if (memory == "managed-prefetch") XF_CU(g.d, cuMemPrefetchAsync, ptr, bytes, g.dev, nullptr);
    XF_CU(g.d, cuCtxSynchronize);
  }
  void take(void* data) {
    XF_CU(g.d, cuCtxSynchronize);
    if (memory == "device")
      XF_CU(g.d, cuMemcpyDtoH, data, ptr, bytes);
    else
      std::memcpy(data, host, bytes);
  }
};

template <class T>
void cuda_point(Gpu& g, const std::string& memory, const std::string& kname, size_t elements, unsigned blocks,
                unsigned threads, int instances, int iterations, int warmup, double max_seconds) {
  const bool f64 = sizeof(T) == 8;
  const size_t bytes = elements * sizeof(T);
  std::vector<T> a, b, c;
  stream_initial(elements, a, b, c);
  const size_t partials = static_cast<size_t>(blocks) * threads;
  std::vector<std::unique_ptr<GpuArray>> A, B, C, S;
  std::vector<CUstream> streams(static_cast<size_t>(instances), nullptr);
  std::vector<CUevent> starts(streams.size(), nullptr), ends(streams.size(), nullptr);
  CUfunction f = g.function("xferlab_" + kname + (f64 ? "_f64" : "_f32"));
  const T scalar = static_cast<T>(kStreamScalar);
  unsigned long long n = elements;
  for (int k = 0; k < instances; ++k) {
    A.push_back(std::make_unique<GpuArray>(g, memory, bytes));
    B.push_back(std::make_unique<GpuArray>(g, memory, bytes));
    C.push_back(std::make_unique<GpuArray>(g, memory, bytes));
    S.push_back(std::make_unique<GpuArray>(g, "device", partials * sizeof(T)));
    A[k]->put(a.data());
    B[k]->put(b.data());
    C[k]->put(c.data());
    XF_CU(g.d, cuStreamCreate, &streams[k], CU_STREAM_NON_BLOCKING);
    XF_CU(g.d, cuEventCreate, &starts[k], CU_EVENT_DEFAULT);
    XF_CU(g.d, cuEventCreate, &ends[k], CU_EVENT_DEFAULT);
  }
  auto params = [&](int k, std::vector<void*>& p) {
    if (kname == "copy") p = {&A[k]->ptr, &C[k]->ptr, &n};
    else if (kname == "mul") p = {&B[k]->ptr, &C[k]->ptr, const_cast<T*>(&scalar), &n};
    else if (kname == "add") p = {&A[k]->ptr, &B[k]->ptr, &C[k]->ptr, &n};
    else if (kname == "triad") p = {&A[k]->ptr, &B[k]->ptr, &C[k]->ptr, const_cast<T*>(&scalar), &n};
    else if (kname == "dot") p = {&A[k]->ptr, &B[k]->ptr, &S[k]->ptr, &n};
    else p = {&A[k]->ptr, &S[k]->ptr, &n};
  };
  const StreamPoint point{kname, memory, f64, 1, blocks, threads, instances, true, static_cast<long long>(bytes)};
  const auto started = Clock::now();
  int done = 0;
  for (int it = 0; it < warmup + iterations; ++it) {
    const auto t0 = Clock::now();
    for (int k = 0; k < instances; ++k) {
      std::vector<void*> p;
      params(k, p);
      XF_CU(g.d, cuEventRecord, starts[k], streams[k]);
      XF_CU(g.d, cuLaunchKernel, f, blocks, 1, 1, threads, 1, 1, 0, streams[k], p.data(), nullptr);
      XF_CU(g.d, cuEventRecord, ends[k], streams[k]);
    }
    for (int k = 0; k < instances; ++k) XF_CU(g.d, cuStreamSynchronize, streams[k]);
    const double host = since(t0);
    float longest = 0;
    for (int k = 0; k < instances; ++k) {
      float ms = 0;
      if (g.d.cuEventElapsedTime(&ms, starts[k], ends[k]) == CUDA_SUCCESS) longest = std::max(longest, ms);
    }
    if (it < warmup) continue;
    stream_sample(point, it - warmup, host, longest > 0 ? longest * 1e-3 : -1.0);
    ++done;
    if (max_seconds > 0 && since(started) > max_seconds && done >= 2) break;
  }
  std::string what;
  for (int k = 0; k < instances && what.empty(); ++k) {
    std::vector<T> out(stream_reduces(kname) ? partials : elements);
    const char which = stream_output(kname);
    (stream_reduces(kname) ? S[k] : which == 'c' ? C[k] : which == 'b' ? B[k] : A[k])->take(out.data());
    what = stream_check(kname, k, a, b, c, out);
  }
  for (int k = 0; k < instances; ++k) {
    g.d.cuEventDestroy(starts[k]);
    g.d.cuEventDestroy(ends[k]);
    g.d.cuStreamDestroy(streams[k]);
  }
  stream_validation(point, what);
}

}  // namespace

// Called by run_kernels (kernels.cpp) for --backend cuda.
int run_kernels_cuda(Args& args, int device, const std::string& mode) {
  if (mode == "ptx") {  // the module, for a test or for ptxas on a GPU machine; needs no driver
    args.finish();
    const std::string ptx = stream_ptx();
    std::string names;
    for (size_t at = ptx.find(".entry "); at != std::string::npos; at = ptx.find(".entry ", at + 7))
      names += (names.empty() ? "[\"" : ",\"") + ptx.substr(at + 7, ptx.find('(', at) - at - 7) + "\"";
    int depth = 0;
    for (char c : ptx) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    JsonLine().str("record", "ptx").str("module", "stream").raw("entries", names + "]").integer("unclosed_braces", depth)
        .str("ptx", ptx).emit();
    JsonLine().str("record", "ptx").str("module", "collab-histogram").str("ptx", collab::cuda_histogram_ptx()).emit();
    return 0;
  }
  const std::string why = load_cuda();
  if (!why.empty()) throw NotAvailable(why);
  if (mode != "stream" && mode != "faults")
    throw NotAvailable("--mode " + mode + " runs on OpenCL devices only for now (CUDA: stream, faults, ptx)");
  if (mode == "faults") {
    const auto memories = args.words("memory", "managed,managed-prefetch", {"managed", "managed-prefetch"});
    const long long size = args.integer("size", 64 << 20, 4096, 1ll << 40);
    const auto strides = args.integers("strides", "4096", 1, 1 << 30);
    const int repeats = static_cast<int>(args.integer("repeats", 5, 1, 100000));
    args.finish();
    Gpu g(device);
    if (!g.attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)) throw NotAvailable("the device has no managed memory");
    CUfunction touch = g.function("xferlab_touch");
    CUstream stream = nullptr;
    XF_CU(g.d, cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
    for (const std::string& memory : memories) {
      for (long long stride : strides) {
        unsigned long long touches = static_cast<unsigned long long>(size / stride), st = static_cast<unsigned long long>(stride);
        const unsigned threads = 256, blocks = static_cast<unsigned>(std::max<unsigned long long>(
                                                   1, std::min<unsigned long long>((touches + threads - 1) / threads, 65535)));
        for (int r = 0; r < repeats; ++r) {
          GpuArray fresh(g, "managed", static_cast<size_t>(size));
          if (memory == "managed-prefetch") XF_CU(g.d, cuMemPrefetchAsync, fresh.ptr, fresh.bytes, g.dev, stream);
          XF_CU(g.d, cuStreamSynchronize, stream);
          double seconds[2];
          for (int pass = 0; pass < 2; ++pass) {
            void* p[] = {&fresh.ptr, &st, &touches};
            const auto t0 = Clock::now();
            XF_CU(g.d, cuLaunchKernel, touch, blocks, 1, 1, threads, 1, 1, 0, stream, p, nullptr);
            XF_CU(g.d, cuStreamSynchronize, stream);
            seconds[pass] = since(t0);
          }
          const auto t0 = Clock::now();
          auto* bytes = static_cast<unsigned char*>(fresh.host);
          long long wrong = -1;
          for (unsigned long long i = 0; i < touches && wrong < 0; ++i)
            if (bytes[i * st] != static_cast<unsigned char>(i + 1)) wrong = static_cast<long long>(i);
          const double back = since(t0);
          JsonLine()
              .str("record", "sample").str("memory", memory).integer("size_bytes", size).integer("stride_bytes", stride)
              .integer("touches", static_cast<long long>(touches)).integer("repeat", r)
              .number("first_seconds", seconds[0]).number("second_seconds", seconds[1])
              .number("host_back_seconds", back).boolean("ok", wrong < 0)
              .str("what", wrong < 0 ? "every touched byte read back" : "touch " + std::to_string(wrong) + " wrong")
              .emit();
        }
      }
    }
    g.d.cuStreamDestroy(stream);
    return 0;
  }
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
  Gpu g(device);
  char name[256] = {0};
  g.d.cuDeviceGetName(name, sizeof name, g.dev);
  const int units = std::max(1, g.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  JsonLine().str("record", "setup").str("device_name", name).integer("device_index", device)
      .integer("compute_units", units).boolean("double", true).emit();
  for (long long w : widths)
    if (w != 1)
      JsonLine().str("record", "unavailable").str("memory", "").str("type", "")
          .str("reason", "width " + std::to_string(w) + ": the CUDA kernels are scalar (width 1)").emit();
  if (std::find(widths.begin(), widths.end(), 1) == widths.end()) return 0;
  for (const std::string& memory : memories) {
    if (memory.rfind("managed", 0) == 0 && !g.attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)) {
      JsonLine().str("record", "unavailable").str("memory", memory).str("reason", "the device has no managed memory").emit();
      continue;
    }
    if (memory == "managed-prefetch" && !g.attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)) {
      JsonLine().str("record", "unavailable").str("memory", memory)
          .str("reason", "prefetching needs concurrentManagedAccess, which the device lacks").emit();
      continue;
    }
    if (memory == "pinned" && !g.attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)) {
      JsonLine().str("record", "unavailable").str("memory", memory)
          .str("reason", "kernels on pinned memory need unified addressing, which the device lacks").emit();
      continue;
    }
    for (const std::string& type : types) {
      const size_t elements = static_cast<size_t>(size) / (type == "double" ? 8 : 4);
      for (long long gr : groups_list) {
        for (long long instances : instances_list) {
          for (const std::string& kname : kernels) {
            const unsigned threads = 256;
            unsigned blocks = static_cast<unsigned>(gr);
            if (blocks == 0)  // one element per thread (as BabelStream's CUDA kernels), ~8 for the reductions
              blocks = static_cast<unsigned>(std::max<size_t>(
                  1, std::min<size_t>((kname == "dot" || kname == "read") ? elements / (threads * 8) + 1
                                                                          : (elements + threads - 1) / threads,
                                      2147483647u)));
            if (type == "double")
              cuda_point<double>(g, memory, kname, elements, blocks, threads, static_cast<int>(instances), iterations,
                                 warmup, max_seconds);
            else
              cuda_point<float>(g, memory, kname, elements, blocks, threads, static_cast<int>(instances), iterations,
                                warmup, max_seconds);
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace xferlab
