// `xferlab-probe kernels`: what an OpenCL device does with memory once the data are there, and what
// touching host memory from a kernel costs (seeds 001 and 004). Four modes:
//
//   stream  BabelStream's kernels (copy c=a, mul b=s*c, add c=a+b, triad a=b+s*c, dot sum a*b) and a
//           read-only sum, over arrays of `--size` bytes in device memory, pinned host memory, the
//           application's host memory (CL_MEM_USE_HOST_PTR) or SVM; float or double, 1 to 16
//           elements per work-item; over a list of work-group counts and of concurrent instances
//           (one queue and disjoint arrays each: seed 004's "kernel copies"). The options, the
//           sweep, the timed loop and the check are kernels_driver.cpp's, shared with CUDA; this
//           file is the OpenCL model (ClStream): its kernels, arrays and launch_all(), where it is
//           timed: the host clock around enqueue on every queue + finish of all, and the device's
//           event timestamps (first start to last end). Bytes as BabelStream counts them: copy,
//           mul, dot 2 arrays; add, triad 3; read 1.
//   faults  a kernel touching fresh shared (SVM) memory one byte per stride: first touch (the
//           device's page faults) against a second touch, then the host reading it back; the
//           loop and the check are kernels_driver.cpp's (drive_touch), this file's ClTouch the model.
//   align   H2D/D2H copies from host buffers at offsets from a page, allocated by the runtime
//           (a mapped CL_MEM_ALLOC_HOST_PTR buffer) or by the application (posix_memalign); align,
//           d2d and spmv are kernels_memory.cpp's.
//   d2d     device to device between two devices (run_d2d_mode): through the runtime in one context,
//           and staged through pinned host memory. CUDA's: kernels_cuda_peer.cpp (peer or driver-staged).
//   spmv    CSR y = A x, one row per work-item, from a matrix file xferlab writes (measure/kernels.py);
//           y goes back to a file so that Python checks it against SciPy.
//
// Every result is checked: stream against a host replay of the kernel on the same initial arrays,
// faults and align against the bytes written, spmv by the caller. One JSON line per timed sample.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "args.hpp"
#include "cl_device.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "probe.hpp"
#include "kernels_cl.hpp"
#include "kernels_driver.hpp"

namespace xferlab {
namespace kcl {

const char* const kSource = sources::k_stream;  // src/xferlab/kernels/stream.cl, embedded by CMakeLists.txt

Timing launch_all(ClDevice& dev, const std::vector<cl::cl_kernel>& kernels, size_t global, size_t local) {
  const auto& api = dev.api();
  std::vector<cl::cl_event> events(kernels.size(), nullptr);
  const auto t0 = Clock::now();
  for (size_t k = 0; k < kernels.size(); ++k) {
    cl_check(api.EnqueueNDRangeKernel(dev.queue(k), kernels[k], 1, nullptr, &global, &local, 0, nullptr, &events[k]),
             "clEnqueueNDRangeKernel");
    cl_check(api.Flush(dev.queue(k)), "clFlush");
  }
  for (size_t k = 0; k < kernels.size(); ++k) cl_check(api.Finish(dev.queue(k)), "clFinish");
  Timing out;
  out.host_seconds = since(t0);
  out.device_seconds = device_span(api, events);
  for (auto e : events) api.ReleaseEvent(e);
  return out;
}

// Device timestamps of a set of events: last end - first start (seconds), -1 if unavailable.
double device_span(const cl::Api& api, const std::vector<cl::cl_event>& events) {
  cl::cl_ulong first = ~0ull, last = 0;
  for (auto e : events) {
    cl::cl_ulong start = 0, end = 0;
    if (api.GetEventProfilingInfo(e, cl::CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) != cl::CL_SUCCESS ||
        api.GetEventProfilingInfo(e, cl::CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) != cl::CL_SUCCESS)
      return -1.0;
    first = std::min(first, start);
    last = std::max(last, end);
  }
  return last > first ? (last - first) * 1e-9 : -1.0;
}

// The work-group size: 256, within the device's and the kernel's limits, a power of two (the
// reduction halves it).
size_t pick_local(ClDevice& dev, const char* kernel) {
  cl::cl_kernel k = dev.kernel(kernel);
  size_t most = 0;
  dev.api().GetKernelWorkGroupInfo(k, dev.id(), cl::CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most, nullptr);
  size_t local = std::min<size_t>({256, dev.max_group, most ? most : 256});
  size_t p = 1;
  while (p * 2 <= local) p *= 2;
  return p;
}

std::string options(const std::string& type, int width) {
  return std::string("-DTYPE=") + type + " -DIS_DOUBLE=" + (type == "double" ? "1" : "0") +
         " -DW=" + std::to_string(width);
}

}  // namespace kcl

namespace {

using namespace kcl;

const std::vector<std::string> kMemories = {"device", "pinned", "host", "svm-coarse", "svm-fine"};

// One point's arrays on an OpenCL device: every instance's a, b, c and partial sums, and its
// kernel (with its own queue) bound to them.
class ClStreamArrays final : public StreamArrays {
 public:
  ClStreamArrays(ClDevice& dev, const StreamPoint& p, size_t elements, const void* a, const void* b, const void* c,
                 size_t local)
      : dev_(dev), global_(static_cast<size_t>(p.groups) * local), local_(local) {
    const size_t size = p.f64 ? 8 : 4, bytes = elements * size, groups = static_cast<size_t>(p.groups);
    const cl::cl_ulong nvec = elements / static_cast<size_t>(p.width);
    const bool covers = groups * local >= nvec && !stream_reduces(p.kernel);  // one element per work-item
    grid_stride = !covers;
    partials = groups;  // one per work-group
    for (size_t k = 0; k < static_cast<size_t>(p.instances); ++k) {
      arrays_.add(dev, p.memory, bytes, groups * size, a, b, c);
      cl::cl_kernel kern = dev.kernel(("stream_" + p.kernel + (covers ? "_1" : "")).c_str());
      // Each kernel's arguments, as kSource declares them: arrays, then the scalar, then the length.
      cl::cl_uint i = 0;
      for (char name : stream_arguments(p.kernel)) arrays_(name, k).bind(kern, i++);
      if (stream_reduces(p.kernel))
        cl_check(dev.api().SetKernelArg(kern, i++, local * size, nullptr), "clSetKernelArg(local)");
      if (stream_scaled(p.kernel)) {
        if (p.f64)
          dev.arg(kern, i++, kStreamScalar);
        else
          dev.arg(kern, i++, static_cast<float>(kStreamScalar));
      }
      dev.arg(kern, i, nvec);
      kernels_.push_back(kern);
    }
  }
  Timing launch() override { return launch_all(dev_, kernels_, global_, local_); }
  void read(int instance, char name, void* out) override { arrays_(name, static_cast<size_t>(instance)).get(out); }

