// The offload runtime's OpenCL backend: the slot ring and the request interpreter (ops/interp.h, kernel
// xf_window) on any OpenCL device, through the run-time loader (native/loaders/opencl_loader.hpp), so no
// OpenCL SDK is needed to build it. PoCL runs it in CI.
//
// Device state (made by open): the requests of one window, the slot ring, the window's out entries, a
// status word (the first XF_ERR_* since open) and enc64's 27 round keys, written once and never sent
// again. One launch is one non-blocking write of the window's records and one kernel of a single
// work-group: the kernel runs the window level by level with a barrier between levels, so the window must
// fit in one work-group (open checks max_window against the limits).
//
// The work-group is always max_window work-items (global = local = max_window; work-items i >= n only
// pass the barriers), not n: PoCL compiles one work-group function per local size, at the first launch
// of that size. Measured here (PoCL 3.1, cold kernel cache, 2 cores): about 0.5 s for each new size, 16.9 s
// for the first windows of sizes 1..32 against 0.5 s with a fixed size; once compiled, a launch of a
// 1-request window in a 32-wide group cost the same as in a 1-wide group, within noise (about 7 us).
// open() launches an empty window so that this compilation happens there, not in the first window.
//
// Ordering: one in-order queue, so a write, the kernel after it and any later read run in the order the
// host issued them (Khronos, The OpenCL Specification 1.2, section 5.1: in-order execution). Blocking
// reads therefore see every earlier window.
//
// Why the writes do not block: a blocking write returns only when the write has run, and in an in-order
// queue that is after the previous window's kernel; the host would wait for the device at every launch.
// Instead each launch copies the records into a staging buffer the backend owns (a small ring of them,
// each with the event of its write) and returns; a staging buffer is reused only after its write's event
// has completed (clWaitForEvents), as the specification requires of host memory handed to a non-blocking
// clEnqueueWriteBuffer (section 5.2.2).
//
// The status word rides along with every read: read_out and read_slot enqueue a non-blocking read of it
// just before their blocking read, so when that returns (in order) the status of every window so far is
// on the host, and the runtime's status() check right after a read costs no second round trip (measured
// on PoCL: a blocking read alone is 15-40 us). It is still a read of its own on the bus: BusCounters
// counts it (status_reads), the runtime's Counters do not.
//
// The program (program "runtime", kernel xf_window) is made by the probe's make_program
// (native/loaders/opencl_programs.hpp): from source, or from --program FILE|DIR's binary or SPIR-V,
// the DIR's file named by program_file("runtime", options) as `xferlab kernels build` writes it.
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "opencl_loader.hpp"
#include "opencl_programs.hpp"
#include "ops/xf_portable.h"
#include "ops/posit32.h"
#include "ops/enc64.h"
#include "ops/interp.h"
#include "runtime.hpp"
#include "device_errors.hpp"
#include "bus_count.hpp"

#include "runtime_program.hpp"  // kKernelSource (the four op headers, as CMakeLists.txt embeds them), kRuntimeOptions

namespace xferlab::runtime {

namespace {

using namespace xferlab::cl;

// Any OpenCL error: the call and the code's name.
void check(cl_int code, const char* call) {
  if (code != CL_SUCCESS) throw std::runtime_error(std::string("OpenCL: ") + call + " failed: " + error_name(code));
}

constexpr int kStaging = 4;  // staging buffers in the ring (writes in flight at once, at most)

class OpenCLBus final : public Bus {
 public:
  OpenCLBus(int device_index, const std::string& program) : plan_(program_plan_for(program)) {
    std::string why = load(api_);
    if (!why.empty()) throw std::runtime_error("OpenCL device " + std::to_string(device_index) + ": " + why);
    auto devices = all_devices(api_, why);
    if (devices.empty()) throw std::runtime_error("OpenCL device " + std::to_string(device_index) + ": " + why);
    const int count = static_cast<int>(devices.size());
    if (device_index < 0 || device_index >= count)
      throw std::runtime_error(
          "OpenCL device " + std::to_string(device_index) + " does not exist: there " +
          (count == 1 ? "is 1 device (index 0)"
                      : "are " + std::to_string(count) + " devices (indices 0.." + std::to_string(count - 1) + ")") +
          ", numbered as `xferlab inventory` lists them");
    platform_ = devices[device_index].first;
    device_ = devices[device_index].second;
    name_ = "opencl: " + device_text(api_, device_, CL_DEVICE_NAME) + " (" +
            platform_text(api_, platform_, CL_PLATFORM_NAME) + ")";
  }

