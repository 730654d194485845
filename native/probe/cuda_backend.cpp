// The CUDA backend: the CUDA driver API, loaded at run time (native/loaders/cuda_loader.hpp), so
// nothing of CUDA is needed to build the probe and a machine without a driver reports "not
// available" (exit code 3) instead of failing.
//
// Host memory kinds: pageable = page-aligned aligned_alloc, which the driver stages through its own
// pinned buffers; pinned = cuMemHostAlloc (portable, mapped); managed = cuMemAllocManaged
// (CU_MEM_ATTACH_GLOBAL), migrated on demand; managed_prefetch = the same, moved explicitly with
// cuMemPrefetchAsync, offered only where the device has concurrentManagedAccess (which that call
// needs to target a GPU). CUDA has no SVM kinds. Managed memory is addressed through its unified
// pointer, so it is copied with the device-side calls (cuMemcpyDtoD accepts managed pointers).
//
// Clocks: copy() times a synchronous driver copy followed by cuCtxSynchronize with
// std::chrono::steady_clock (a synchronous copy may return before its DMA finishes: from pageable
// memory once staged, device to device at once), then the same copy again asynchronously on a
// stream between two CUDA events (cuEventElapsedTime, about 0.5 us resolution): the two figures
// of one Timing come from two consecutive copies of the same bytes. Managed memory: every copy starts
// with the managed buffer's copied range on the host (see to_host(), outside the timing), so h2d and
// d2h cross the bus each time; managed_prefetch moves it inside the timing (move()). copy_both() and prefetch()
// submit once, timed by both clocks. launch_empty() launches a 1x1x1 grid of the hand-written empty
// kernel with as many pointer parameters as it is given (cuda_ptx.cpp), once timed on the host
// around launch + cuStreamSynchronize and once between events.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "../loaders/cuda_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "clock.hpp"
#include "cuda_ptx.hpp"
#include "json.hpp"

namespace xferlab {

using namespace cuda;

namespace {

constexpr size_t kPage = 4096;
constexpr int kEntries = 9;  // xferlab_empty0 .. xferlab_empty8 (cuda_ptx.cpp)
constexpr double kEventResolutionSeconds = 0.5e-6;  // cuEventElapsedTime's documented resolution

// Calls a driver entry point; throws std::runtime_error naming it and the driver's error text.
#define XF_CU(d, fn, ...) cuda_check((d).fn(__VA_ARGS__), #fn)


bool is_managed(const Memory& m) {
  return !m.on_device && (m.kind == HostKind::managed || m.kind == HostKind::managed_prefetch);
}
// Device memory and managed memory are addressed by device (unified) pointers.
bool device_side(const Memory& m) { return m.on_device || is_managed(m); }

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return "cuda"; }

  ~CudaBackend() override { close(); }

  int device_count() override {
    const Driver& d = driver();
    int count = 0;
    XF_CU(d, cuDeviceGetCount, &count);
    if (count < 1) throw NotAvailable("the CUDA driver in " + cuda_library() + " reports no device");
    return count;
  }

