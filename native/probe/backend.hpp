// One interface for every accelerator programming model (BabelStream's style): the sweeps in
// device.cpp are written once over it; opencl_backend.cpp, cuda_backend.cpp and sycl_backend.cpp implement it over
// runtimes loaded with dlopen at run time (native/loaders/), so nothing vendor-specific is needed
// to build.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace xferlab {

// The runtime, driver or device is not there. main() prints "not available: <reason>" and exits
// with code 3 so that callers can tell it from a failure.
struct NotAvailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Kinds of host memory a transfer can start or end in.
enum class HostKind {
  pageable,          // aligned malloc: the runtime stages it through its own pinned buffers
  pinned,            // page-locked: OpenCL CL_MEM_ALLOC_HOST_PTR mapped; CUDA cuMemHostAlloc
  svm_coarse,        // OpenCL coarse-grained SVM buffer
  svm_fine,          // OpenCL fine-grained SVM buffer
  managed,           // CUDA managed memory, migrated on demand
  managed_prefetch,  // CUDA managed memory, prefetched to the device before use
  usm_host,          // SYCL sycl::malloc_host: pinned host memory the device reads directly
  usm_shared,        // SYCL sycl::malloc_shared: migrates between host and device
};
constexpr int kHostKinds = 8;
const char* host_kind_name(HostKind kind);
bool parse_host_kind(const std::string& name, HostKind& kind);

// A piece of memory a backend allocated: device memory, or host memory of one kind.
struct Memory {
  bool on_device = false;     // device memory (not host-addressable)
  HostKind kind = HostKind::pageable;
  size_t bytes = 0;
  void* host = nullptr;       // host-addressable pointer (host kinds, SVM, managed)
  uintptr_t handle = 0;       // backend handle: cl_mem, CUdeviceptr, or the SVM/managed pointer
  std::function<void()> release;  // frees it; called by the destructor
  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() {
    if (release) release();
  }
};

// Every timed operation reports both clocks: the host steady clock around submit + wait, and the
// device's own timestamps (OpenCL profiling events, CUDA events) when the backend has them.
struct Timing {
  double host_seconds = 0.0;
  double device_seconds = -1.0;  // < 0: no device timing
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // Devices. Throws NotAvailable (with the reason) when the runtime cannot be loaded.
  virtual int device_count() = 0;
  virtual std::string describe(int device) = 0;  // a JSON object: the device's inventory
  virtual void open(int device) = 0;             // throws BadArgument for a device that does not exist
  virtual size_t max_allocation() const = 0;
  virtual bool supports(HostKind kind) const = 0;

  // Memory; host memory is at least 64-byte aligned (see device.cpp for why).
  virtual std::unique_ptr<Memory> allocate_device(size_t bytes) = 0;
  virtual std::unique_ptr<Memory> allocate_host(HostKind kind, size_t bytes) = 0;

  // Blocking copy of `bytes` from src to dst (host or device on either side).
  virtual Timing copy(Memory& dst, const Memory& src, size_t bytes) = 0;
  // Two copies submitted together on independent queues/streams, waited for together.
  virtual Timing copy_both(Memory& dst1, const Memory& src1, Memory& dst2, const Memory& src2, size_t bytes) = 0;
  // Managed memory: migrate to the device (or back) and wait; no-op for other kinds.
  virtual Timing prefetch(Memory& m, bool to_device) = 0;

  // The empty kernel with `args` buffer arguments: submit, wait; `args` may be empty.
  virtual Timing launch_empty(const std::vector<const Memory*>& args) = 0;
  // Makes the empty kernels ready (OpenCL builds its program here, never in open(), so that copies
  // build none); launch_empty() calls it too, but a caller that times launches calls it first.
  virtual void load_kernels() {}
};

std::unique_ptr<Backend> make_opencl_backend();  // opencl_backend.cpp
std::unique_ptr<Backend> make_cuda_backend();    // cuda_backend.cpp
std::unique_ptr<Backend> make_sycl_backend();    // sycl_backend.cpp
// "opencl", "cuda" or "sycl"; throws BadArgument for anything else.
std::unique_ptr<Backend> make_backend(const std::string& name);

}  // namespace xferlab
