// The OpenCL backend: any ICD (PoCL, NVIDIA, AMD, Intel, Xilinx) through the run-time loader.
//
// Host memory kinds: pageable = 64-byte-aligned malloc handed to clEnqueueRead/WriteBuffer (the
// runtime stages it); pinned = a CL_MEM_ALLOC_HOST_PTR buffer mapped once for its host pointer
// (the pattern vendors recommend for DMA-speed transfers); svm_coarse / svm_fine = clSVMAlloc
// buffers, copied with clEnqueueSVMMemcpy. Device timing comes from the queue's profiling events
// (COMMAND_START to COMMAND_END).
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "../loaders/opencl_loader.hpp"
#include "args.hpp"
#include "programs.hpp"
#include "backend.hpp"
#include "clock.hpp"
#include "json.hpp"

namespace xferlab {

using namespace cl;

namespace {

constexpr int kMaxArgs = 8;

void check(cl_int code, const char* what) {
  if (code != CL_SUCCESS) throw std::runtime_error(std::string(what) + ": " + error_name(code));
}

class OpenCLBackend final : public Backend {
 public:
  const char* name() const override { return "opencl"; }

  int device_count() override {
    enumerate();
    return static_cast<int>(devices_.size());
  }

  std::string describe(int index) override {
    enumerate();
    if (index < 0 || index >= static_cast<int>(devices_.size())) throw_bad_index(index);
    cl_device_id d = devices_[index].second;
    cl_device_svm_capabilities svm = 0;
    api_.GetDeviceInfo(d, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, nullptr);
    cl_device_type type = 0;
    api_.GetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    cl_command_queue_properties queue = 0;
    api_.GetDeviceInfo(d, CL_DEVICE_QUEUE_PROPERTIES, sizeof queue, &queue, nullptr);
    cl_uint units = 0, align_bits = 0;
    api_.GetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
    api_.GetDeviceInfo(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, nullptr);
    size_t resolution = 0;
    api_.GetDeviceInfo(d, CL_DEVICE_PROFILING_TIMER_RESOLUTION, sizeof resolution, &resolution, nullptr);
    // the PCI address where the implementation has cl_khr_pci_bus_info ("": it has not, or the
    // device is the host CPU); system/locality.py reads its NUMA node and local CPUs from sysfs
    char pci[32] = "";
    cl_device_pci_bus_info_khr bus{};
    if (text(d, CL_DEVICE_EXTENSIONS).find("cl_khr_pci_bus_info") != std::string::npos &&
        api_.GetDeviceInfo(d, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof bus, &bus, nullptr) == CL_SUCCESS)
      std::snprintf(pci, sizeof pci, "%04x:%02x:%02x.%x", bus.pci_domain, bus.pci_bus, bus.pci_device, bus.pci_function);
    std::string json = JsonLine()
                           .str("backend", "opencl")
                           .integer("index", index)
                           .str("name", text(d, CL_DEVICE_NAME))
                           .str("vendor", text(d, CL_DEVICE_VENDOR))
                           .str("version", text(d, CL_DEVICE_VERSION))
                           .str("driver", text(d, CL_DRIVER_VERSION))
                           .str("opencl_c", text(d, CL_DEVICE_OPENCL_C_VERSION))
                           .str("platform", platform_text(api_, devices_[index].first, CL_PLATFORM_NAME))
                           .str("type", type & CL_DEVICE_TYPE_GPU ? "gpu" : type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
                                                                  : type & CL_DEVICE_TYPE_CPU ? "cpu" : "other")
                           .str("pci_bus_id", pci)
                           .integer("compute_units", units)
                           .integer("global_memory_bytes", static_cast<long long>(ulong_info(d, CL_DEVICE_GLOBAL_MEM_SIZE)))
                           .integer("max_allocation_bytes", static_cast<long long>(ulong_info(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE)))
                           // the device's global memory cache (a GPU's L2; a CPU device's figure is per core): the
                           // cache device STREAM's arrays must outgrow (measure/sizeclass.py)
                           .integer("global_mem_cache_bytes", static_cast<long long>(ulong_info(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE)))
                           .integer("base_address_alignment_bytes", align_bits / 8)
                           .boolean("svm_coarse_grain", svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)
                           .boolean("svm_fine_grain", svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)
                           .boolean("svm_fine_grain_system", svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM)
                           .boolean("svm_atomics", svm & CL_DEVICE_SVM_ATOMICS)
                           .boolean("profiling", queue & CL_QUEUE_PROFILING_ENABLE)
                           .number("profiling_resolution_seconds", resolution * 1e-9)
                           .text();
    return json;
  }