  std::string describe(int index) override {
    const Driver& d = driver();
    const CUdevice dev = device_handle(index);
    char name[256] = {};
    XF_CU(d, cuDeviceGetName, name, static_cast<int>(sizeof name - 1), dev);
    size_t total = 0;
    XF_CU(d, cuDeviceTotalMem, &total, dev);
    int version = 0;
    XF_CU(d, cuDriverGetVersion, &version);
    const int major = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    const int minor = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    char pci[32] = "";
    const int domain = attribute(dev, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID), bus = attribute(dev, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
              slot = attribute(dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
    if (domain >= 0 && bus >= 0 && slot >= 0) std::snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", domain, bus, slot);
    const Features f = features(dev);
    std::string kinds;
    for (HostKind k : {HostKind::pageable, HostKind::pinned, HostKind::managed, HostKind::managed_prefetch})
      if ((k != HostKind::managed || f.managed) && (k != HostKind::managed_prefetch || f.prefetch))
        kinds += std::string(kinds.empty() ? "[\"" : ",\"") + host_kind_name(k) + "\"";
    kinds += "]";

    JsonLine json;
    json.str("backend", "cuda")
        .integer("index", index)
        .str("name", name)
        .str("type", "gpu")
        .boolean("integrated", attribute(dev, CU_DEVICE_ATTRIBUTE_INTEGRATED) == 1)
        .str("compute_capability", std::to_string(major) + "." + std::to_string(minor))
        .str("driver_version", std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10))
        .integer("driver_api_version", version)
        .str("library", cuda_library())
        .str("pci_bus_id", pci)
        .integer("compute_units", attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT))
        .integer("global_memory_bytes", static_cast<long long>(total))
        .integer("max_allocation_bytes", static_cast<long long>(total / 4));
    optional_integer(json, "clock_rate_hz", attribute(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE), 1000);
    optional_integer(json, "memory_clock_rate_hz", attribute(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE), 1000);
    optional_integer(json, "memory_bus_width_bits", attribute(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH), 1);
    optional_integer(json, "l2_cache_bytes", attribute(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), 1);
    optional_integer(json, "copy_engines", attribute(dev, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT), 1);
    json.boolean("ecc_enabled", attribute(dev, CU_DEVICE_ATTRIBUTE_ECC_ENABLED) == 1)
        .boolean("tcc_driver", attribute(dev, CU_DEVICE_ATTRIBUTE_TCC_DRIVER) == 1)
        .boolean("can_map_host_memory", attribute(dev, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) == 1)
        .boolean("unified_addressing", f.unified)
        .boolean("managed_memory", f.managed)
        .boolean("concurrent_managed_access", f.concurrent_managed)
        .boolean("pageable_memory_access", attribute(dev, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS) == 1)
        .raw("host_kinds", kinds)
        .boolean("peer_copies", cuda_peer_missing().empty())  // kernels --mode d2d between two devices
        .boolean("profiling", true)
        .number("profiling_resolution_seconds", kEventResolutionSeconds);
    return json.text();
  }

