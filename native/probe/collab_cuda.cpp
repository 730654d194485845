// `xferlab-probe collab --backend cuda --pattern histogram`: CHAI's histogram (HSTI) on a CUDA GPU,
// in seed 001's two versions, beside the OpenCL ones of collab_histogram.cpp (same input, split,
// records and validation):
//   D: the device's part of the input copied to device memory, counted into a device histogram,
//      read back and added to the host threads' one;
//   U: input and the one histogram in managed memory (cuMemAllocManaged); the kernel adds to the
//      bins with system-scope atomics (atom.sys, sm_60+) while the host threads add with
//      __atomic_fetch_add: CHAI's U version, which needs concurrentManagedAccess.
// The kernel (PTX written here) counts its grid-stride slice into a shared-memory histogram, then
// adds each non-zero bin to the global one with one atomic. PAD is in collab_cuda_pad.cpp; the task
// queue runs on OpenCL only.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../loaders/cuda_loader.hpp"
#include "collab.hpp"
#include "collab_cuda.hpp"
#include "json.hpp"
#include "placement.hpp"

namespace xferlab::collab {

using namespace cuda;

namespace {

std::string hist_entry(const std::string& name, const std::string& scope) {
  return ".visible .entry " + name + "(.param .u64 in, .param .u32 count, .param .u64 hist)\n{\n"
         "  .reg .pred %p;\n  .reg .u32 %r<16>;\n  .reg .u64 %rd<8>;\n  .shared .align 4 .b8 bins[1024];\n"
         "  ld.param.u64 %rd1, [in];\n  ld.param.u32 %r1, [count];\n  ld.param.u64 %rd2, [hist];\n"
         "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n"
         "  mov.u32 %r2, %tid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %ctaid.x;\n  mov.u32 %r5, %nctaid.x;\n"
         "  mov.u32 %r6, bins;\n  mov.u32 %r7, %r2;\n"
         "ZERO:\n  setp.ge.u32 %p, %r7, 256;\n  @%p bra ZEROED;\n  shl.b32 %r8, %r7, 2;\n  add.u32 %r9, %r6, %r8;\n"
         "  st.shared.u32 [%r9], 0;\n  add.u32 %r7, %r7, %r3;\n  bra ZERO;\n"
         "ZEROED:\n  bar.sync 0;\n  mad.lo.u32 %r7, %r4, %r3, %r2;\n  mul.lo.u32 %r10, %r5, %r3;\n"
         "COUNT:\n  setp.ge.u32 %p, %r7, %r1;\n  @%p bra COUNTED;\n  mul.wide.u32 %rd3, %r7, 4;\n"
         "  add.u64 %rd4, %rd1, %rd3;\n  ld.global.u32 %r11, [%rd4];\n  shr.u32 %r12, %r11, 24;\n  shl.b32 %r12, %r12, 2;\n"
         "  add.u32 %r13, %r6, %r12;\n  atom.shared.add.u32 %r14, [%r13], 1;\n  add.u32 %r7, %r7, %r10;\n  bra COUNT;\n"
         "COUNTED:\n  bar.sync 0;\n  mov.u32 %r7, %r2;\n"
         "FLUSH:\n  setp.ge.u32 %p, %r7, 256;\n  @%p bra DONE;\n  shl.b32 %r8, %r7, 2;\n  add.u32 %r9, %r6, %r8;\n"
         "  ld.shared.u32 %r11, [%r9];\n  setp.eq.u32 %p, %r11, 0;\n  @%p bra NEXT;\n  mul.wide.u32 %rd5, %r7, 4;\n"
         "  add.u64 %rd6, %rd2, %rd5;\n  atom" + scope + ".global.add.u32 %r14, [%rd6], %r11;\n"
         "NEXT:\n  add.u32 %r7, %r7, %r3;\n  bra FLUSH;\nDONE:\n  ret;\n}\n";
}

}  // namespace

std::string cuda_histogram_ptx() {
  return "//\n// xferlab: CHAI-style histogram, D (device atomics) and U (system-scope atomics on managed memory)\n//\n"
         ".version 6.0\n.target sm_60\n.address_size 64\n\n" +
         hist_entry("xferlab_hist_d", "") + hist_entry("xferlab_hist_u", ".sys");
}

int run_collab_cuda(Options& o) {
  const std::string why = load_cuda();
  if (!why.empty()) throw NotAvailable(why);
  if (o.pattern == "taskqueue" || o.pattern == "trns" || o.pattern == "bs")
    throw NotAvailable("--pattern " + o.pattern + " runs on OpenCL devices only for now (on CUDA: histogram, pad)");
  const Driver& d = cuda_driver();
  int count = 0;
  XF_CU(d, cuDeviceGetCount, &count);
  if (o.device >= count)
    throw BadArgument("device " + std::to_string(o.device) + " does not exist; CUDA devices: 0.." + std::to_string(count - 1));
  CUdevice dev = 0;
  XF_CU(d, cuDeviceGet, &dev, o.device);
  auto attribute = [&](CUdevice_attribute a) {
    int v = 0;
    return d.cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
  };
  const bool u = o.version == "U";
  if (u && !attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))
    throw NotAvailable("the U version needs concurrentManagedAccess (host and GPU on managed memory at once), "
                       "which the device lacks");
  if (u && attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) < 6)
    throw NotAvailable("the U version's system-scope atomics need compute capability 6.0 or later");
  if (o.pattern == "pad") {
    const std::string no_advice = pad_advice_unavailable(o, d);
    if (!no_advice.empty()) throw NotAvailable(no_advice);
  }
  CUcontext ctx = nullptr;
  XF_CU(d, cuCtxCreate, &ctx, CU_CTX_SCHED_SPIN | CU_CTX_MAP_HOST, dev);
  place_requested();  // --cpus: once the context (and the driver's threads) exist
  struct Release {
    const Driver& d;
    CUcontext ctx;
    CUmodule module = nullptr;
    CUstream stream = nullptr;
    ~Release() {
      if (stream) d.cuStreamDestroy(stream);
      if (module) d.cuModuleUnload(module);
      d.cuCtxDestroy(ctx);
    }
  } release{d, ctx};
  const std::string ptx = o.pattern == "pad" ? cuda_pad_ptx() : cuda_histogram_ptx();
  XF_CU(d, cuModuleLoadData, &release.module, ptx.c_str());
  XF_CU(d, cuStreamCreate, &release.stream, CU_STREAM_NON_BLOCKING);
  CUstream stream = release.stream;
  const int units = std::max(1, attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  char name[256] = {0};
  d.cuDeviceGetName(name, sizeof name, dev);
  if (o.pattern == "pad") {
    CudaSession session{d, dev, release.module, stream, units, name};
    return run_pad_cuda(o, session);
  }
  CUfunction kernel = nullptr;
  XF_CU(d, cuModuleGetFunction, &kernel, release.module, u ? "xferlab_hist_u" : "xferlab_hist_d");
  const unsigned groups = static_cast<unsigned>(units * 4), threads = 256;
  // The host-only reference, outside every timed region.
  std::vector<uint64_t> reference(kBins, 0);
  for (size_t i = 0; i < o.size; ++i) ++reference[value_at(i, o.seed) >> 24];
  JsonLine()
      .str("probe", "collab").str("record", "setup").str("backend", "cuda").integer("device_index", o.device)
      .str("device_name", name).integer("compute_units", units)
      .str("atomics_path", u ? "atom.sys.global.add.u32 on managed memory (system scope)" : "atom.global.add.u32")
      .str("shared_atomics", u ? "atom.sys on one managed-memory histogram; host: __atomic_fetch_add"
                               : "none shared: device histogram in device memory, read back and added to the host threads' one")
      .str("pattern", o.pattern).str("version", o.version).integer("size", static_cast<long long>(o.size))
      .integer("host_threads", o.host_threads).str("host_cpus", placed_cpus_text()).number("device_share", o.share).integer("repeats", o.repeats).integer("warmups", o.warmups)
      .integer("seed", static_cast<long long>(o.seed)).integer("local_size", threads).integer("bins", kBins)
      .integer("work_groups", groups)
      .str("clock", "std::chrono::steady_clock; kernel = launch to completion of kernel and host threads")
      .boolean("corrupt", o.corrupt)
      .emit();
  auto count_host = [](const uint32_t* in, size_t lo, size_t hi, uint32_t* shared) {
    uint32_t mine[kBins] = {};
    for (size_t i = lo; i < hi; ++i) ++mine[in[i] >> 24];
    for (int b = 0; b < kBins; ++b)
      if (mine[b]) __atomic_fetch_add(&shared[b], mine[b], __ATOMIC_RELAXED);
  };
  const size_t nd = static_cast<size_t>(std::llround(o.size * o.share)), nh = o.size - nd;
  Repeats repeats(o);
  for (int r = 0; r < o.warmups + o.repeats; ++r) {
    Outcome out;
    out.device_share = o.size ? static_cast<double>(nd) / o.size : 0.0;
    std::vector<uint32_t> final_hist(kBins, 0);
    const auto t0 = Clock::now();
    if (!u) {
      std::vector<uint32_t> in(o.size), host_hist(kBins, 0), dev_hist(kBins, 0);
      CUdeviceptr din = 0, dhist = 0;
      XF_CU(d, cuMemAlloc, &din, std::max<size_t>(nd * 4, 4));
      XF_CU(d, cuMemAlloc, &dhist, kBins * 4);
      parallel(o.host_threads, o.size, [&](int, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) in[i] = value_at(i, o.seed);
      });
      out.allocation = since(t0);
      const auto t1 = Clock::now();
      if (nd) XF_CU(d, cuMemcpyHtoD, din, in.data(), nd * 4);
      XF_CU(d, cuMemcpyHtoD, dhist, dev_hist.data(), kBins * 4);
      out.copy = since(t1);
      const auto t2 = Clock::now();
      unsigned n32 = static_cast<unsigned>(nd);
      void* params[] = {&din, &n32, &dhist};
      if (nd) XF_CU(d, cuLaunchKernel, kernel, groups, 1, 1, threads, 1, 1, 0, stream, params, nullptr);
      if (nh) parallel(o.host_threads, nh, [&](int, size_t lo, size_t hi) { count_host(in.data() + nd, lo, hi, host_hist.data()); });
      XF_CU(d, cuStreamSynchronize, stream);
      out.kernel = since(t2);
      const auto t3 = Clock::now();
      XF_CU(d, cuMemcpyDtoH, dev_hist.data(), dhist, kBins * 4);
      for (int b = 0; b < kBins; ++b) final_hist[b] = host_hist[b] + dev_hist[b];
      out.copy += since(t3);
      out.total = since(t0);
      out.copied_bytes = nd * 4 + 2 * kBins * 4;
      d.cuMemFree(din);
      d.cuMemFree(dhist);
      if (o.corrupt) final_hist[kBins / 2] += 1;
    } else {
      CUdeviceptr min = 0, mhist = 0;
      XF_CU(d, cuMemAllocManaged, &min, std::max<size_t>(o.size * 4, 4), CU_MEM_ATTACH_GLOBAL);
      XF_CU(d, cuMemAllocManaged, &mhist, kBins * 4, CU_MEM_ATTACH_GLOBAL);
      auto* in = reinterpret_cast<uint32_t*>(min);
      auto* hist = reinterpret_cast<uint32_t*>(mhist);
      std::memset(hist, 0, kBins * 4);
      parallel(o.host_threads, o.size, [&](int, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) in[i] = value_at(i, o.seed);
      });
      out.allocation = since(t0);
      const auto t2 = Clock::now();
      unsigned n32 = static_cast<unsigned>(nd);
      void* params[] = {&min, &n32, &mhist};
      if (nd) XF_CU(d, cuLaunchKernel, kernel, groups, 1, 1, threads, 1, 1, 0, stream, params, nullptr);
      if (nh) parallel(o.host_threads, nh, [&](int, size_t lo, size_t hi) { count_host(in + nd, lo, hi, hist); });
      XF_CU(d, cuStreamSynchronize, stream);
      out.kernel = since(t2);
      out.total = since(t0);
      if (o.corrupt) hist[kBins / 2] += 1;
      std::memcpy(final_hist.data(), hist, kBins * 4);
      d.cuMemFree(min);
      d.cuMemFree(mhist);
    }
    check_histogram(final_hist, reference, out);
    repeats.record(r, out, false);
  }
  return repeats.finish();
}

}  // namespace xferlab::collab