  void open(int index) override {
    enumerate();
    if (index < 0 || index >= static_cast<int>(devices_.size())) throw_bad_index(index);
    device_ = devices_[index].second;
    cl_int err = CL_SUCCESS;
    context_ = api_.CreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    queue_ = make_queue();  // the second queue, for copy_both, is made when first needed
    max_alloc_ = ulong_info(device_, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    if (max_alloc_ == 0)  // the query failed: every copy would be refused as too large
      throw std::runtime_error("clGetDeviceInfo(CL_DEVICE_MAX_MEM_ALLOC_SIZE) gave no largest allocation for this device");
    api_.GetDeviceInfo(device_, CL_DEVICE_SVM_CAPABILITIES, sizeof svm_, &svm_, nullptr);
    // No program yet: copies (transfer, chunks, network staging) never build one (issue 26); the
    // empty kernels are built by load_kernels(), which launch calls before it times anything.
  }

  void load_kernels() override {
    if (!program_) build_empty_kernels();
  }

  size_t max_allocation() const override { return max_alloc_; }

  bool supports(HostKind kind) const override {
    switch (kind) {
      case HostKind::pageable:
      case HostKind::pinned: return true;
      case HostKind::svm_coarse: return api_.SVMAlloc && (svm_ & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER);
      case HostKind::svm_fine: return api_.SVMAlloc && (svm_ & CL_DEVICE_SVM_FINE_GRAIN_BUFFER);
      default: return false;
    }
  }

  std::unique_ptr<Memory> allocate_device(size_t bytes) override {
    auto m = std::make_unique<Memory>();
    cl_int err = CL_SUCCESS;
    cl_mem mem = api_.CreateBuffer(context_, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &err);
    check(err, "clCreateBuffer");
    m->on_device = true;
    m->bytes = bytes;
    m->handle = reinterpret_cast<uintptr_t>(mem);
    auto* api = &api_;
    m->release = [api, mem] { api->ReleaseMemObject(mem); };
    return m;
  }

  std::unique_ptr<Memory> allocate_host(HostKind kind, size_t bytes) override {
    auto m = std::make_unique<Memory>();
    m->kind = kind;
    m->bytes = bytes;
    const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    auto* api = &api_;
    if (kind == HostKind::pageable) {
      // Page-aligned, so that NUMA binding works; transparent huge pages requested for large
      // buffers, as numpy and most allocators of large arrays do (fewer TLB misses in the copy).
      const size_t align = rounded >= (2u << 20) ? (2u << 20) : 4096;
      const size_t length = (rounded + align - 1) / align * align;
      void* p = std::aligned_alloc(align, length);
      if (!p) throw std::runtime_error("out of host memory for " + std::to_string(bytes) + " bytes");
      if (length >= (2u << 20)) madvise(p, length, MADV_HUGEPAGE);
      m->host = p;
      m->release = [p] { std::free(p); };
    } else if (kind == HostKind::pinned) {
      cl_int err = CL_SUCCESS;
      cl_mem mem = api_.CreateBuffer(context_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, rounded, nullptr, &err);
      check(err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
      void* p = api_.EnqueueMapBuffer(queue_, mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, rounded, 0, nullptr,
                                      nullptr, &err);
      check(err, "clEnqueueMapBuffer");
      m->host = p;
      m->handle = reinterpret_cast<uintptr_t>(mem);
      cl_command_queue q = queue_;
      m->release = [api, q, mem, p] {
        api->EnqueueUnmapMemObject(q, mem, p, 0, nullptr, nullptr);
        api->Finish(q);
        api->ReleaseMemObject(mem);
      };
    } else if (kind == HostKind::svm_coarse || kind == HostKind::svm_fine) {
      if (!supports(kind)) throw std::runtime_error(std::string(host_kind_name(kind)) + " is not supported by this device");
      cl_svm_mem_flags flags = CL_MEM_READ_WRITE | (kind == HostKind::svm_fine ? CL_MEM_SVM_FINE_GRAIN_BUFFER : 0);
      void* p = api_.SVMAlloc(context_, flags, rounded, 64);
      if (!p) throw std::runtime_error("clSVMAlloc of " + std::to_string(bytes) + " bytes failed");
      if (kind == HostKind::svm_coarse) {  // host access to coarse-grained SVM needs a map; keep it mapped
        check(api_.EnqueueSVMMap(queue_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, p, rounded, 0, nullptr, nullptr),
              "clEnqueueSVMMap");
      }
      m->host = p;
      m->handle = reinterpret_cast<uintptr_t>(p);
      cl_context c = context_;
      cl_command_queue q = queue_;
      bool coarse = kind == HostKind::svm_coarse;
      m->release = [api, c, q, p, coarse] {
        if (coarse) api->EnqueueSVMUnmap(q, p, 0, nullptr, nullptr);
        api->Finish(q);
        api->SVMFree(c, p);
      };
    } else {
      throw std::runtime_error(std::string(host_kind_name(kind)) + " is not an OpenCL memory kind");
    }
    return m;
  }

  Timing copy(Memory& dst, const Memory& src, size_t bytes) override {
    auto start = Clock::now();
    return wait_timed(start, submit_copy(queue_, dst, src, bytes, CL_TRUE));
  }

  Timing copy_both(Memory& dst1, const Memory& src1, Memory& dst2, const Memory& src2, size_t bytes) override {
    if (!second_) second_ = make_queue();
    auto start = Clock::now();
    cl_event evs[2] = {submit_copy(queue_, dst1, src1, bytes, CL_FALSE), submit_copy(second_, dst2, src2, bytes, CL_FALSE)};
    api_.Flush(queue_);
    api_.Flush(second_);
    check(api_.WaitForEvents(2, evs), "clWaitForEvents");
    Timing t;
    t.host_seconds = since(start);
    t.device_seconds = std::max(event_seconds(evs[0]), event_seconds(evs[1]));
    api_.ReleaseEvent(evs[0]);
    api_.ReleaseEvent(evs[1]);
    return t;
  }

  Timing prefetch(Memory&, bool) override { return Timing{0.0, -1.0}; }

  Timing launch_empty(const std::vector<const Memory*>& args) override {
    if (args.size() > kMaxArgs) throw BadArgument("at most " + std::to_string(kMaxArgs) + " kernel arguments");
    load_kernels();  // a no-op once built (the caller has built them before timing)
    cl_kernel k = kernels_[args.size()];
    auto start = Clock::now();
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i]->on_device || args[i]->kind == HostKind::pinned) {
        cl_mem mem = reinterpret_cast<cl_mem>(args[i]->handle);
        check(api_.SetKernelArg(k, static_cast<cl_uint>(i), sizeof mem, &mem), "clSetKernelArg");
      } else {
        check(api_.SetKernelArgSVMPointer(k, static_cast<cl_uint>(i), args[i]->host), "clSetKernelArgSVMPointer");
      }
    }
    const size_t global = 1;
    cl_event ev = nullptr;
    check(api_.EnqueueNDRangeKernel(queue_, k, 1, nullptr, &global, nullptr, 0, nullptr, &ev), "clEnqueueNDRangeKernel");
    return wait_timed(start, ev);
  }