  void open(int index) override {
    const Driver& d = driver();
    const CUdevice dev = device_handle(index);
    close();
    features_ = features(dev);
    if (!features_.unified)
      throw NotAvailable("device " + std::to_string(index) + " has no unified addressing, which this probe needs");
    XF_CU(d, cuCtxCreate, &ctx_, CU_CTX_SCHED_SPIN | CU_CTX_MAP_HOST, dev);
    device_ = dev;
    for (auto& s : streams_) XF_CU(d, cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
    for (auto& e : events_) XF_CU(d, cuEventCreate, &e, CU_EVENT_DEFAULT);
    size_t total = 0;
    XF_CU(d, cuDeviceTotalMem, &total, dev);
    // CUDA sets no per-allocation limit; report a quarter of the memory, OpenCL's minimum
    // guarantee (and what NVIDIA's OpenCL reports), so both backends sweep the same sizes.
    max_alloc_ = total / 4;
  }

  size_t max_allocation() const override { return max_alloc_; }

  bool supports(HostKind kind) const override {
    if (!ctx_) return false;
    switch (kind) {
      case HostKind::pageable:
      case HostKind::pinned: return true;
      case HostKind::managed: return features_.managed;
      case HostKind::managed_prefetch: return features_.prefetch;
      default: return false;  // svm_coarse, svm_fine: OpenCL only
    }
  }

  std::unique_ptr<Memory> allocate_device(size_t bytes) override {
    const Driver& d = opened();
    CUdeviceptr p = 0;
    XF_CU(d, cuMemAlloc, &p, std::max<size_t>(bytes, 1));
    auto m = std::make_unique<Memory>();
    m->on_device = true;
    m->bytes = bytes;
    m->handle = static_cast<uintptr_t>(p);
    auto release = d.cuMemFree;
    m->release = [release, p] { release(p); };
    return m;
  }

  std::unique_ptr<Memory> allocate_host(HostKind kind, size_t bytes) override {
    const Driver& d = opened();
    if (!supports(kind))
      throw BadArgument(std::string("host memory kind '") + host_kind_name(kind) + "' is not supported by CUDA on this device");
    auto m = std::make_unique<Memory>();
    m->kind = kind;
    m->bytes = bytes;
    const size_t rounded = (std::max<size_t>(bytes, 1) + kPage - 1) / kPage * kPage;
    if (kind == HostKind::pageable) {
      void* p = std::aligned_alloc(kPage, rounded);  // page-aligned: NUMA binding works on it
      if (!p) throw std::runtime_error("out of host memory for " + std::to_string(bytes) + " bytes");
      m->host = p;
      m->release = [p] { std::free(p); };
    } else if (kind == HostKind::pinned) {
      void* p = nullptr;
      XF_CU(d, cuMemHostAlloc, &p, rounded, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
      m->host = p;
      auto release = d.cuMemFreeHost;
      m->release = [release, p] { release(p); };
    } else {  // managed, managed_prefetch
      CUdeviceptr p = 0;
      XF_CU(d, cuMemAllocManaged, &p, rounded, CU_MEM_ATTACH_GLOBAL);
      m->host = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
      m->handle = static_cast<uintptr_t>(p);
      auto release = d.cuMemFree;
      m->release = [release, p] { release(p); };
    }
    return m;
  }

  Timing copy(Memory& dst, const Memory& src, size_t bytes) override {
    const Driver& d = opened();
    check_bytes(dst, src, bytes);
    Timing t;
    to_host(d, dst, bytes);
    to_host(d, src, bytes);
    auto start = Clock::now();
    if (moved(src, bytes)) {
      move(d, src, bytes, true, streams_[0]);
      XF_CU(d, cuStreamSynchronize, streams_[0]);
    }
    submit_sync(d, dst, src, bytes);
    if (moved(dst, bytes)) {  // a synchronous copy may return before it is done: wait, then move
      cuda_check(d.cuCtxSynchronize(), "cuCtxSynchronize");
      move(d, dst, bytes, false, streams_[0]);
    }
    cuda_check(d.cuCtxSynchronize(), "cuCtxSynchronize");
    t.host_seconds = since(start);

    to_host(d, dst, bytes);
    to_host(d, src, bytes);
    XF_CU(d, cuEventRecord, events_[0], streams_[0]);
    move(d, src, bytes, true, streams_[0]);
    submit_async(d, dst, src, bytes, streams_[0]);
    move(d, dst, bytes, false, streams_[0]);
    XF_CU(d, cuEventRecord, events_[1], streams_[0]);
    XF_CU(d, cuEventSynchronize, events_[1]);
    t.device_seconds = elapsed(d, events_[0], events_[1]);
    return t;
  }

  Timing copy_both(Memory& dst1, const Memory& src1, Memory& dst2, const Memory& src2, size_t bytes) override {
    const Driver& d = opened();
    check_bytes(dst1, src1, bytes);
    check_bytes(dst2, src2, bytes);
    Timing t;
    for (const Memory* m : {static_cast<const Memory*>(&dst1), &src1, static_cast<const Memory*>(&dst2), &src2})
      to_host(d, *m, bytes);
    auto start = Clock::now();
    XF_CU(d, cuEventRecord, events_[0], streams_[0]);
    XF_CU(d, cuEventRecord, events_[2], streams_[1]);
    move(d, src1, bytes, true, streams_[0]);
    move(d, src2, bytes, true, streams_[1]);
    submit_async(d, dst1, src1, bytes, streams_[0]);
    submit_async(d, dst2, src2, bytes, streams_[1]);
    move(d, dst1, bytes, false, streams_[0]);
    move(d, dst2, bytes, false, streams_[1]);
    XF_CU(d, cuEventRecord, events_[1], streams_[0]);
    XF_CU(d, cuEventRecord, events_[3], streams_[1]);
    XF_CU(d, cuEventSynchronize, events_[1]);
    XF_CU(d, cuEventSynchronize, events_[3]);
    t.host_seconds = since(start);
    // From the earlier start to the later end; all four events are on one context's timeline.
    const double start2 = elapsed(d, events_[0], events_[2]);
    const double end1 = elapsed(d, events_[0], events_[1]);
    const double end2 = elapsed(d, events_[0], events_[3]);
    t.device_seconds = std::max(end1, end2) - std::min(0.0, start2);
    return t;
  }

  Timing prefetch(Memory& m, bool to_device) override {
    if (!is_managed(m)) return Timing{0.0, -1.0};
    const Driver& d = opened();
    if (!features_.prefetch)
      throw std::runtime_error("cuMemPrefetchAsync: this device lacks concurrentManagedAccess, so managed memory "
                               "cannot be prefetched to it");
    Timing t;
    auto start = Clock::now();
    XF_CU(d, cuEventRecord, events_[0], streams_[0]);
    XF_CU(d, cuMemPrefetchAsync, static_cast<CUdeviceptr>(m.handle), std::max<size_t>(m.bytes, 1),
          to_device ? device_ : CU_DEVICE_CPU, streams_[0]);
    XF_CU(d, cuEventRecord, events_[1], streams_[0]);
    XF_CU(d, cuEventSynchronize, events_[1]);
    t.host_seconds = since(start);
    t.device_seconds = elapsed(d, events_[0], events_[1]);
    return t;
  }

  Timing launch_empty(const std::vector<const Memory*>& args) override {
    const Driver& d = opened();
    const int max_args = cuda_empty_kernel_max_args();
    if (args.size() > static_cast<size_t>(max_args))
      throw BadArgument("at most " + std::to_string(max_args) + " kernel arguments");
    load_kernels(d);
    // Each parameter is a 64-bit address: the device or unified pointer, or for host memory its
    // host address (valid for mapped pinned memory under unified addressing; never dereferenced).
    CUdeviceptr values[kEntries] = {};
    void* params[kEntries] = {};
    for (size_t i = 0; i < args.size(); ++i) {
      values[i] = args[i]->handle ? static_cast<CUdeviceptr>(args[i]->handle)
                                  : static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(args[i]->host));
      params[i] = &values[i];
    }
    CUfunction f = kernels_[args.size()];
    void** list = args.empty() ? nullptr : params;
    Timing t;
    auto start = Clock::now();
    XF_CU(d, cuLaunchKernel, f, 1, 1, 1, 1, 1, 1, 0, streams_[0], list, nullptr);
    XF_CU(d, cuStreamSynchronize, streams_[0]);
    t.host_seconds = since(start);

    XF_CU(d, cuEventRecord, events_[0], streams_[0]);
    XF_CU(d, cuLaunchKernel, f, 1, 1, 1, 1, 1, 1, 0, streams_[0], list, nullptr);
    XF_CU(d, cuEventRecord, events_[1], streams_[0]);
    XF_CU(d, cuEventSynchronize, events_[1]);
    t.device_seconds = elapsed(d, events_[0], events_[1]);
    return t;
  }

 private:
  struct Features {
    bool unified = false, managed = false, concurrent_managed = false, prefetch = false;
  };

  // The loaded driver, or NotAvailable with the loader's reason.
  static const Driver& driver() {
    const std::string why = load_cuda();
    if (!why.empty()) throw NotAvailable(why);
    return cuda_driver();
  }

  const Driver& opened() const {
    if (!ctx_) throw std::logic_error("CUDA backend used before open()");
    return cuda_driver();
  }

  CUdevice device_handle(int index) {
    const int count = device_count();
    if (index < 0 || index >= count)
      throw BadArgument("device " + std::to_string(index) + " does not exist; the CUDA driver sees " +
                        std::to_string(count) + " device" + (count == 1 ? "" : "s") + " (0.." +
                        std::to_string(count - 1) + ")");
    CUdevice dev = 0;
    XF_CU(cuda_driver(), cuDeviceGet, &dev, index);
    return dev;
  }

  // An attribute's value, or -1 when this driver does not know it.
  static int attribute(CUdevice dev, CUdevice_attribute which) {
    int value = -1;
    if (cuda_driver().cuDeviceGetAttribute(&value, which, dev) != CUDA_SUCCESS) return -1;
    return value;
  }

  static void optional_integer(JsonLine& json, const char* key, int value, long long scale) {
    if (value >= 0) json.integer(key, value * scale);
  }

  static Features features(CUdevice dev) {
    const Driver& d = cuda_driver();
    Features f;
    f.unified = attribute(dev, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) == 1;
    f.managed = d.cuMemAllocManaged && attribute(dev, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) == 1;
    f.concurrent_managed = attribute(dev, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) == 1;
    f.prefetch = f.managed && f.concurrent_managed && d.cuMemPrefetchAsync;
    return f;
  }

  static void check_bytes(const Memory& dst, const Memory& src, size_t bytes) {
    if (bytes > dst.bytes || bytes > src.bytes)
      throw std::runtime_error("copy of " + std::to_string(bytes) + " bytes between buffers of " +
                               std::to_string(src.bytes) + " and " + std::to_string(dst.bytes) + " bytes");
  }

  // Managed memory stays where its last access left it: after one copy its pages live on the GPU, and
  // a second copy "from the host" would be a device-to-device copy (2 TB/s on an H200, seen in the first
  // run on a GPU). So each copy starts, outside its timed region, with the copied range of every managed
  // buffer on the host: moved there with cuMemPrefetchAsync where the device has concurrent managed
  // access, else touched page by page from the host (a write of the byte it holds).
  void to_host(const Driver& d, const Memory& m, size_t bytes) {
    if (!is_managed(m) || bytes == 0) return;
    if (features_.prefetch) {
      XF_CU(d, cuMemPrefetchAsync, address(m), bytes, CU_DEVICE_CPU, streams_[0]);
      XF_CU(d, cuStreamSynchronize, streams_[0]);
      return;
    }
    auto* p = static_cast<volatile unsigned char*>(m.host);
    for (size_t i = 0; i < bytes; i += kPage) p[i] = p[i];
    p[bytes - 1] = p[bytes - 1];
  }

  // managed-prefetch: the data is moved with cuMemPrefetchAsync inside the timed region, the source
  // to the device before the copy and the destination to the host after it (`to_device` says which).
  static bool moved(const Memory& m, size_t bytes) {
    return !m.on_device && m.kind == HostKind::managed_prefetch && bytes > 0;
  }
  void move(const Driver& d, const Memory& m, size_t bytes, bool to_device, CUstream s) {
    if (moved(m, bytes)) XF_CU(d, cuMemPrefetchAsync, address(m), bytes, to_device ? device_ : CU_DEVICE_CPU, s);
  }

  static CUdeviceptr address(const Memory& m) {
    return device_side(m) ? static_cast<CUdeviceptr>(m.handle)
                          : static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(m.host));
  }