 private:
  ClDevice& dev_;
  size_t global_, local_;
  InstanceArrays<Array> arrays_;
  std::vector<cl::cl_kernel> kernels_;
};

// Device STREAM on an OpenCL device: its memories (SVM where the device has it), double where it
// has cl_khr_fp64, every vector width, kSource built for each type and width.
class ClStream final : public StreamModel {
 public:
  ClStream(int device, const StreamOptions& o) : index_(device), dev_(device), queues_(o.most_instances()) {
    if (static_cast<unsigned long long>(o.size) > dev_.max_alloc)
      throw BadArgument("--size " + std::to_string(o.size) + " is above the device's largest allocation, " +
                        std::to_string(dev_.max_alloc) + " bytes");
    cl::cl_ulong fp64 = 0;
    dev_.api().GetDeviceInfo(dev_.id(), cl::CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, nullptr);
    fp64_ = fp64 != 0;
    dev_.open(queues_, true);
    JsonLine()
        .str("record", "setup")
        .str("device_name", dev_.text(cl::CL_DEVICE_NAME))
        .integer("device_index", device)
        .integer("compute_units", dev_.units)
        .integer("max_work_group_size", static_cast<long long>(dev_.max_group))
        .integer("max_allocation_bytes", static_cast<long long>(dev_.max_alloc))
        .boolean("double", fp64_)
        .integer("svm_capabilities", static_cast<long long>(dev_.svm_caps))
        .str("host_cpus", placed_cpus_text())
        .emit();
  }
  std::string lacks_memory(const std::string& memory) override { return lacks_svm(dev_, memory); }
  std::string lacks_type(const std::string& type) override {
    return type == "double" && !fp64_ ? "the device has no double precision (cl_khr_fp64)" : "";
  }
  size_t prepare(const std::string& type, int width) override {
    built_.reset();
    built_ = std::make_unique<ClDevice>(index_);
    built_->open(queues_, true);
    built_->build("stream", kSource, {options(type, width)});
    return pick_local(*built_, "stream_dot");
  }
  // One work-item per vector for the streaming kernels (as BabelStream); for the reductions about 8
  // vectors per work-item, at least 4 groups per compute unit (BabelStream's fixed 4 per unit leaves
  // a CPU device's work-items long serial loops).
  size_t auto_groups(const std::string& kernel, size_t vectors, size_t local) override {
    return stream_reduces(kernel) ? std::max<size_t>(4 * static_cast<size_t>(built_->units), vectors / (local * 8))
                                  : std::max<size_t>(1, std::min<size_t>((vectors + local - 1) / local, 1 << 20));
  }
  std::unique_ptr<StreamArrays> load(const StreamPoint& p, size_t elements, const void* a, const void* b,
                                     const void* c) override {
    return std::make_unique<ClStreamArrays>(*built_, p, elements, a, b, c, static_cast<size_t>(p.local));
  }

