// `xferlab-probe collab --backend cuda --pattern pad`: CHAI's PAD (Gómez-Luna et al., ISPASS 2017) in
// place on a CUDA GPU, beside the OpenCL one of collab_pad.cpp (same input, split, host rows, records
// and validation; run_collab_cuda in collab_cuda.cpp opens the context, this module and the stream):
//   D: static split: the device's rows [0, k), k = round(rows * device-share), copied to device memory
//      (cuMemcpyHtoD), padded there by the kernel (row counter and flags in device memory, device-scope
//      atomics), copied back (cuMemcpyDtoH) once the host threads have padded rows [k, rows) in place.
//   U: the matrix, the row counter and a flag a row in managed memory (cuMemAllocManaged); persistent
//      blocks and host threads pop rows from the one counter (atom.sys / __atomic_fetch_add) and wait
//      on each other's flags (system-scope fences, membar.sys). Needs concurrentManagedAccess.
// U's managed ranges get the cuMemAdvise hints --advise names (each repeat, after allocating, timed as
// allocation). Seed 001 (IBM, "AC922 Data Movement for CORAL") found PAD the one CHAI pattern whose U
// version lost to D (its kernel 3x D's) until a cudaMemAdvise on the data array brought the kernel
// within a few microseconds of D's; the seed does not name the advice. xferlab's default is none, as
// CHAI's own CUDA-U PAD; on an H200 over PCIe Gen5 (docs/device.md) preferred-device was 3-8 % faster
// than none (4.8 against 4.9-5.2 ms a run), accessed-by 9.4, flags-accessed-by 15.3, read-mostly 45.
// The hints are there to compare, on a machine such as the seed's (NVLink 2.0, coherent) too:
//   none              no hints
//   preferred-device  matrix: CU_MEM_ADVISE_SET_PREFERRED_LOCATION, the GPU
//   accessed-by       matrix: CU_MEM_ADVISE_SET_ACCESSED_BY, the GPU (pages stay put, the GPU maps them)
//   read-mostly       matrix: CU_MEM_ADVISE_SET_READ_MOSTLY (read-duplicated; PAD writes it, so every
//                     write collapses the copies: the hint that does not fit, measured)
//   flags-accessed-by the flags and the row counter, which the host and the GPU both poll and write:
//                     CU_MEM_ADVISE_SET_ACCESSED_BY the GPU (a mapping instead of pages moving to and
//                     fro), the matrix without a hint
// The matrix's hints leave the flags alone, as the seed's remedy advised the data array only.
//
// The kernel (PTX written here, xferlab_pad_d and xferlab_pad_u, sm_60+): as pad_rows in collab.cl,
// one block a row: thread 0 pops a row, waits on the flags of the rows its destination covers, the
// block moves the row in chunks of its size from the last chunk to the first (each chunk read whole,
// with ld.global.cg, before it is written), then thread 0 sets the row's flag after a fence.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collab_cuda.hpp"
#include "json.hpp"
#include "placement.hpp"

