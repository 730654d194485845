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
// Width 1 only (the OpenCL path has vector widths). STREAM's options, sweep, timed loop and check
// are kernels_driver.cpp's, as for OpenCL; this file is the CUDA model (CudaStream): its arrays and
// launch, timed by the host clock around launch on every instance's stream and the synchronization
// of all, and by CUDA events around each (the longest instance).
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
#include "clock.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "probe.hpp"
#include "kernels_driver.hpp"

namespace xferlab {

namespace collab {
std::string cuda_histogram_ptx();  // collab_cuda.cpp
std::string cuda_pad_ptx();        // collab_cuda_pad.cpp
}

using namespace cuda;

namespace {

#define XF_CU(d, fn, ...) cuda_check((d).fn(__VA_ARGS__), #fn)

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
    place_requested();  // --cpus: once the context (and the driver's threads) exist
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
  void fill(const void* data) {
    if (memory == "device")
      XF_CU(g.d, cuMemcpyHtoD, ptr, data, bytes);
    else
      std::memcpy(host, data, bytes);
    if (memory == "managed-prefetch") XF_CU(g.d, cuMemPrefetchAsync, ptr, bytes, g.dev, nullptr);
    XF_CU(g.d, cuCtxSynchronize);
  }
  void get(void* data) {
    XF_CU(g.d, cuCtxSynchronize);
    if (memory == "device")
      XF_CU(g.d, cuMemcpyDtoH, data, ptr, bytes);
    else
      std::memcpy(data, host, bytes);
  }
};

// One point's arrays on a CUDA GPU: every instance's a, b, c and partial sums (one per thread), its
// stream, and the events around its kernel.
class CudaStreamArrays final : public StreamArrays {
 public:
  CudaStreamArrays(Gpu& g, const StreamPoint& p, size_t elements, const void* a, const void* b, const void* c)
      : g_(g), blocks_(static_cast<unsigned>(p.groups)), threads_(static_cast<unsigned>(p.local)), n_(elements) {
    const size_t bytes = elements * (p.f64 ? 8 : 4);
    partials = static_cast<size_t>(blocks_) * threads_;
    f_ = g.function("xferlab_" + p.kernel + (p.f64 ? "_f64" : "_f32"));
    const size_t instances = static_cast<size_t>(p.instances);
    streams_.assign(instances, nullptr), starts_.assign(instances, nullptr), ends_.assign(instances, nullptr);
    for (size_t k = 0; k < instances; ++k) {
      arrays_.add(g, p.memory, bytes, partials * (p.f64 ? 8 : 4), a, b, c);
      XF_CU(g.d, cuStreamCreate, &streams_[k], CU_STREAM_NON_BLOCKING);
      XF_CU(g.d, cuEventCreate, &starts_[k], CU_EVENT_DEFAULT);
      XF_CU(g.d, cuEventCreate, &ends_[k], CU_EVENT_DEFAULT);
      // The kernel's parameters, as stream_ptx() declares them: arrays, then the scalar, then the length.
      std::vector<void*> params;
      for (char name : stream_arguments(p.kernel)) params.push_back(&arrays_(name, k).ptr);
      if (stream_scaled(p.kernel)) params.push_back(p.f64 ? static_cast<void*>(&scalar64_) : &scalar32_);
      params.push_back(&n_);
      params_.push_back(params);
    }
  }
  ~CudaStreamArrays() override {
    for (size_t k = 0; k < streams_.size(); ++k) {
      if (starts_[k]) g_.d.cuEventDestroy(starts_[k]);
      if (ends_[k]) g_.d.cuEventDestroy(ends_[k]);
      if (streams_[k]) g_.d.cuStreamDestroy(streams_[k]);
    }
  }
  // Every instance's launch on its own stream between two events; device time: the longest one.
  Timing launch() override {
    Timing t;
    const auto t0 = Clock::now();
    for (size_t k = 0; k < streams_.size(); ++k) {
      XF_CU(g_.d, cuEventRecord, starts_[k], streams_[k]);
      XF_CU(g_.d, cuLaunchKernel, f_, blocks_, 1, 1, threads_, 1, 1, 0, streams_[k], params_[k].data(), nullptr);
      XF_CU(g_.d, cuEventRecord, ends_[k], streams_[k]);
    }
    for (CUstream s : streams_) XF_CU(g_.d, cuStreamSynchronize, s);
    t.host_seconds = since(t0);
    float longest = 0;
    for (size_t k = 0; k < streams_.size(); ++k) {
      float ms = 0;
      if (g_.d.cuEventElapsedTime(&ms, starts_[k], ends_[k]) == CUDA_SUCCESS) longest = std::max(longest, ms);
    }
    t.device_seconds = longest > 0 ? longest * 1e-3 : -1.0;
    return t;
  }
  void read(int instance, char name, void* out) override { arrays_(name, static_cast<size_t>(instance)).get(out); }