  ~OpenCLBackend() override {
    for (auto k : kernels_)
      if (k) api_.ReleaseKernel(k);
    if (program_) api_.ReleaseProgram(program_);
    if (second_) api_.ReleaseCommandQueue(second_);
    if (queue_) api_.ReleaseCommandQueue(queue_);
    if (context_) api_.ReleaseContext(context_);
  }

 private:
  void enumerate() {
    if (enumerated_) return;
    std::string why = load(api_);
    if (!why.empty()) throw NotAvailable(why);
    devices_ = all_devices(api_, why);
    if (devices_.empty()) throw NotAvailable(why);
    enumerated_ = true;
  }

  [[noreturn]] void throw_bad_index(int index) const {
    throw BadArgument("device " + std::to_string(index) + " does not exist; OpenCL devices: 0.." +
                      std::to_string(static_cast<int>(devices_.size()) - 1));
  }

  std::string text(cl_device_id d, cl_device_info what) const { return device_text(api_, d, what); }

  cl_ulong ulong_info(cl_device_id d, cl_device_info what) const {
    cl_ulong value = 0;
    api_.GetDeviceInfo(d, what, sizeof value, &value, nullptr);
    return value;
  }

  cl_command_queue make_queue() {
    cl_int err = CL_SUCCESS;
    cl_command_queue q = cl::make_queue(api_, context_, device_, true, err);
    check(err, "clCreateCommandQueue");
    return q;
  }