  ~OpenCLBus() override { release(); }

  std::string name() const override { return name_; }

  void open(uint32_t slots, uint32_t max_window, const uint32_t round_keys[27]) override {
    if (slots == 0) throw std::runtime_error("OpenCL backend: a ring of 0 slots; at least 1 is needed");
    if (max_window == 0) throw std::runtime_error("OpenCL backend: a window of 0 requests; at least 1 is needed");
    release();  // a second open starts over
    counted_ = BusCounters();
    cl_int err = CL_SUCCESS;
    context_ = api_.CreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    queue_ = xferlab::cl::make_queue(api_, context_, device_, false, err);  // in order, no profiling
    check(err, "clCreateCommandQueue");
    build();
    kernel_ = api_.CreateKernel(program_, "xf_window", &err);
    check(err, "clCreateKernel(xf_window)");
    check_window(max_window);

    slots_ = slots;
    max_window_ = max_window;
    const size_t record_bytes = size_t(max_window) * XF_WORDS * sizeof(uint64_t);
    req_ = buffer(record_bytes);
    slot_mem_ = buffer(size_t(slots) * sizeof(uint64_t));
    out_ = buffer(size_t(max_window) * sizeof(uint64_t));
    status_ = buffer(sizeof(uint32_t));
    keys_ = buffer(27 * sizeof(uint32_t));
    const std::vector<uint64_t> zeros(slots, 0);
    write_now(slot_mem_, zeros.data(), size_t(slots) * sizeof(uint64_t));
    const uint32_t ok = XF_ERR_NONE;
    write_now(status_, &ok, sizeof ok);
    write_now(keys_, round_keys, 27 * sizeof(uint32_t));

    arg(0, req_);
    arg(1, slot_mem_);
    arg(2, out_);
    arg(3, status_);
    arg(4, keys_);
    arg(7, static_cast<cl_uint>(slots));
    for (auto& s : staging_) s.words.assign(size_t(max_window) * XF_WORDS, 0);
    enqueue_kernel(0, 0);  // an empty window: compiles the work-group function now (see the top)
    check(api_.Finish(queue_), "clFinish");
    opened_ = true;
  }

  void launch(const uint64_t* words, uint32_t n, uint32_t levels) override {
    require_open("launch");
    if (n == 0) return;
    if (n > max_window_)
      throw std::runtime_error("OpenCL backend: a window of " + std::to_string(n) + " requests; open allowed " +
                               std::to_string(max_window_));
    Staging& s = staging_[next_staging_];
    next_staging_ = (next_staging_ + 1) % kStaging;
    if (s.written) {  // its last write must have run before the host overwrites it
      cl_event done = s.written;
      s.written = nullptr;
      const cl_int waited = api_.WaitForEvents(1, &done);
      api_.ReleaseEvent(done);
      check(waited, "clWaitForEvents (staging buffer)");
    }
    const size_t bytes = size_t(n) * XF_WORDS * sizeof(uint64_t);
    std::memcpy(s.words.data(), words, bytes);
    check(api_.EnqueueWriteBuffer(queue_, req_, CL_FALSE, 0, bytes, s.words.data(), 0, nullptr, &s.written),
          "clEnqueueWriteBuffer (requests)");
    status_fresh_ = false;
    enqueue_kernel(n, levels);
    count_window(counted_, words, n);
    check(api_.Flush(queue_), "clFlush");
  }

  void read_out(uint64_t* dst, uint32_t n_out) override {
    require_open("read_out");
    if (n_out > max_window_)
      throw std::runtime_error("OpenCL backend: " + std::to_string(n_out) + " out entries asked for; a window has " +
                               std::to_string(max_window_));
    if (n_out == 0) {
      check(api_.Finish(queue_), "clFinish");
      return;
    }
    status_fresh_ = false;
    fetch_status();
    check(api_.EnqueueReadBuffer(queue_, out_, CL_TRUE, 0, size_t(n_out) * sizeof(uint64_t), dst, 0, nullptr, nullptr),
          "clEnqueueReadBuffer (out)");
    count_read(counted_, size_t(n_out) * sizeof(uint64_t), n_out);
    status_fresh_ = true;
  }