 private:
  int index_;
  ClDevice dev_;  // the device's setup and limits; each type and width is built on its own (built_)
  size_t queues_;
  bool fp64_ = false;
  std::unique_ptr<ClDevice> built_;
};

int run_stream_mode(Args& args, int device) {
  const StreamOptions o = stream_options(args, kMemories);
  ClStream model(device, o);
  return drive_stream(model, o);
}

}  // namespace

namespace kcl {

namespace {

// One fresh SVM allocation on an OpenCL device, the touch kernel bound to it.
class ClFresh final : public FreshMemory {
 public:
  ClFresh(ClDevice& dev, cl::cl_kernel touch, const std::string& memory, size_t bytes, cl::cl_ulong stride,
          cl::cl_ulong touches, size_t local)
      : dev_(dev), touch_(touch), array_(dev, memory, bytes), coarse_(memory == "svm-coarse"), bytes_(bytes),
        local_(local), global_(std::max<size_t>(1, std::min<size_t>((touches + local - 1) / local, 4096)) * local) {
    array_.bind(touch, 0);
    dev.arg(touch, 1, stride);
    dev.arg(touch, 2, touches);
  }
  Timing touch() override {
    const auto& api = dev_.api();
    cl::cl_event e = nullptr;
    Timing t;
    const auto t0 = Clock::now();
    cl_check(api.EnqueueNDRangeKernel(dev_.queue(0), touch_, 1, nullptr, &global_, &local_, 0, nullptr, &e),
             "clEnqueueNDRangeKernel");
    cl_check(api.Finish(dev_.queue(0)), "clFinish");
    t.host_seconds = since(t0);
    t.device_seconds = device_span(api, {e});
    api.ReleaseEvent(e);
    return t;
  }
  const unsigned char* map() override {
    if (coarse_)
      cl_check(dev_.api().EnqueueSVMMap(dev_.queue(0), cl::CL_TRUE, cl::CL_MAP_READ, array_.svm(), bytes_, 0, nullptr,
                                        nullptr),
               "clEnqueueSVMMap");
    return static_cast<const unsigned char*>(array_.svm());
  }
  void unmap() override {
    if (coarse_) cl_check(dev_.api().EnqueueSVMUnmap(dev_.queue(0), array_.svm(), 0, nullptr, nullptr), "clEnqueueSVMUnmap");
    cl_check(dev_.api().Finish(dev_.queue(0)), "clFinish");
  }

 private:
  ClDevice& dev_;
  cl::cl_kernel touch_;
  Array array_;  // never touched by the host
  bool coarse_;
  size_t bytes_, local_, global_;
};

// First touch on an OpenCL device: fine- and coarse-grained SVM, where the device has it.
class ClTouch final : public TouchModel {
 public:
  explicit ClTouch(int device) : dev_(device) {
    dev_.open(1, true);
    dev_.build("stream", kSource, {options("float", 1)});
    touch_ = dev_.kernel("touch");
    local_ = pick_local(dev_, "touch");
  }
  std::string lacks_memory(const std::string& memory) override { return lacks_svm(dev_, memory); }
  bool device_clock() const override { return true; }
  std::unique_ptr<FreshMemory> fresh(const std::string& memory, size_t bytes, unsigned long long stride,
                                     unsigned long long touches) override {
    return std::make_unique<ClFresh>(dev_, touch_, memory, bytes, stride, touches, local_);
  }

 private:
  ClDevice dev_;
  cl::cl_kernel touch_ = nullptr;
  size_t local_ = 1;
};

}  // namespace

int run_faults_mode(Args& args, int device) {
  const TouchOptions o = touch_options(args, {"svm-fine", "svm-coarse"});
  ClTouch model(device);
  return drive_touch(model, o);
}

}  // namespace kcl

int run_kernels_cuda(Args& args, int device, const std::string& mode);  // kernels_cuda.cpp

int run_kernels(Args& args) {
  const std::string backend = args.words("backend", "opencl", {"opencl", "cuda"}).front();
  const int device = static_cast<int>(args.integer("device", 0, 0, 1023));
  const std::string mode = args.words("mode", "stream", {"stream", "faults", "align", "spmv", "d2d", "ptx"}).front();
  // --cpus: the host thread placed once the mode's device is open (ClDevice::open, the CUDA context)
  if (args.given("cpus")) request_placement(parse_cpu_list(args.text("cpus", ""), "--cpus"));
  if (backend == "cuda") return run_kernels_cuda(args, device, mode);  // kernels_cuda.cpp
  read_program_option(args);
  if (mode == "faults") return kcl::run_faults_mode(args, device);
  if (mode == "align") return kcl::run_align_mode(args, device);
  if (mode == "spmv") return kcl::run_spmv_mode(args, device);
  if (mode == "d2d") return kcl::run_d2d_mode(args, device);
  if (mode == "ptx") throw BadArgument("--mode ptx is the CUDA backend's (its kernels' PTX): add --backend cuda");
  return run_stream_mode(args, device);
}

}  // namespace xferlab