namespace xferlab::collab {

using namespace cuda;

namespace {

// scope: "" (device memory, D) or ".sys" (managed memory shared with host threads, U); fence likewise.
std::string pad_entry(const std::string& name, const std::string& scope, const std::string& fence) {
  return ".visible .entry " + name +
         "(.param .u64 data, .param .u32 rows, .param .u32 cols, .param .u32 pad, .param .u64 next, .param .u64 done)\n{\n"
         "  .reg .pred %p<5>;\n  .reg .b32 %r<20>;\n  .reg .b64 %rd<16>;\n  .reg .f32 %f<2>;\n"
         "  .shared .align 4 .b32 task;\n"
         "  ld.param.u64 %rd1, [data];\n  ld.param.u32 %r1, [rows];\n  ld.param.u32 %r2, [cols];\n  ld.param.u32 %r3, [pad];\n"
         "  ld.param.u64 %rd2, [next];\n  ld.param.u64 %rd3, [done];\n"
         "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n  cvta.to.global.u64 %rd3, %rd3;\n"
         "  mov.u32 %r4, %tid.x;\n  mov.u32 %r5, %ntid.x;\n  add.u32 %r6, %r2, %r3;\n"
         "  setp.ne.u32 %p1, %r4, 0;\n  sub.u32 %r15, %r1, 1;\n  cvt.u64.u32 %rd13, %r15;\n  cvt.u64.u32 %rd5, %r2;\n"
         // thread 0 pops a row: the popped task t is row rows - 1 - t
         "POP:\n  @%p1 bra POPPED;\n  atom" + scope + ".global.add.u32 %r7, [%rd2], 1;\n  st.shared.u32 [task], %r7;\n"
         "POPPED:\n  bar.sync 0;\n  ld.shared.u32 %r7, [task];\n  setp.ge.u32 %p2, %r7, %r1;\n  @%p2 bra EXIT;\n"
         "  sub.u32 %r8, %r15, %r7;\n  mul.wide.u32 %rd8, %r8, %r2;\n  mul.wide.u32 %rd9, %r8, %r6;\n"
         "  mul.wide.u32 %rd7, %r8, 4;\n  add.u64 %rd7, %rd3, %rd7;\n  @%p1 bra WAITED;\n"
         // thread 0 waits for rows i+1 .. min(rows-1, (dst + cols - 1) / cols): their sources lie under the destination
         "  add.u64 %rd4, %rd9, %rd5;\n  sub.u64 %rd4, %rd4, 1;\n  div.u64 %rd4, %rd4, %rd5;\n  min.u64 %rd4, %rd4, %rd13;\n"
         "  cvt.u32.u64 %r10, %rd4;\n  add.u32 %r11, %r8, 1;\n"
         "WAIT:\n  setp.gt.u32 %p3, %r11, %r10;\n  @%p3 bra ACQUIRE;\n  mul.wide.u32 %rd6, %r11, 4;\n  add.u64 %rd6, %rd3, %rd6;\n"
         "SPIN:\n  ld.volatile.global.u32 %r12, [%rd6];\n  setp.eq.u32 %p3, %r12, 0;\n  @%p3 bra SPIN;\n"
         "  add.u32 %r11, %r11, 1;\n  bra WAIT;\n"
         "ACQUIRE:\n  " + fence + ";\n"
         "WAITED:\n  bar.sync 0;\n  setp.eq.u64 %p3, %rd8, %rd9;\n  @%p3 bra MOVED;\n"
         "  sub.u32 %r13, %r2, 1;\n  div.u32 %r13, %r13, %r5;\n  mul.lo.u32 %r13, %r13, %r5;\n"
         // chunks from the last to the first: each read whole before it is written
         "CHUNK:\n  add.u32 %r14, %r13, %r4;\n  setp.lt.u32 %p4, %r14, %r2;\n  cvt.u64.u32 %rd10, %r14;\n"
         "  add.u64 %rd11, %rd8, %rd10;\n  shl.b64 %rd11, %rd11, 2;\n  add.u64 %rd11, %rd1, %rd11;\n"
         "  add.u64 %rd12, %rd9, %rd10;\n  shl.b64 %rd12, %rd12, 2;\n  add.u64 %rd12, %rd1, %rd12;\n"
         "  mov.f32 %f1, 0f00000000;\n  @%p4 ld.global.cg.f32 %f1, [%rd11];\n  bar.sync 0;\n"
         "  @%p4 st.global.f32 [%rd12], %f1;\n  bar.sync 0;\n  setp.eq.u32 %p3, %r13, 0;\n  @%p3 bra MOVED;\n"
         "  sub.u32 %r13, %r13, %r5;\n  bra CHUNK;\n"
         // every thread's stores before the row's flag
         "MOVED:\n  " + fence + ";\n  bar.sync 0;\n  @%p1 bra POP;\n  st.volatile.global.u32 [%rd7], 1;\n  bra POP;\n"
         "EXIT:\n  ret;\n}\n";
}

struct Hint {
  bool matrix;  // else the flags and the row counter
  CUmem_advise advice;
  const char* name;
};

// The hints --advise names (collab_cuda_pad.cpp's header says why these).
std::vector<Hint> hints(const std::string& advise) {
  const Hint flags{false, CU_MEM_ADVISE_SET_ACCESSED_BY, "CU_MEM_ADVISE_SET_ACCESSED_BY"};
  if (advise == "none") return {};
  if (advise == "flags-accessed-by") return {flags};
  const Hint matrix = advise == "preferred-device" ? Hint{true, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, "CU_MEM_ADVISE_SET_PREFERRED_LOCATION"}
                      : advise == "accessed-by"    ? Hint{true, CU_MEM_ADVISE_SET_ACCESSED_BY, "CU_MEM_ADVISE_SET_ACCESSED_BY"}
                                                   : Hint{true, CU_MEM_ADVISE_SET_READ_MOSTLY, "CU_MEM_ADVISE_SET_READ_MOSTLY"};
  return {matrix};
}

std::string advice_text(const Options& o) {
  if (o.version != "U") return "none: D uses no managed memory";
  std::string out;
  for (const Hint& h : hints(o.advise))
    out += std::string(out.empty() ? "" : "; ") + (h.matrix ? "matrix: " : "flags and row counter: ") + h.name +
           (h.advice == CU_MEM_ADVISE_SET_READ_MOSTLY ? "" : " (device " + std::to_string(o.device) + ")");
  return out.empty() ? "none" : out;
}

// Frees what a repeat allocated, however it ends.
struct Buffers {
  const Driver& d;
  CUdeviceptr data = 0, flags = 0;
  ~Buffers() {
    if (flags) d.cuMemFree(flags);
    if (data) d.cuMemFree(data);
  }
};

}  // namespace

std::string cuda_pad_ptx() {
  return "//\n// xferlab: CHAI's PAD in place, D (device memory) and U (managed memory, system scope)\n//\n"
         ".version 6.0\n.target sm_60\n.address_size 64\n\n" +
         pad_entry("xferlab_pad_d", "", "membar.gl") + pad_entry("xferlab_pad_u", ".sys", "membar.sys");
}

std::string pad_advice_unavailable(const Options& o, const Driver& d) {
  if (o.version != "U" || o.advise == "none" || d.cuMemAdvise) return "";
  return "the CUDA driver does not export cuMemAdvise (CUDA 8.0+), which --advise " + o.advise +
         " needs; run with --advise none";
}

int run_pad_cuda(Options& o, CudaSession& s) {
  const Driver& d = s.d;
  const bool u = o.version == "U";
  CUfunction kernel = nullptr;
  XF_CU(d, cuModuleGetFunction, &kernel, s.module, u ? "xferlab_pad_u" : "xferlab_pad_d");
  const size_t rows = o.size / o.cols, c = o.cols, p = o.pad, padded = rows * (c + p);
  const std::vector<float> reference = pad_reference(o, rows);  // outside every timed region
  const unsigned groups = static_cast<unsigned>(s.units), threads = 256;
  JsonLine()
      .str("probe", "collab").str("record", "setup").str("backend", "cuda").integer("device_index", o.device)
      .str("device_name", s.name).integer("compute_units", s.units)
      .str("atomics_path", u ? "atom.sys.global.add.u32 and membar.sys on managed memory (system scope)"
                             : "atom.global.add.u32 and membar.gl")
      .str("shared_atomics", u ? "atom.sys on a managed-memory row counter, flags with membar.sys; host: __atomic_fetch_add, "
                                 "__atomic_load_n/__atomic_store_n (acquire/release)"
                               : "none shared: static split, the device's rows copied over and back, flags in device memory")
      .str("pattern", o.pattern).str("version", o.version).integer("size", static_cast<long long>(o.size))
      .integer("host_threads", o.host_threads).str("host_cpus", placed_cpus_text()).number("device_share", o.share)
      .integer("repeats", o.repeats).integer("warmups", o.warmups).integer("seed", static_cast<long long>(o.seed))
      .integer("local_size", threads).integer("rows", static_cast<long long>(rows)).integer("cols", static_cast<long long>(c))
      .integer("pad", static_cast<long long>(p)).integer("tasks", static_cast<long long>(rows)).str("split", u ? "dynamic" : "static")
      .integer("work_groups", groups).str("advise", u ? o.advise : "none").str("advice", advice_text(o))
      .str("clock", "std::chrono::steady_clock; kernel = launch to completion of kernel and host threads")
      .boolean("corrupt", o.corrupt)
      .emit();
  unsigned n32 = 0, c32 = static_cast<unsigned>(c), p32 = static_cast<unsigned>(p);
  Repeats repeats(o);
  for (int r = 0; r < o.warmups + o.repeats; ++r) {
    Outcome out;
    Buffers b{d};
    std::unique_ptr<float, void (*)(void*)> host(nullptr, std::free);
    float* result = nullptr;
    const auto t0 = Clock::now();
    if (!u) {
      const size_t kd = std::min(rows, static_cast<size_t>(std::llround(rows * o.share)));
      host.reset(static_cast<float*>(std::aligned_alloc(4096, (padded * 4 + 4095) / 4096 * 4096)));
      if (!host) throw std::runtime_error("out of host memory for PAD's matrix");
      std::vector<int> host_flags(rows + 1, 0);  // the host's flags, and its row counter last
      const std::vector<int> zeros(kd + 1, 0);
      XF_CU(d, cuMemAlloc, &b.data, std::max<size_t>(kd * (c + p) * 4, 4));
      XF_CU(d, cuMemAlloc, &b.flags, (kd + 1) * 4);  // the device's flags, and its row counter last
      pad_fill(o, rows, host.get());
      out.allocation = since(t0);
      const auto t1 = Clock::now();
      if (kd) XF_CU(d, cuMemcpyHtoD, b.data, host.get(), kd * c * 4);
      XF_CU(d, cuMemcpyHtoD, b.flags, zeros.data(), (kd + 1) * 4);
      out.copy = since(t1);
      const auto t2 = Clock::now();
      CUdeviceptr next = b.flags + kd * 4;
      n32 = static_cast<unsigned>(kd);
      void* params[] = {&b.data, &n32, &c32, &p32, &next, &b.flags};
      if (kd) XF_CU(d, cuLaunchKernel, kernel, groups, 1, 1, threads, 1, 1, 0, s.stream, params, nullptr);
      out.host_tasks = pad_host_rows(o, host.get(), &host_flags[rows], host_flags.data(), kd, rows);
      XF_CU(d, cuStreamSynchronize, s.stream);
      out.kernel = since(t2);
      const auto t3 = Clock::now();
      if (kd) XF_CU(d, cuMemcpyDtoH, host.get(), b.data, kd * (c + p) * 4);
      out.copy += since(t3);
      out.total = since(t0);
      out.copied_bytes = (kd * c + kd * (c + p)) * 4;
      out.device_tasks = static_cast<long long>(kd);
      result = host.get();
    } else {
      XF_CU(d, cuMemAllocManaged, &b.data, std::max<size_t>(padded * 4, 4), CU_MEM_ATTACH_GLOBAL);
      XF_CU(d, cuMemAllocManaged, &b.flags, (rows + 1) * 4, CU_MEM_ATTACH_GLOBAL);  // flags, then the row counter
      for (const Hint& h : hints(o.advise)) {
        if (h.matrix) XF_CU(d, cuMemAdvise, b.data, std::max<size_t>(padded * 4, 4), h.advice, s.dev);
        else XF_CU(d, cuMemAdvise, b.flags, (rows + 1) * 4, h.advice, s.dev);
      }
      auto* data = reinterpret_cast<float*>(b.data);
      auto* flags = reinterpret_cast<int*>(b.flags);
      std::memset(flags, 0, (rows + 1) * 4);
      pad_fill(o, rows, data);
      out.allocation = since(t0);
      const auto t2 = Clock::now();
      CUdeviceptr next = b.flags + rows * 4;
      n32 = static_cast<unsigned>(rows);
      void* params[] = {&b.data, &n32, &c32, &p32, &next, &b.flags};
      if (o.share > 0)  // --device-share 0: the host alone
        XF_CU(d, cuLaunchKernel, kernel, groups, 1, 1, threads, 1, 1, 0, s.stream, params, nullptr);
      out.host_tasks = o.share < 1 ? pad_host_rows(o, data, flags + rows, flags, 0, rows) : 0;
      XF_CU(d, cuStreamSynchronize, s.stream);
      out.kernel = since(t2);
      out.total = since(t0);
      out.device_tasks = static_cast<long long>(rows) - out.host_tasks;
      result = data;
    }
    out.device_share = rows ? static_cast<double>(out.device_tasks) / rows : 0.0;
    if (o.corrupt) result[(rows / 2) * (c + p)] += 1.0f;  // test hook: validation must catch it
    pad_check(o, rows, result, reference, out);
    repeats.record(r, out, true);
  }
  return repeats.finish();
}

}  // namespace xferlab::collab