  uint64_t read_slot(uint32_t slot) override {
    require_open("read_slot");
    if (slot >= slots_)
      throw std::runtime_error("OpenCL backend: slot " + std::to_string(slot) + " is past the ring of " +
                               std::to_string(slots_));
    uint64_t value = 0;
    status_fresh_ = false;
    fetch_status();
    check(api_.EnqueueReadBuffer(queue_, slot_mem_, CL_TRUE, size_t(slot) * sizeof(uint64_t), sizeof value, &value, 0,
                                 nullptr, nullptr),
          "clEnqueueReadBuffer (slot)");
    count_read(counted_, sizeof value, 1);
    status_fresh_ = true;
    return value;
  }

  uint32_t status(std::string* detail) override {
    require_open("status");
    if (!status_fresh_) {  // a window was launched since the last read: ask the device
      check(
          api_.EnqueueReadBuffer(queue_, status_, CL_TRUE, 0, sizeof status_word_, &status_word_, 0, nullptr, nullptr),
          "clEnqueueReadBuffer (status)");
      count_read(counted_, sizeof status_word_, 0, true);
      status_fresh_ = true;
    }
    const uint32_t code = status_word_;
    if (detail) {
      *detail = describe_error(code);
    }
    return code;
  }

  // Counted as the backend enqueues each command that crosses to the device or back (open's setup left
  // out): a window's records and its kernel, every read, the status word's included.
  BusCounters counted() override { return counted_; }

  ProgramCount programs() const override { return made_; }

 private:
  struct Staging {
    std::vector<uint64_t> words;
    cl_event written = nullptr;  // its pending write, if any
  };

  void require_open(const char* what) const {
    if (!opened_) throw std::runtime_error(std::string("OpenCL backend: ") + what + " before a successful open");
  }

