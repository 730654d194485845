// The OpenCL pieces that kernels.cpp (device STREAM, faults) and kernels_memory.cpp (alignment,
// device to device, SpMV) share: the kernels' source, memory of each kind a kernel can be given,
// the device's timestamps of a launch, the work-group size and the build options.
#pragma once
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "args.hpp"
#include "cl_device.hpp"
#include "clock.hpp"

namespace xferlab::kcl {

extern const char* const kSource;  // kernels.cpp: every kernel, for TYPE and width W

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


// "" when the device has `memory`, else why not: the SVM kinds need the device's SVM capability.
inline std::string lacks_svm(const ClDevice& dev, const std::string& memory) {
  if (memory.rfind("svm", 0) != 0) return "";
  const auto needs = memory == "svm-fine" ? cl::CL_DEVICE_SVM_FINE_GRAIN_BUFFER : cl::CL_DEVICE_SVM_COARSE_GRAIN_BUFFER;
  return dev.svm_caps & needs ? "" : "the device has no " + memory + " SVM";
}

// Where a kernel is timed: kernels[k] enqueued on queue k (global x local work-items) for every k,
// then every queue finished. Host seconds around it all, and the device's own (first event's start
// to last event's end; -1 when the device gives none).
Timing launch_all(ClDevice& dev, const std::vector<cl::cl_kernel>& kernels, size_t global, size_t local);
// Device timestamps of a set of events: last end - first start (seconds), -1 if unavailable.
double device_span(const cl::Api& api, const std::vector<cl::cl_event>& events);
// The work-group size for `kernel`: 256 within the device's and the kernel's limits, a power of two.
size_t pick_local(ClDevice& dev, const char* kernel);
// Build options for TYPE (float, double) and W elements per work-item.
std::string options(const std::string& type, int width);

int run_faults_mode(Args& args, int device);  // kernels.cpp
int run_align_mode(Args& args, int device);  // kernels_memory.cpp
int run_spmv_mode(Args& args, int device);
int run_d2d_mode(Args& args, int device);

}  // namespace xferlab::kcl