  static void submit_sync(const Driver& d, Memory& dst, const Memory& src, size_t bytes) {
    if (device_side(dst) && device_side(src)) XF_CU(d, cuMemcpyDtoD, address(dst), address(src), bytes);
    else if (device_side(dst)) XF_CU(d, cuMemcpyHtoD, address(dst), src.host, bytes);
    else if (device_side(src)) XF_CU(d, cuMemcpyDtoH, dst.host, address(src), bytes);
    else XF_CU(d, cuMemcpy, address(dst), address(src), bytes);  // host to host, by unified addressing
  }

  static void submit_async(const Driver& d, Memory& dst, const Memory& src, size_t bytes, CUstream s) {
    if (device_side(dst) && device_side(src)) XF_CU(d, cuMemcpyDtoDAsync, address(dst), address(src), bytes, s);
    else if (device_side(dst)) XF_CU(d, cuMemcpyHtoDAsync, address(dst), src.host, bytes, s);
    else if (device_side(src)) XF_CU(d, cuMemcpyDtoHAsync, dst.host, address(src), bytes, s);
    else XF_CU(d, cuMemcpyAsync, address(dst), address(src), bytes, s);
  }

  static double elapsed(const Driver& d, CUevent from, CUevent to) {
    float ms = 0.0f;
    XF_CU(d, cuEventElapsedTime, &ms, from, to);
    return ms * 1e-3;
  }

