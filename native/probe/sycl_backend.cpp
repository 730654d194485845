// The SYCL backend: a SYCL runtime (Intel's DPC++ runtime, libsycl) through dpctl's C API, loaded at
// run time (native/loaders/sycl_loader.hpp), so nothing of SYCL is needed to build the probe and a
// machine without dpctl reports "not available" (exit code 3).
//
// Memory (SYCL 2020, section 4.8 "Unified shared memory"): device memory is sycl::malloc_device;
// host kinds are pageable (page-aligned aligned_alloc, which the runtime stages), usm-host
// (sycl::malloc_host: pinned host memory the device reads directly) and usm-shared
// (sycl::malloc_shared: migrates between host and device). Each kind is offered only where the
// device has its aspect (usm_device_allocations, usm_host_allocations, usm_shared_allocations):
// the runtime aborts the process, not throws, on a USM host allocation a device cannot make
// (seen with PoCL 3.1 under DPC++ 2026.2). Every copy is sycl::queue::memcpy on one in-order queue.
//
// Clocks: the host steady clock around memcpy/submit + event wait; the device's from the event's
// profiling start and end (command_start/command_end), where the device has queue_profiling.
// launch_empty() submits the empty kernel with 0..8 USM pointer arguments as a 1-item range
// (sycl::handler::parallel_for over a kernel built from OpenCL C source through the runtime's
// OpenCL interoperability: only devices of SYCL's OpenCL backend build it).
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "../loaders/sycl_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "clock.hpp"
#include "json.hpp"
#include "probe_programs.inc"

namespace xferlab {

using namespace sycl;

namespace {

constexpr size_t kPage = 4096;
constexpr int kMaxArgs = 8;

int g_last_error = 0;
void on_error(int code) { g_last_error = code; }

const Api& api() {
  const std::string why = load_sycl();
  if (!why.empty()) throw NotAvailable(why);
  return sycl_api();
}

// A string dpctl hands over (its to free).
std::string take(const Api& a, const char* text) {
  std::string out = text ? text : "";
  if (text) a.DPCTLCString_Delete(text);
  return out;
}

const char* backend_name(int b) {
  return b == DPCTL_OPENCL ? "opencl" : b == DPCTL_LEVEL_ZERO ? "level_zero" : b == DPCTL_CUDA ? "cuda" : b == DPCTL_HIP ? "hip" : "unknown";
}

class SyclBackend final : public Backend {
 public:
  const char* name() const override { return "sycl"; }

  ~SyclBackend() override {
    if (!loaded_) return;
    const Api& a = sycl_api();
    for (KernelRef k : kernels_)
      if (k) a.DPCTLKernel_Delete(k);
    if (bundle_) a.DPCTLKernelBundle_Delete(bundle_);
    for (QueueRef q : {queue_, second_})
      if (q) a.DPCTLQueue_Delete(q);
    for (DeviceRef d : refs_)
      if (d) a.DPCTLDevice_Delete(d);
    if (devices_) a.DPCTLDeviceVector_Delete(devices_);
  }

  int device_count() override {
    list();
    const int n = static_cast<int>(api().DPCTLDeviceVector_Size(devices_));
    if (n < 1) throw NotAvailable("the SYCL runtime behind " + sycl_library() + " finds no device");
    return n;
  }

  std::string describe(int index) override {
    const Api& a = api();
    DeviceRef d = device(index);
    PlatformRef p = a.DPCTLDevice_GetPlatform(d);
    const int type = a.DPCTLDevice_GetDeviceType(d);
    std::string kinds = "[\"pageable\"";
    if (a.DPCTLDevice_HasAspect(d, kAspectUsmHost)) kinds += ",\"usm-host\"";
    if (a.DPCTLDevice_HasAspect(d, kAspectUsmShared)) kinds += ",\"usm-shared\"";
    kinds += "]";
    JsonLine json;
    json.str("backend", "sycl")
        .integer("index", index)
        .str("name", take(a, a.DPCTLDevice_GetName(d)))
        .str("vendor", take(a, a.DPCTLDevice_GetVendor(d)))
        .str("driver", take(a, a.DPCTLDevice_GetDriverVersion(d)))
        .str("platform", p ? take(a, a.DPCTLPlatform_GetName(p)) : "")
        .str("platform_version", p ? take(a, a.DPCTLPlatform_GetVersion(p)) : "")
        .str("sycl_backend", backend_name(a.DPCTLDevice_GetBackend(d)))
        .str("sycl_runtime", "DPC++ " + take(a, a.DPCTLService_GetDPCPPVersion()))
        .str("library", sycl_library())
        .str("type", type & DPCTL_GPU ? "gpu" : type & DPCTL_ACCELERATOR ? "accelerator" : type & DPCTL_CPU ? "cpu" : "other")
        .integer("compute_units", a.DPCTLDevice_GetMaxComputeUnits(d))
        .integer("global_memory_bytes", static_cast<long long>(a.DPCTLDevice_GetGlobalMemSize(d)))
        .integer("max_allocation_bytes", static_cast<long long>(a.DPCTLDevice_GetMaxMemAllocSize(d)))
        .boolean("usm_device_allocations", a.DPCTLDevice_HasAspect(d, kAspectUsmDevice))
        .boolean("usm_host_allocations", a.DPCTLDevice_HasAspect(d, kAspectUsmHost))
        .boolean("usm_shared_allocations", a.DPCTLDevice_HasAspect(d, kAspectUsmShared))
        .raw("host_kinds", kinds)
        .boolean("profiling", a.DPCTLDevice_HasAspect(d, kAspectQueueProfiling));
    if (p) a.DPCTLPlatform_Delete(p);
    return json.text();
  }