  // Builds kKernelSource as OpenCL C 1.2 (what xf_portable.h is written for); a compiler that refuses the
  // option gets a second try without it (kRuntimeOptions). From --program's binaries when given (each
  // option set's file, skipped where the DIR has none). Fails with both build logs: in one line naming
  // --program when the binaries do not serve or the device is an accelerator (it may compile nothing).
  void build() {
    std::string logs, refused;  // every build log; one line of why each option set failed
    for (const char* options : kRuntimeOptions) {
      cl_int err = CL_SUCCESS;
      std::string log;
      cl_program p = make_program(api_, context_, device_, plan_, made_, "runtime", kKernelSource, options, err, log,
                                  true);
      if (p) {
        program_ = p;
        return;
      }
      logs += std::string("\n[options \"") + options + "\": " + error_name(err) + "]\n" + log;
      refused += std::string(refused.empty() ? "" : "; ") + "'" + options + "': " + log.substr(0, log.find('\n'));
    }
    if (!plan_.path.empty())
      throw ProgramRefused("--program '" + plan_.path + "' has no runtime program that builds for this device (" +
                           refused + "); `xferlab kernels build` writes it");
    cl_device_type type = 0;
    api_.GetDeviceInfo(device_, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    if (type & CL_DEVICE_TYPE_ACCELERATOR) throw ProgramRefused(no_compiler("the build failed:" + logs));
    throw std::runtime_error("OpenCL: the runtime's interpreter kernel does not build on " + name_ + ":" + logs);
  }

  // The window runs in one work-group: max_window work-items must fit the kernel's limit (registers and
  // private memory), the device's work-group limit and its work-item limit in dimension 0.
  void check_window(uint32_t max_window) {
    size_t kernel_limit = 0, device_limit = 0;
    check(api_.GetKernelWorkGroupInfo(kernel_, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_limit, &kernel_limit,
                                      nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    check(api_.GetDeviceInfo(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof device_limit, &device_limit, nullptr),
          "clGetDeviceInfo(CL_DEVICE_MAX_WORK_GROUP_SIZE)");
    size_t item_sizes[3] = {0, 0, 0};  // every device has at least 3 dimensions (CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS)
    check(api_.GetDeviceInfo(device_, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof item_sizes, item_sizes, nullptr),
          "clGetDeviceInfo(CL_DEVICE_MAX_WORK_ITEM_SIZES)");
    if (max_window > kernel_limit || max_window > device_limit || max_window > item_sizes[0])
      throw std::runtime_error("OpenCL backend: a window of " + std::to_string(max_window) +
                               " requests does not fit one work-group on " + name_ + ": the kernel allows " +
                               std::to_string(kernel_limit) + " work-items (CL_KERNEL_WORK_GROUP_SIZE), the device " +
                               std::to_string(device_limit) + " (CL_DEVICE_MAX_WORK_GROUP_SIZE) and " +
                               std::to_string(item_sizes[0]) + " in dimension 0 (CL_DEVICE_MAX_WORK_ITEM_SIZES)");
  }

  // Enqueues a read of the status word into status_word_ without waiting; the blocking read the caller
  // enqueues next returns after it (in-order queue).
  void fetch_status() {
    check(api_.EnqueueReadBuffer(queue_, status_, CL_FALSE, 0, sizeof status_word_, &status_word_, 0, nullptr, nullptr),
          "clEnqueueReadBuffer (status)");
    count_read(counted_, sizeof status_word_, 0, true);
  }

  // One work-group of max_window work-items runs the first n requests of the records.
  void enqueue_kernel(uint32_t n, uint32_t levels) {
    arg(5, static_cast<cl_uint>(n));
    arg(6, static_cast<cl_uint>(levels));
    const size_t size = max_window_;  // global = local: a single work-group
    check(api_.EnqueueNDRangeKernel(queue_, kernel_, 1, nullptr, &size, &size, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel(xf_window)");
  }

  cl_mem buffer(size_t bytes) {
    cl_int err = CL_SUCCESS;
    cl_mem m = api_.CreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    check(err, "clCreateBuffer");
    mems_.push_back(m);
    return m;
  }

  void write_now(cl_mem m, const void* p, size_t bytes) {
    check(api_.EnqueueWriteBuffer(queue_, m, CL_TRUE, 0, bytes, p, 0, nullptr, nullptr), "clEnqueueWriteBuffer");
  }

  template <class T>
  void arg(cl_uint index, const T& value) {
    check(api_.SetKernelArg(kernel_, index, sizeof value, &value), "clSetKernelArg(xf_window)");
  }

  // Waits for the queue (a pending write still reads a staging buffer), then frees everything open made.
  void release() {
    opened_ = false;
    status_fresh_ = false;
    if (queue_) api_.Finish(queue_);
    for (auto& s : staging_) {
      if (s.written) api_.ReleaseEvent(s.written);
      s.written = nullptr;
    }
    for (auto m : mems_) api_.ReleaseMemObject(m);
    mems_.clear();
    if (kernel_) api_.ReleaseKernel(kernel_);
    if (program_) api_.ReleaseProgram(program_);
    if (queue_) api_.ReleaseCommandQueue(queue_);
    if (context_) api_.ReleaseContext(context_);
    kernel_ = nullptr;
    program_ = nullptr;
    queue_ = nullptr;
    context_ = nullptr;
    req_ = slot_mem_ = out_ = status_ = keys_ = nullptr;
  }

  Api api_{};
  ProgramPlan plan_;    // --program, or none: from source
  ProgramCount made_;   // how its programs were made, since it was made
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  std::string name_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_program program_ = nullptr;
  cl_kernel kernel_ = nullptr;
  cl_mem req_ = nullptr, slot_mem_ = nullptr, out_ = nullptr, status_ = nullptr, keys_ = nullptr;
  std::vector<cl_mem> mems_;
  uint32_t slots_ = 0, max_window_ = 0;
  bool opened_ = false;
  uint32_t status_word_ = XF_ERR_NONE;  // the device's status word as last read (status_fresh_: still current)
  bool status_fresh_ = false;
  Staging staging_[kStaging];
  int next_staging_ = 0;
  BusCounters counted_;
};

}  // namespace

std::unique_ptr<Bus> make_opencl(int device_index, const std::string& program) {
  return std::make_unique<OpenCLBus>(device_index, program);
}

}  // namespace xferlab::runtime
