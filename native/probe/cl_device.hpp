// One OpenCL device opened directly through the run-time loader (native/loaders/opencl_loader.hpp):
// its context, one in-order queue, one program and the few calls a probe that writes its own
// kernels needs (collab.cpp). Devices are numbered as `xferlab-probe devices` lists them: every
// platform in order, every device of each. Header-only; errors follow the probe's conventions:
// no runtime or device → NotAvailable (exit 3), a device index that does not exist → BadArgument
// (exit 2), a failing call → std::runtime_error naming the call and the error code.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../loaders/opencl_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "placement.hpp"
#include "programs.hpp"

namespace xferlab {

inline void cl_check(cl::cl_int code, const char* what) {
  if (code != cl::CL_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cl::error_name(code));
}

// Silences file descriptor 2 while it lives: OpenCL compilers print their diagnostics there, and
// the probe's stderr is kept for its own one-line errors (build logs are returned instead).
class QuietStderr {
 public:
  QuietStderr() {
    std::fflush(stderr);
    saved_ = dup(2);
    int null = ::open("/dev/null", O_WRONLY);
    if (saved_ >= 0 && null >= 0) dup2(null, 2);
    if (null >= 0) close(null);
  }
  ~QuietStderr() {
    std::fflush(stderr);
    if (saved_ >= 0) {
      dup2(saved_, 2);
      close(saved_);
    }
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  int saved_ = -1;
};

class ClDevice {
 public:
  // Loads the library and finds device `index`; nothing is created yet (see open()).
  explicit ClDevice(int index) {
    using namespace cl;
    std::string why = load(api_);
    if (!why.empty()) throw NotAvailable(why);
    auto all = all_devices(api_, why);
    if (all.empty()) throw NotAvailable(why);
    if (index < 0 || index >= static_cast<int>(all.size()))
      throw BadArgument("device " + std::to_string(index) + " does not exist; OpenCL devices: 0.." +
                        std::to_string(all.size() - 1));
    device_ = all[index].second;
    api_.GetDeviceInfo(device_, CL_DEVICE_SVM_CAPABILITIES, sizeof svm_caps, &svm_caps, nullptr);
    if (api_.GetDeviceInfo(device_, CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES, sizeof atomic_caps, &atomic_caps, nullptr) !=
        CL_SUCCESS)
      atomic_caps = 0;  // before OpenCL 3.0
    // These three every OpenCL 1.x device answers; one that fails leaves a limit of 0, which would
    // refuse every buffer: say which query failed instead.
    query(CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, "CL_DEVICE_MAX_COMPUTE_UNITS");
    query(CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
    query(CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group, &max_group, "CL_DEVICE_MAX_WORK_GROUP_SIZE");
  }

  void query(cl::cl_device_info what, size_t size, void* out, const char* name) const {
    const cl::cl_int err = api_.GetDeviceInfo(device_, what, size, out, nullptr);
    if (err != cl::CL_SUCCESS)
      throw std::runtime_error(std::string("clGetDeviceInfo(") + name + ") failed: " + cl::error_name(err));
  }

  // Whether the library has the OpenCL 2.0 SVM entry points.
  bool svm_api() const { return api_.SVMAlloc && api_.SVMFree && api_.SetKernelArgSVMPointer; }

  // Creates the context and `queues` in-order queues (profiling on request); the first is the one
  // the calls below use, the others are for kernels.cpp's concurrent instances.
  void open(size_t queues = 1, bool profiling = false) {
    using namespace cl;
    cl_int err = CL_SUCCESS;
    context_ = api_.CreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    cl_check(err, "clCreateContext");
    for (size_t i = 0; i < std::max<size_t>(queues, 1); ++i) {
      queues_.push_back(make_queue(api_, context_, device_, profiling, err));
      cl_check(err, "clCreateCommandQueue");
    }
    queue_ = queues_[0];
    place_requested();  // --cpus (kernels, collab): the host thread placed once the runtime's threads exist
  }
  const cl::Api& api() const { return api_; }
  cl::cl_context context() const { return context_; }
  cl::cl_device_id id() const { return device_; }
  cl::cl_command_queue queue(size_t i) const { return queues_.at(i); }
  size_t queue_count() const { return queues_.size(); }

  // Builds program `name` (its embedded `source`, or --program's binary: programs.hpp) with each set
  // of options in turn until one succeeds; returns its index. Why the others failed (their first
  // compiler error) is kept in `refused`. Throws if none builds: BadArgument naming --program on an
  // accelerator (an FPGA's runtime may compile nothing at run time), else a runtime_error.
  size_t build(const std::string& name, const char* source, const std::vector<std::string>& options) {
    using namespace cl;
    QuietStderr quiet;
    for (size_t i = 0; i < options.size(); ++i) {
      cl_int err = CL_SUCCESS;
      std::string log;
      cl_program p = make_program(api_, context_, device_, name, source, options[i], err, log, options.size() > 1);
      if (p) {
        program_ = p;
        return i;
      }
      // The first error, without the temporary file's path: "error: /tmp/x.cl:2:56: use of …".
      std::string first;
      std::smatch m;
      static const std::regex located(R"(error:.*?\.cl:\d+:\d+(?: <[^>]*>)?: (.*))");
      std::istringstream lines(log);
      for (std::string line; first.empty() && std::getline(lines, line);)
        if (line.find("error") != std::string::npos) first = std::regex_search(line, m, located) ? m[1].str() : line;
      refused += (refused.empty() ? "" : "; ") + options[i] + ": " + error_name(err) +
                 (first.empty() ? "" : " " + first.substr(0, 300));
    }
    cl_device_type type = 0;
    api_.GetDeviceInfo(device_, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    if (!program_plan().path.empty())
      throw BadArgument("--program '" + program_plan().path + "' has no " + name + " program that builds for this " +
                        "device: " + refused);
    if (type & CL_DEVICE_TYPE_ACCELERATOR) throw BadArgument(no_compiler("the build failed: " + refused));
    throw std::runtime_error("the kernels do not build: " + refused);
  }
  cl::cl_program program() const { return program_; }

  cl::cl_kernel kernel(const char* name) {
    cl::cl_kernel k = make_kernel(api_, program_, name);
    kernels_.push_back(k);
    return k;
  }
  template <class T>
  void arg(cl::cl_kernel k, cl::cl_uint i, const T& v) {
    cl_check(api_.SetKernelArg(k, i, sizeof v, &v), "clSetKernelArg");
  }
  void svm_arg(cl::cl_kernel k, cl::cl_uint i, const void* p) {
    cl_check(api_.SetKernelArgSVMPointer(k, i, p), "clSetKernelArgSVMPointer");
  }
  // Enqueues `groups` work-groups of `local` work-items and flushes, so that the device starts
  // while the caller goes on (finish() waits).
  void launch(cl::cl_kernel k, size_t groups, size_t local) {
    const size_t global = groups * local;
    cl_check(api_.EnqueueNDRangeKernel(queue_, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
             "clEnqueueNDRangeKernel");
    cl_check(api_.Flush(queue_), "clFlush");
  }
  void finish() { cl_check(api_.Finish(queue_), "clFinish"); }

  // A device buffer that releases itself, also when an exception leaves the scope that made it.
  class Buffer {
   public:
    Buffer(const cl::Api& api, cl::cl_mem mem) : api_(api), mem_(mem) {}
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& other) noexcept : api_(other.api_), mem_(other.mem_) { other.mem_ = nullptr; }
    ~Buffer() {
      if (mem_) api_.ReleaseMemObject(mem_);
    }
    cl::cl_mem get() const { return mem_; }

   private:
    const cl::Api& api_;
    cl::cl_mem mem_;
  };

  Buffer buffer(size_t bytes) {
    cl::cl_int err = cl::CL_SUCCESS;
    cl::cl_mem m = api_.CreateBuffer(context_, cl::CL_MEM_READ_WRITE, std::max<size_t>(bytes, 4), nullptr, &err);
    cl_check(err, "clCreateBuffer");
    return Buffer(api_, m);
  }
  // Blocking copies between host memory and a buffer.
  void arg(cl::cl_kernel k, cl::cl_uint i, const Buffer& b) { arg(k, i, b.get()); }
  void write(const Buffer& b, const void* p, size_t bytes) {
    const cl::cl_mem m = b.get();
    if (bytes)
      cl_check(api_.EnqueueWriteBuffer(queue_, m, cl::CL_TRUE, 0, bytes, p, 0, nullptr, nullptr), "clEnqueueWriteBuffer");
  }
  void read(const Buffer& b, void* p, size_t bytes) {
    const cl::cl_mem m = b.get();
    if (bytes)
      cl_check(api_.EnqueueReadBuffer(queue_, m, cl::CL_TRUE, 0, bytes, p, 0, nullptr, nullptr), "clEnqueueReadBuffer");
  }
  // Fine-grained SVM (host and device use the pointer directly), with SVM atomics if `atomic`.
  void* svm(size_t bytes, bool atomic) {
    cl::cl_svm_mem_flags flags =
        cl::CL_MEM_READ_WRITE | cl::CL_MEM_SVM_FINE_GRAIN_BUFFER | (atomic ? cl::CL_MEM_SVM_ATOMICS : 0);
    void* p = api_.SVMAlloc(context_, flags, std::max<size_t>(bytes, 64), 128);
    if (!p) throw std::runtime_error("clSVMAlloc of " + std::to_string(bytes) + " fine-grained bytes failed");
    return p;
  }
  void svm_free(void* p) {
    if (p) api_.SVMFree(context_, p);
  }

  std::string text(cl::cl_device_info what) const { return cl::device_text(api_, device_, what); }

  ~ClDevice() {
    for (auto k : kernels_) api_.ReleaseKernel(k);
    if (program_) api_.ReleaseProgram(program_);
    for (auto q : queues_) api_.ReleaseCommandQueue(q);
    if (context_) api_.ReleaseContext(context_);
  }
  ClDevice(const ClDevice&) = delete;
  ClDevice& operator=(const ClDevice&) = delete;

  cl::cl_device_svm_capabilities svm_caps = 0;
  cl::cl_device_atomic_capabilities atomic_caps = 0;
  cl::cl_uint units = 1;
  cl::cl_ulong max_alloc = 0;
  size_t max_group = 0;
  std::string refused;  // why the build options that failed were refused

 private:
  cl::Api api_{};
  cl::cl_device_id device_ = nullptr;
  cl::cl_context context_ = nullptr;
  cl::cl_command_queue queue_ = nullptr;
  std::vector<cl::cl_command_queue> queues_;
  cl::cl_program program_ = nullptr;
  std::vector<cl::cl_kernel> kernels_;
};

}  // namespace xferlab