  void open(int index) override {
    const Api& a = api();
    device_ = device(index);
    if (!a.DPCTLDevice_HasAspect(device_, kAspectUsmDevice))
      throw BadArgument("SYCL device " + std::to_string(index) + " (" + take(a, a.DPCTLDevice_GetName(device_)) +
                        ") cannot allocate USM device memory (no usm_device_allocations aspect)");
    profiling_ = a.DPCTLDevice_HasAspect(device_, kAspectQueueProfiling);
    queue_ = make_queue();
    max_allocation_ = a.DPCTLDevice_GetMaxMemAllocSize(device_);
  }

  size_t max_allocation() const override { return max_allocation_; }

  bool supports(HostKind kind) const override {
    const Api& a = sycl_api();
    if (kind == HostKind::pageable) return true;
    if (kind == HostKind::usm_host) return a.DPCTLDevice_HasAspect(device_, kAspectUsmHost);
    if (kind == HostKind::usm_shared) return a.DPCTLDevice_HasAspect(device_, kAspectUsmShared);
    return false;
  }

  std::unique_ptr<Memory> allocate_device(size_t bytes) override {
    void* p = api().DPCTLmalloc_device(std::max<size_t>(bytes, 1), queue_);
    if (!p) throw std::runtime_error("sycl::malloc_device of " + std::to_string(bytes) + " bytes failed");
    auto m = usm(p, bytes);
    m->on_device = true;
    return m;
  }

  std::unique_ptr<Memory> allocate_host(HostKind kind, size_t bytes) override {
    const size_t rounded = (std::max<size_t>(bytes, 1) + kPage - 1) / kPage * kPage;
    if (kind == HostKind::pageable) {
      void* p = std::aligned_alloc(kPage, rounded);  // page-aligned: NUMA binding works on it
      if (!p) throw std::runtime_error("aligned_alloc of " + std::to_string(rounded) + " bytes failed");
      auto m = std::make_unique<Memory>();
      m->bytes = bytes;
      m->host = p;
      m->handle = reinterpret_cast<uintptr_t>(p);
      m->release = [p] { std::free(p); };
      return m;
    }
    if (!supports(kind)) throw BadArgument(std::string("host memory kind '") + host_kind_name(kind) + "' is not supported");
    const Api& a = api();
    void* p = kind == HostKind::usm_host ? a.DPCTLmalloc_host(rounded, queue_) : a.DPCTLmalloc_shared(rounded, queue_);
    if (!p) throw std::runtime_error(std::string("USM allocation (") + host_kind_name(kind) + ") of " +
                                     std::to_string(rounded) + " bytes failed");
    auto m = usm(p, bytes);
    m->kind = kind;
    m->host = p;
    return m;
  }

  Timing copy(Memory& dst, const Memory& src, size_t bytes) override {
    const Api& a = sycl_api();
    const auto t0 = Clock::now();
    EventRef e = a.DPCTLQueue_Memcpy(queue_, address(dst), address(src), bytes);
    if (!e) throw std::runtime_error("sycl::queue::memcpy of " + std::to_string(bytes) + " bytes failed (error " +
                                     std::to_string(g_last_error) + ")");
    return waited(t0, e);
  }

  Timing copy_both(Memory& dst1, const Memory& src1, Memory& dst2, const Memory& src2, size_t bytes) override {
    const Api& a = sycl_api();
    if (!second_) second_ = make_queue();
    const auto t0 = Clock::now();
    EventRef e1 = a.DPCTLQueue_Memcpy(queue_, address(dst1), address(src1), bytes);
    EventRef e2 = a.DPCTLQueue_Memcpy(second_, address(dst2), address(src2), bytes);
    if (!e1 || !e2) throw std::runtime_error("sycl::queue::memcpy (two queues) failed");
    a.DPCTLEvent_Wait(e1);
    a.DPCTLEvent_Wait(e2);
    Timing t;
    t.host_seconds = since(t0);
    a.DPCTLEvent_Delete(e1);
    a.DPCTLEvent_Delete(e2);
    return t;
  }

  Timing prefetch(Memory&, bool) override { return Timing{}; }