  // The empty kernels, src/xferlab/kernels/launch.cl (or --program's binary of it: programs.hpp).
  void build_empty_kernels() {
    cl_int err = CL_SUCCESS;
    std::string log;
    program_ = make_program(api_, context_, device_, "launch", sources::k_launch, "", err, log);
    if (!program_) throw std::runtime_error("building the empty kernels failed: " + error_name(err) + ": " + log);
    for (int n = 0; n <= kMaxArgs; ++n) {
      kernels_[n] = make_kernel(api_, program_, "xferlab_empty" + std::to_string(n));
    }
  }

  // A blocking read or write returns when the host memory may be reused, as an application's
  // would; copy_both submits without blocking so that both directions run at once.
  cl_event submit_copy(cl_command_queue q, Memory& dst, const Memory& src, size_t bytes, cl_bool blocking) {
    cl_event ev = nullptr;
    auto mem = [](const Memory& m) { return reinterpret_cast<cl_mem>(m.handle); };
    if (dst.on_device && src.on_device) {
      check(api_.EnqueueCopyBuffer(q, mem(src), mem(dst), 0, 0, bytes, 0, nullptr, &ev), "clEnqueueCopyBuffer");
    } else if (dst.on_device) {
      check(api_.EnqueueWriteBuffer(q, mem(dst), blocking, 0, bytes, src.host, 0, nullptr, &ev), "clEnqueueWriteBuffer");
    } else if (src.on_device) {
      check(api_.EnqueueReadBuffer(q, mem(src), blocking, 0, bytes, dst.host, 0, nullptr, &ev), "clEnqueueReadBuffer");
    } else if (api_.EnqueueSVMMemcpy) {
      check(api_.EnqueueSVMMemcpy(q, blocking, dst.host, src.host, bytes, 0, nullptr, &ev), "clEnqueueSVMMemcpy");
    } else {
      throw std::runtime_error("host-to-host copies need OpenCL 2.0 (clEnqueueSVMMemcpy)");
    }
    return ev;
  }

  // Waits for `ev`; both clocks: the host's since `start`, the device's from the event's profile.
  Timing wait_timed(Clock::time_point start, cl_event ev) {
    check(api_.WaitForEvents(1, &ev), "clWaitForEvents");
    Timing t;
    t.host_seconds = since(start);
    t.device_seconds = event_seconds(ev);
    api_.ReleaseEvent(ev);
    return t;
  }

  double event_seconds(cl_event ev) const {
    cl_ulong start = 0, end = 0;
    if (api_.GetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) != CL_SUCCESS ||
        api_.GetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) != CL_SUCCESS)
      return -1.0;
    return end >= start ? (end - start) * 1e-9 : -1.0;
  }

  Api api_{};
  bool enumerated_ = false;
  std::vector<std::pair<cl_platform_id, cl_device_id>> devices_;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr, second_ = nullptr;
  cl_program program_ = nullptr;
  cl_kernel kernels_[kMaxArgs + 1] = {};
  size_t max_alloc_ = 0;
  cl_device_svm_capabilities svm_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_opencl_backend() { return std::make_unique<OpenCLBackend>(); }

}  // namespace xferlab