 private:
  Gpu& g_;
  unsigned blocks_, threads_;
  unsigned long long n_;
  float scalar32_ = static_cast<float>(kStreamScalar);
  double scalar64_ = kStreamScalar;
  CUfunction f_ = nullptr;
  InstanceArrays<GpuArray> arrays_;
  std::vector<CUstream> streams_;
  std::vector<CUevent> starts_, ends_;
  std::vector<std::vector<void*>> params_;
};

// Device STREAM on a CUDA GPU: its memories (managed and pinned where it has them), float and
// double, width 1 (the PTX kernels are scalar), 256 threads per block.
class CudaStream final : public StreamModel {
 public:
  explicit CudaStream(int device) : g_(device) {
    char name[256] = {0};
    g_.d.cuDeviceGetName(name, sizeof name, g_.dev);
    const int units = std::max(1, g_.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
    JsonLine().str("record", "setup").str("device_name", name).integer("device_index", device)
        .integer("compute_units", units).boolean("double", true).str("host_cpus", placed_cpus_text()).emit();
  }
  std::string lacks_width(int width) override {
    return width == 1 ? "" : "width " + std::to_string(width) + ": the CUDA kernels are scalar (width 1)";
  }
  std::string lacks_memory(const std::string& memory) override {
    if (memory.rfind("managed", 0) == 0 && !g_.attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY))
      return "the device has no managed memory";
    if (memory == "managed-prefetch" && !g_.attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))
      return "prefetching needs concurrentManagedAccess, which the device lacks";
    if (memory == "pinned" && !g_.attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))
      return "kernels on pinned memory need unified addressing, which the device lacks";
    return "";
  }
  size_t prepare(const std::string&, int) override { return 256; }  // threads per block
  // One element per thread (as BabelStream's CUDA kernels), ~8 for the reductions.
  size_t auto_groups(const std::string& kernel, size_t elements, size_t threads) override {
    return std::max<size_t>(1, std::min<size_t>(stream_reduces(kernel) ? elements / (threads * 8) + 1
                                                                       : (elements + threads - 1) / threads,
                                                2147483647u));
  }
  std::unique_ptr<StreamArrays> load(const StreamPoint& p, size_t elements, const void* a, const void* b,
                                     const void* c) override {
    return std::make_unique<CudaStreamArrays>(g_, p, elements, a, b, c);
  }

 private:
  Gpu g_;
};

// One fresh managed allocation on a CUDA GPU (prefetched to it for managed-prefetch), and the touch
// kernel's parameters.
class CudaFresh final : public FreshMemory {
 public:
  CudaFresh(Gpu& g, CUfunction touch, CUstream stream, const std::string& memory, size_t bytes, unsigned long long stride,
            unsigned long long touches)
      : g_(g), touch_(touch), stream_(stream), array_(g, "managed", bytes), stride_(stride), touches_(touches),
        blocks_(static_cast<unsigned>(std::max<unsigned long long>(
            1, std::min<unsigned long long>((touches + kThreads - 1) / kThreads, 65535)))) {
    if (memory == "managed-prefetch") XF_CU(g.d, cuMemPrefetchAsync, array_.ptr, array_.bytes, g.dev, stream);
    XF_CU(g.d, cuStreamSynchronize, stream);
  }
  Timing touch() override {
    void* p[] = {&array_.ptr, &stride_, &touches_};
    Timing t;
    const auto t0 = Clock::now();
    XF_CU(g_.d, cuLaunchKernel, touch_, blocks_, 1, 1, kThreads, 1, 1, 0, stream_, p, nullptr);
    XF_CU(g_.d, cuStreamSynchronize, stream_);
    t.host_seconds = since(t0);
    return t;
  }
  const unsigned char* map() override { return static_cast<const unsigned char*>(array_.host); }

 private:
  static constexpr unsigned kThreads = 256;
  Gpu& g_;
  CUfunction touch_;
  CUstream stream_;
  GpuArray array_;
  unsigned long long stride_, touches_;
  unsigned blocks_;
};

// First touch on a CUDA GPU: managed memory, without and with a prefetch; host clock only.
class CudaTouch final : public TouchModel {
 public:
  explicit CudaTouch(int device) : g_(device) {
    if (!g_.attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)) throw NotAvailable("the device has no managed memory");
    touch_ = g_.function("xferlab_touch");
    XF_CU(g_.d, cuStreamCreate, &stream_, CU_STREAM_NON_BLOCKING);
  }
  ~CudaTouch() override {
    if (stream_) g_.d.cuStreamDestroy(stream_);
  }
  std::string lacks_memory(const std::string&) override { return ""; }
  bool device_clock() const override { return false; }
  std::unique_ptr<FreshMemory> fresh(const std::string& memory, size_t bytes, unsigned long long stride,
                                     unsigned long long touches) override {
    return std::make_unique<CudaFresh>(g_, touch_, stream_, memory, bytes, stride, touches);
  }

 private:
  Gpu g_;
  CUfunction touch_ = nullptr;
  CUstream stream_ = nullptr;
};

}  // namespace

int run_d2d_cuda(Args& args, int device);  // kernels_cuda_peer.cpp

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
    JsonLine().str("record", "ptx").str("module", "collab-pad").str("ptx", collab::cuda_pad_ptx()).emit();
    return 0;
  }
  if (mode == "d2d") return run_d2d_cuda(args, device);  // between two devices: kernels_cuda_peer.cpp
  const std::string why = load_cuda();
  if (!why.empty()) throw NotAvailable(why);
  if (mode != "stream" && mode != "faults")
    throw NotAvailable("--mode " + mode + " runs on OpenCL devices only for now (CUDA: stream, faults, d2d, ptx)");
  if (mode == "faults") {
    const TouchOptions o = touch_options(args, {"managed", "managed-prefetch"});
    CudaTouch model(device);
    return drive_touch(model, o);
  }
  const StreamOptions o = stream_options(args, kMemories);
  CudaStream model(device);
  return drive_stream(model, o);
}

}  // namespace xferlab