  // JIT-compiles the embedded PTX on first use, outside any timed region.
  void load_kernels(const Driver& d) {
    if (module_) return;
    if (cuda_empty_kernel_max_args() + 1 != kEntries) throw std::logic_error("cuda_ptx.cpp and cuda_backend.cpp disagree");
    const std::string ptx = cuda_empty_kernel_ptx();
    const CUresult r = d.cuModuleLoadData(&module_, ptx.c_str());
    if (r != CUDA_SUCCESS) {
      module_ = nullptr;
      throw std::runtime_error("cuModuleLoadData (the embedded PTX of xferlab_empty0..8): " + cuda_error_text(r));
    }
    for (int n = 0; n <= cuda_empty_kernel_max_args(); ++n) {
      const std::string entry = cuda_empty_kernel_name(n);
      XF_CU(d, cuModuleGetFunction, &kernels_[n], module_, entry.c_str());
    }
  }

  // Releases everything open() and load_kernels() made; errors are ignored (nothing to do about them).
  void close() {
    if (!ctx_) return;
    const Driver& d = cuda_driver();
    d.cuCtxSynchronize();
    if (module_) d.cuModuleUnload(module_);
    for (auto& e : events_)
      if (e) d.cuEventDestroy(e);
    for (auto& s : streams_)
      if (s) d.cuStreamDestroy(s);
    d.cuCtxDestroy(ctx_);
    ctx_ = nullptr;
    module_ = nullptr;
    for (auto& k : kernels_) k = nullptr;
    for (auto& e : events_) e = nullptr;
    for (auto& s : streams_) s = nullptr;
  }

  CUcontext ctx_ = nullptr;
  CUdevice device_ = 0;
  CUstream streams_[2] = {};
  CUevent events_[4] = {};
  CUmodule module_ = nullptr;
  CUfunction kernels_[kEntries] = {};
  size_t max_alloc_ = 0;
  Features features_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace xferlab