  Timing launch_empty(const std::vector<const Memory*>& args) override {
    const Api& a = sycl_api();
    if (!bundle_) build_empty_kernels();
    void* values[kMaxArgs] = {};
    int types[kMaxArgs] = {};
    for (size_t i = 0; i < args.size(); ++i) {
      values[i] = reinterpret_cast<void*>(args[i]->handle);
      types[i] = DPCTL_VOID_PTR;
    }
    const size_t range[3] = {1, 1, 1};
    const auto t0 = Clock::now();
    EventRef e = a.DPCTLQueue_SubmitRange(kernels_[args.size()], queue_, values, types, args.size(), range, 1, nullptr, 0);
    if (!e) throw std::runtime_error("submitting the empty kernel failed (error " + std::to_string(g_last_error) + ")");
    return waited(t0, e);
  }

 private:
  // Waits for one submitted command: the host's time since t0 and the event's profiled device time.
  Timing waited(Clock::time_point t0, EventRef e) {
    const Api& a = sycl_api();
    a.DPCTLEvent_Wait(e);
    Timing t;
    t.host_seconds = since(t0);
    t.device_seconds = device_time(e);
    a.DPCTLEvent_Delete(e);
    return t;
  }

  void list() {
    const Api& a = api();
    loaded_ = true;
    if (!devices_) devices_ = a.DPCTLDeviceMgr_GetDevices(DPCTL_ALL_BACKENDS | DPCTL_ALL);
    if (!devices_) throw NotAvailable("the SYCL runtime behind " + sycl_library() + " could not list its devices");
  }

  DeviceRef device(int index) {
    list();
    const int n = static_cast<int>(sycl_api().DPCTLDeviceVector_Size(devices_));
    if (index < 0 || index >= n)
      throw BadArgument("--device " + std::to_string(index) + " does not exist; SYCL devices: 0.." + std::to_string(n - 1));
    if (refs_.empty()) refs_.resize(static_cast<size_t>(n), nullptr);
    if (!refs_[index]) refs_[index] = sycl_api().DPCTLDeviceVector_GetAt(devices_, static_cast<size_t>(index));
    return refs_[index];
  }

  QueueRef make_queue() {
    QueueRef q = sycl_api().DPCTLQueue_CreateForDevice(device_, on_error, DPCTL_IN_ORDER | (profiling_ ? DPCTL_ENABLE_PROFILING : 0));
    if (!q) throw std::runtime_error("creating a SYCL queue failed (error " + std::to_string(g_last_error) + ")");
    return q;
  }

  std::unique_ptr<Memory> usm(void* p, size_t bytes) {
    auto m = std::make_unique<Memory>();
    m->bytes = bytes;
    m->handle = reinterpret_cast<uintptr_t>(p);
    QueueRef q = queue_;
    m->release = [p, q] { sycl_api().DPCTLfree_with_queue(p, q); };
    return m;
  }

  static void* address(const Memory& m) { return m.on_device ? reinterpret_cast<void*>(m.handle) : m.host; }

  double device_time(EventRef e) const {
    if (!profiling_) return -1.0;
    const Api& a = sycl_api();
    const uint64_t start = a.DPCTLEvent_GetProfilingInfoStart(e), end = a.DPCTLEvent_GetProfilingInfoEnd(e);
    return end > start ? static_cast<double>(end - start) * 1e-9 : -1.0;
  }

  void build_empty_kernels() {
    const Api& a = sycl_api();
    ContextRef ctx = a.DPCTLQueue_GetContext(queue_);
    // the OpenCL backend's source (src/xferlab/kernels/launch.cl, embedded by CMakeLists.txt), built with no options
    bundle_ = a.DPCTLKernelBundle_CreateFromOCLSource(ctx, device_, sources::k_launch, "");
    a.DPCTLContext_Delete(ctx);
    if (!bundle_)
      throw std::runtime_error("building the empty kernels from OpenCL C through SYCL failed (only devices of SYCL's "
                               "OpenCL backend build them)");
    for (int n = 0; n <= kMaxArgs; ++n) {
      kernels_[n] = a.DPCTLKernelBundle_GetKernel(bundle_, ("xferlab_empty" + std::to_string(n)).c_str());
      if (!kernels_[n]) throw std::runtime_error("the empty kernel xferlab_empty" + std::to_string(n) + " is missing");
    }
  }

  bool loaded_ = false;
  DeviceVectorRef devices_ = nullptr;
  std::vector<DeviceRef> refs_;
  DeviceRef device_ = nullptr;
  QueueRef queue_ = nullptr, second_ = nullptr;
  bool profiling_ = false;
  size_t max_allocation_ = 0;
  KernelBundleRef bundle_ = nullptr;
  KernelRef kernels_[kMaxArgs + 1] = {};
};

}  // namespace

std::unique_ptr<Backend> make_sycl_backend() { return std::make_unique<SyclBackend>(); }

}  // namespace xferlab
