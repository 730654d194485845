// `xferlab-probe deceval`: seed 000's application (Cabrera, Young and Vetter, "Application Flows"
// and DecEval, ExHET '22) for real on this machine. Double-precision data that inflate to --size bytes
// (x_i = (i + 0.5) / N, i < N = size / 8: the midpoints of [0, 1]) are deflated once with zlib; the
// application decompresses them on the host (zlib's inflate, one thread: the seed's FPGA stage) and
// integrates pi = sum 4 / (1 + x_i^2) / N on an OpenCL device (the seed's GPU stage).
//
// What is timed (std::chrono::steady_clock around each whole phase or flow; one repeat = every item
// below once, repeat 0 a warm-up):
//   stages, per chunk size c: decompress alone (inflate into a host buffer, c bytes per inflate
//     call), copy alone (the host buffer to a device buffer, one non-blocking clEnqueueWriteBuffer per
//     c bytes, then clFinish), integrate alone (one kernel launch per c bytes of the device buffer,
//     then clFinish): the simulator's stage times, and from their change with c the per-chunk overhead;
//     decompress-submit (the inflate again, each chunk's copy and kernel enqueued as it comes out,
//     nothing waited for): against decompress alone, what submitting costs the decompressing thread;
//     handoff (an 8-byte copy enqueued and waited for, per chunk): how long the host takes to learn a
//     command is done, which a producer waiting for a free buffer pays;
//   flows, end to end, each from the first inflate call to pi on the host:
//     staged     inflate everything into host memory, copy it to the device, integrate;
//     direct     inflate straight into a device buffer mapped into the host (CL_MEM_ALLOC_HOST_PTR,
//                clEnqueueMapBuffer), unmap, integrate: one buffer shared by the two stages;
//     pipelined  chunks of c bytes through `depth` host slots and `depth` device buffers: the host
//                inflates chunk i into slot i % depth (first waiting for chunk i - depth's copy to be
//                done), enqueues its copy and its kernel on the in-order queue, and goes on.
// Every repeat of every item is validated: inflate must end the stream with zlib's check value
// right, a sample of x_i must be exact, and pi from the device must be within the midpoint rule's
// error bound of pi (a lost, doubled or corrupted value moves it by far more). decompress-submit
// checks its own pass (its values, and the sum its kernels add into a scratch buffer), handoff that
// its last 8-byte copy arrived; the pipelined flow checks each chunk before its slot is reused, and
// the time of those checks is left out of its total (check_seconds).
//
// --items picks what one run does (stages, staged, direct, pipelined): the study times the stages and
// the flows in runs of their own. --evaluations K makes the kernel evaluate the integrand K times per
// element (a finer midpoint rule on the same data: K times the device's arithmetic, the same bytes),
// so that the device, not the decompression, is the pipeline's slowest stage.
//
// --cpu C pins the decompressing thread to CPU C once the device is open (its runtime's threads are
// started by then); the caller chooses the device's share of the CPUs (on PoCL:
// POCL_MAX_PTHREAD_COUNT), so that decompression and integration are two resources, as on the seed's
// FPGA and GPU.
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../loaders/opencl_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "cl_device.hpp"
#include "clock.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "probe.hpp"

namespace xferlab {

namespace {

using namespace cl;

const char* const kSource = sources::k_deceval;  // src/xferlab/kernels/deceval.cl, embedded by CMakeLists.txt
constexpr size_t kPiece = size_t(1) << 30;  // zlib counts in 32-bit words: at most this much per call

struct Options {
  int device = 0;
  size_t size = 0;
  std::vector<size_t> chunks;
  int depth = 2;
  int repeats = 3;
  int level = 1;
  int cpu = -1;
  int evaluations = 1;  // the integrand's evaluations per element (the kernel's EVALS)
  std::vector<std::string> items;
  bool corrupt = false;
};

double x_of(size_t i, size_t n) { return (static_cast<double>(i) + 0.5) / static_cast<double>(n); }

// The input: N midpoints deflated into one zlib stream.
std::vector<unsigned char> compress(size_t n, int level) {
  z_stream z{};
  if (deflateInit(&z, level) != Z_OK) throw std::runtime_error("deflateInit failed");
  std::vector<unsigned char> out(deflateBound(&z, n * 8));
  std::vector<double> block(1 << 17);
  size_t done = 0, written = 0;
  int r = Z_OK;
  while (r != Z_STREAM_END) {
    const size_t m = std::min(block.size(), n - done);
    for (size_t k = 0; k < m; ++k) block[k] = x_of(done + k, n);
    done += m;
    const int flush = done == n ? Z_FINISH : Z_NO_FLUSH;
    z.next_in = reinterpret_cast<Bytef*>(block.data());
    z.avail_in = static_cast<uInt>(m * 8);
    do {  // NO_FLUSH: until the block is taken in; FINISH: until the stream is complete
      const size_t room = std::min(kPiece, out.size() - written);
      z.next_out = out.data() + written;
      z.avail_out = static_cast<uInt>(room);
      r = deflate(&z, flush);
      if (r == Z_STREAM_ERROR || (r == Z_BUF_ERROR && room == 0)) throw std::runtime_error("deflate failed");
      written += room - z.avail_out;
    } while (flush == Z_FINISH ? r != Z_STREAM_END : z.avail_in > 0);
  }
  deflateEnd(&z);
  out.resize(written);
  return out;
}

// One pass of decompression over the stream: fill() hands out the next bytes, end() checks that the
// stream ends there with its check value right.
class Inflater {
 public:
  Inflater(const std::vector<unsigned char>& input) : input_(input) {
    if (inflateInit(&z_) != Z_OK) throw std::runtime_error("inflateInit failed");
  }
  ~Inflater() { inflateEnd(&z_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  void restart() {
    inflateReset(&z_);
    offset_ = 0;
    feed();
  }
  void fill(void* dest, size_t len) {
    auto* p = static_cast<Bytef*>(dest);
    while (len) {
      const size_t piece = std::min(len, kPiece);
      z_.next_out = p;
      z_.avail_out = static_cast<uInt>(piece);
      while (z_.avail_out) {
        if (!z_.avail_in) feed();
        const int r = inflate(&z_, Z_NO_FLUSH);
        if (r == Z_STREAM_END && z_.avail_out) throw std::runtime_error("inflate: the stream ended early");
        if (r == Z_STREAM_END) break;
        if (r != Z_OK) throw std::runtime_error(std::string("inflate: ") + (z_.msg ? z_.msg : "error " + std::to_string(r)));
      }
      p += piece;
      len -= piece;
    }
  }
  void end() {
    unsigned char spare;
    z_.next_out = &spare;
    z_.avail_out = 1;
    int r = Z_OK;
    while (r == Z_OK && z_.avail_out) {
      if (!z_.avail_in) feed();
      r = inflate(&z_, Z_NO_FLUSH);
    }
    if (r != Z_STREAM_END || !z_.avail_out)
      throw std::runtime_error(std::string("inflate: the stream does not end after the data") +
                               (z_.msg ? std::string(" (") + z_.msg + ")" : ""));
  }

 private:
  void feed() {
    const size_t piece = std::min(kPiece, input_.size() - offset_);
    z_.next_in = const_cast<Bytef*>(input_.data() + offset_);
    z_.avail_in = static_cast<uInt>(piece);
    offset_ += piece;
  }
  const std::vector<unsigned char>& input_;
  z_stream z_{};
  size_t offset_ = 0;
};

// Page-aligned host memory the application owns.
struct HostMemory {
  explicit HostMemory(size_t bytes) {
    if (posix_memalign(&p, 4096, std::max<size_t>(bytes, 64)) != 0) throw std::runtime_error("posix_memalign failed");
    std::memset(p, 0, bytes);  // touched now, not inside a timed phase
  }
  ~HostMemory() { std::free(p); }
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  double* d() const { return static_cast<double*>(p); }
  void* p = nullptr;
};

class App {
 public:
  App(const Options& o, ClDevice& dev, const std::vector<unsigned char>& input)
      : o_(o), dev_(dev), api_(dev.api()), n_(o.size / 8), inflater_(input), host_(o.size),
        local_(std::min<size_t>(64, dev.max_group ? dev.max_group : 64)), global_(local_ * 4 * std::max<size_t>(1, dev.units)),
        data_(dev.buffer(o.size)), partial_(dev.buffer(global_ * sizeof(double))),
        scratch_(dev.buffer(global_ * sizeof(double))) {
    kernel_ = dev.kernel("integrate");
    const double k = o.evaluations, h = 1.0 / static_cast<double>(n_);
    dev.arg(kernel_, 4, (0.5 / k - 0.5) * h);  // the first sub-cell's midpoint, from the cell's
    dev.arg(kernel_, 5, h / k);                // and the distance between sub-cell midpoints
    cl_int err = CL_SUCCESS;
    mapped_ = api_.CreateBuffer(dev.context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, o.size, nullptr, &err);
    cl_check(err, "clCreateBuffer (CL_MEM_ALLOC_HOST_PTR)");
    const size_t biggest = *std::max_element(o.chunks.begin(), o.chunks.end());
    for (int k = 0; k < o.depth; ++k) {
      slots_.push_back(std::make_unique<HostMemory>(biggest));
      slot_buffers_.push_back(dev.buffer(biggest));
    }
  }
  ~App() {
    if (mapped_) api_.ReleaseMemObject(mapped_);
  }
  size_t global() const { return global_; }
  size_t local() const { return local_; }

  void stages(size_t chunk, int repeat) {
    const size_t count = chunks(chunk);
    begin_pi();
    auto t0 = Clock::now();
    inflater_.restart();
    for (size_t off = 0; off < o_.size; off += chunk) inflater_.fill(host_.d() + off / 8, std::min(chunk, o_.size - off));
    inflater_.end();
    const double dec = since(t0);
    const std::string sampled = check_values(host_.d(), 0, n_);
    if (o_.corrupt) host_.d()[n_ / 2] += 0.25;
    // The host's time in the enqueue calls themselves (submit): what each chunk costs the thread that
    // submits it, which the pipelined flow's decompressing thread pays per chunk.
    double submit[3] = {0, 0, 0};  // by stage: decompress (none), copy, integrate
    t0 = Clock::now();
    for (size_t off = 0; off < o_.size; off += chunk) {
      auto s0 = Clock::now();
      cl_check(api_.EnqueueWriteBuffer(dev_.queue(0), data_.get(), CL_FALSE, off, std::min(chunk, o_.size - off),
                                       reinterpret_cast<char*>(host_.p) + off, 0, nullptr, nullptr),
               "clEnqueueWriteBuffer");
      submit[1] += since(s0);
    }
    dev_.finish();
    const double copy = since(t0);
    t0 = Clock::now();
    for (size_t off = 0; off < o_.size; off += chunk) {
      auto s0 = Clock::now();
      integrate(data_.get(), off / 8, std::min(chunk, o_.size - off) / 8);
      submit[2] += since(s0);
    }
    dev_.finish();
    const double integ = since(t0);
    std::string what = sampled;
    const double pi = end_pi(what);
    // Decompress and submit: the inflate again, each chunk's copy and kernel enqueued as soon as it is
    // out (the kernels add into a scratch sum, so pi above stays as it was), the device working
    // meanwhile, nothing waited for: what submitting costs the decompressing thread per chunk, its
    // runtime calls and what they and the device's reads of fresh data do to its caches, which the
    // pipelined flow pays (without waiting for buffers: depth is the simulator's part).
    begin_pi(scratch_);
    t0 = Clock::now();
    inflater_.restart();
    for (size_t off = 0; off < o_.size; off += chunk) {
      const size_t bytes = std::min(chunk, o_.size - off);
      inflater_.fill(host_.d() + off / 8, bytes);
      cl_check(api_.EnqueueWriteBuffer(dev_.queue(0), data_.get(), CL_FALSE, off, bytes,
                                       reinterpret_cast<char*>(host_.p) + off, 0, nullptr, nullptr),
               "clEnqueueWriteBuffer");
      integrate(data_.get(), off / 8, bytes / 8, scratch_.get());
    }
    inflater_.end();
    const double alone = since(t0);
    dev_.finish();
    std::string what_submit = check_values(host_.d(), 0, n_);  // this pass's own values and sum are checked
    const double pi_submit = end_pi(what_submit, scratch_);
    // Hand-off, per chunk: an 8-byte copy enqueued on the idle device and waited for (its event): how
    // long the host takes to learn that a command it just gave is done, which a producer waiting for a
    // free buffer pays each time it waits.
    double handoff = 0;
    for (size_t off = 0; off < o_.size; off += chunk) {
      cl_event done = nullptr;
      auto s0 = Clock::now();
      cl_check(api_.EnqueueWriteBuffer(dev_.queue(0), scratch_.get(), CL_FALSE, 0, 8, host_.p, 0, nullptr, &done),
               "clEnqueueWriteBuffer");
      cl_check(api_.Flush(dev_.queue(0)), "clFlush");
      const cl_int waited = api_.WaitForEvents(1, &done);
      handoff += since(s0);
      api_.ReleaseEvent(done);
      cl_check(waited, "clWaitForEvents");
    }
    double arrived = 0;  // the last hand-off copy's 8 bytes must be on the device
    dev_.read(scratch_, &arrived, sizeof arrived);
    const std::string what_handoff = arrived == host_.d()[0] ? "" : "the hand-off copy's value did not reach the device";
    const char* names[] = {"decompress", "copy", "integrate", "decompress-submit", "handoff"};
    const double seconds[] = {dec, copy, integ, alone, handoff};
    for (int k = 0; k < 5; ++k) {
      JsonLine j = sample("stage", names[k], chunk, count, repeat, seconds[k]);
      if (k == 1 || k == 2) j.number("submit_seconds", submit[k]);
      j.emit();
      if (k == 3) validation("stage", names[k], chunk, repeat, pi_submit, what_submit);
      else if (k == 4) validation("stage", names[k], chunk, repeat, pi, what_handoff);
      else validation("stage", names[k], chunk, repeat, pi, what);
    }
  }

  void staged(int repeat) {
    begin_pi();
    auto t0 = Clock::now();
    inflater_.restart();
    inflater_.fill(host_.p, o_.size);
    inflater_.end();
    const double dec = since(t0);
    if (o_.corrupt) host_.d()[n_ / 2] += 0.25;
    auto t1 = Clock::now();
    dev_.write(data_, host_.p, o_.size);
    const double copy = since(t1);
    auto t2 = Clock::now();
    integrate(data_.get(), 0, n_);
    std::string what;
    const double pi = end_pi(what);
    const double integ = since(t2), total = since(t0);
    what = check_values(host_.d(), 0, n_) + what;
    sample("flow", "staged", o_.size, 1, repeat, total)
        .number("decompress_seconds", dec).number("copy_seconds", copy).number("integrate_seconds", integ).emit();
    validation("flow", "staged", o_.size, repeat, pi, what);
  }

  void direct(int repeat) {
    begin_pi();
    auto t0 = Clock::now();
    cl_int err = CL_SUCCESS;
    auto* p = static_cast<double*>(api_.EnqueueMapBuffer(dev_.queue(0), mapped_, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION,
                                                         0, o_.size, 0, nullptr, nullptr, &err));
    cl_check(err, "clEnqueueMapBuffer");
    inflater_.restart();
    inflater_.fill(p, o_.size);
    inflater_.end();
    const double dec = since(t0);
    std::string what = check_values(p, 0, n_);
    if (o_.corrupt) p[n_ / 2] += 0.25;
    auto t1 = Clock::now();
    cl_check(api_.EnqueueUnmapMemObject(dev_.queue(0), mapped_, p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
    integrate(mapped_, 0, n_);
    const double pi = end_pi(what);
    const double rest = since(t1), total = since(t0);
    sample("flow", "direct", o_.size, 1, repeat, total).number("decompress_seconds", dec).number("integrate_seconds", rest).emit();
    validation("flow", "direct", o_.size, repeat, pi, what);
  }

  void pipelined(size_t chunk, int repeat) {
    const size_t count = chunks(chunk);
    const size_t depth = slots_.size();
    std::vector<cl_event> copied(depth, nullptr);
    std::string what;
    double dec = 0, wait = 0, submit = 0, checking = 0;  // the decompressing thread's time, by what it did
    begin_pi();
    auto t0 = Clock::now();
    inflater_.restart();
    size_t i = 0;
    try {
      for (size_t off = 0; off < o_.size; off += chunk, ++i) {
        const size_t s = i % depth, bytes = std::min(chunk, o_.size - off);
        auto t = Clock::now();
        if (copied[s]) {  // the slot's last chunk must be on the device before the slot is refilled
          cl_check(api_.WaitForEvents(1, &copied[s]), "clWaitForEvents");
          api_.ReleaseEvent(copied[s]);
          copied[s] = nullptr;
        }
        wait += since(t);
        t = Clock::now();
        double* host = slots_[s]->d();
        inflater_.fill(host, bytes);
        dec += since(t);
        t = Clock::now();  // the check must see the slot before it is reused; its time is left out of the total
        if (what.empty()) what = check_values(host, off / 8, n_, bytes / 8);
        checking += since(t);
        if (o_.corrupt && i == 0) host[0] += 0.25;
        t = Clock::now();
        cl_check(api_.EnqueueWriteBuffer(dev_.queue(0), slot_buffers_[s].get(), CL_FALSE, 0, bytes, host, 0, nullptr,
                                         &copied[s]),
                 "clEnqueueWriteBuffer");
        integrate(slot_buffers_[s].get(), 0, bytes / 8);
        submit += since(t);
      }
      inflater_.end();
    } catch (...) {
      for (auto e : copied)
        if (e) api_.ReleaseEvent(e);
      throw;
    }
    const double pi = end_pi(what);
    const double total = since(t0) - checking;
    for (auto e : copied)
      if (e) api_.ReleaseEvent(e);
    sample("flow", "pipelined", chunk, count, repeat, total)
        .number("decompress_seconds", dec).number("wait_seconds", wait).number("submit_seconds", submit)
        .number("check_seconds", checking).emit();
    validation("flow", "pipelined", chunk, repeat, pi, what);
  }

 private:
  size_t chunks(size_t chunk) const { return (o_.size + chunk - 1) / chunk; }

  void integrate(cl_mem x, size_t base, size_t count, cl_mem sums = nullptr) {
    const cl_ulong b = base, c = count;
    dev_.arg(kernel_, 0, x);
    dev_.arg(kernel_, 1, b);
    dev_.arg(kernel_, 2, c);
    dev_.arg(kernel_, 3, sums ? sums : partial_.get());
    cl_check(api_.EnqueueNDRangeKernel(dev_.queue(0), kernel_, 1, nullptr, &global_, &local_, 0, nullptr, nullptr),
             "clEnqueueNDRangeKernel");
    cl_check(api_.Flush(dev_.queue(0)), "clFlush");
  }

  // Zero the partial sums (outside the timing: the queue is idle when it returns).
  void begin_pi() { begin_pi(partial_); }
  void begin_pi(const ClDevice::Buffer& sums) {
    std::vector<double> zero(global_, 0.0);
    dev_.write(sums, zero.data(), zero.size() * sizeof(double));
  }
  // Wait for the device, read the partial sums and add them: pi's estimate; `what` says what is wrong.
  double end_pi(std::string& what) { return end_pi(what, partial_); }
  double end_pi(std::string& what, const ClDevice::Buffer& sums) {
    std::vector<double> part(global_);
    dev_.read(sums, part.data(), part.size() * sizeof(double));
    double sum = 0;
    for (double v : part) sum += v;
    const double cells = static_cast<double>(n_) * o_.evaluations;  // the midpoint rule's cells
    const double pi = sum / cells;
    const double h = 1.0 / cells;
    const double bound = h * h / 3.0 + 1e-9;  // the midpoint rule's error for 4/(1+x^2) is at most h^2/3
    if (!(std::fabs(pi - M_PI) <= bound) && what.empty()) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "pi from the device is %.15f, %.3g from pi (allowed: %.3g)", pi, pi - M_PI, bound);
      what = buf;
    }
    return pi;
  }
  // A sample of the decompressed values (about 1024 of them, the first and last included) must be exact.
  std::string check_values(const double* x, size_t first, size_t n, size_t count = 0) const {
    if (!count) count = n - first;
    const size_t step = std::max<size_t>(1, count / 1024);
    for (size_t k = 0; k < count; k += step)
      if (x[k] != x_of(first + k, n)) return "decompressed value " + std::to_string(first + k) + " is wrong";
    if (x[count - 1] != x_of(first + count - 1, n)) return "decompressed value " + std::to_string(first + count - 1) + " is wrong";
    return "";
  }
  JsonLine sample(const char* kind, const char* name, size_t chunk, size_t count, int repeat, double seconds) {
    JsonLine j;
    j.str("probe", "deceval").str("record", "sample").str("kind", kind).str("name", name)
        .integer("chunk_bytes", static_cast<long long>(chunk)).integer("chunks", static_cast<long long>(count))
        .integer("depth", o_.depth).integer("repeat", repeat).boolean("warmup", repeat == 0)
        .integer("size", static_cast<long long>(o_.size)).number("seconds", seconds);
    return j;
  }
  void validation(const char* kind, const char* name, size_t chunk, int repeat, double pi, const std::string& what) {
    JsonLine().str("probe", "deceval").str("record", "validation").str("kind", kind).str("name", name)
        .integer("chunk_bytes", static_cast<long long>(chunk)).integer("repeat", repeat).boolean("ok", what.empty())
        .number("pi", pi).number("pi_error", pi - M_PI).str("what", what).emit();
  }

  const Options& o_;
  ClDevice& dev_;
  const Api& api_;
  size_t n_;
  Inflater inflater_;
  HostMemory host_;
  size_t local_, global_;
  ClDevice::Buffer data_, partial_, scratch_;
  cl_mem mapped_ = nullptr;
  cl_kernel kernel_ = nullptr;
  std::vector<std::unique_ptr<HostMemory>> slots_;
  std::vector<ClDevice::Buffer> slot_buffers_;
};

bool has(const Options& o, const char* item) { return std::find(o.items.begin(), o.items.end(), item) != o.items.end(); }

}  // namespace

std::string deceval_options(bool blocked, int evaluations) {
  return std::string(blocked ? "-DBLOCKED=1" : "-DBLOCKED=0") + " -DEVALS=" + std::to_string(evaluations);
}

int run_deceval(Args& args) {
  Options o;
  const std::string backend = args.text("backend", "opencl");
  o.device = static_cast<int>(args.integer("device", 0, 0, 4096));
  o.size = static_cast<size_t>(args.integer("size", 64ll << 20, 8 * 1024, 1ll << 40));
  for (long long c : args.integers("chunks", "1048576", 8, 1ll << 40)) o.chunks.push_back(static_cast<size_t>(c));
  o.depth = static_cast<int>(args.integer("depth", 2, 1, 64));
  o.repeats = static_cast<int>(args.integer("repeats", 3, 1, 10000));
  o.level = static_cast<int>(args.integer("level", 1, 1, 9));
  o.cpu = static_cast<int>(args.integer("cpu", -1, -1, 1 << 20));
  o.evaluations = static_cast<int>(args.integer("evaluations", 1, 1, 4096));
  o.items = args.words("items", "stages,staged,direct,pipelined", {"stages", "staged", "direct", "pipelined"});
  o.corrupt = args.flag("corrupt");
  read_program_option(args);
  args.finish();
  if (backend != "opencl") throw BadArgument("--backend '" + backend + "' is not allowed; deceval runs on: opencl");
  if (o.size % 8) throw BadArgument("--size " + std::to_string(o.size) + " is not a whole number of doubles (8 bytes)");
  for (size_t c : o.chunks) {
    if (c % 8) throw BadArgument("--chunks " + std::to_string(c) + " is not a whole number of doubles (8 bytes)");
    if (c > o.size)
      throw BadArgument("chunk " + std::to_string(c) + " is larger than --size " + std::to_string(o.size) +
                        "; allowed: chunks up to the size");
  }
  if (o.cpu >= 0) check_cpus({o.cpu});

  ClDevice dev(o.device);
  if (o.size > dev.max_alloc)
    throw BadArgument("--size " + std::to_string(o.size) + " is above the device's largest allocation of " +
                      std::to_string(dev.max_alloc) + " bytes");
  dev.open();
  auto t0 = Clock::now();
  cl_device_type type = 0;
  dev.query(CL_DEVICE_TYPE, sizeof type, &type, "CL_DEVICE_TYPE");
  const bool blocked = type & CL_DEVICE_TYPE_CPU;
  dev.build("deceval", kSource, {deceval_options(blocked, o.evaluations)});
  const double build_seconds = since(t0);
  t0 = Clock::now();
  const auto input = compress(o.size / 8, o.level);
  const double compress_seconds = since(t0);
  App app(o, dev, input);
  bool pinned = false;
  if (o.cpu >= 0) {
    pinned = pin_to_cpu(o.cpu);
    if (!pinned) throw std::runtime_error("could not pin the decompressing thread to CPU " + std::to_string(o.cpu));
  }
  const char* threads = std::getenv("POCL_MAX_PTHREAD_COUNT");
  std::string items;
  for (const auto& item : o.items) items += (items.empty() ? "" : ",") + item;
  JsonLine()
      .str("probe", "deceval").str("record", "setup").str("backend", "opencl").integer("device_index", o.device)
      .str("device_name", dev.text(CL_DEVICE_NAME)).integer("compute_units", dev.units)
      .integer("size", static_cast<long long>(o.size)).integer("compressed_bytes", static_cast<long long>(input.size()))
      .integer("level", o.level).str("zlib", zlibVersion()).number("compress_seconds", compress_seconds)
      .number("build_seconds", build_seconds).integer("global", static_cast<long long>(app.global()))
      .integer("local", static_cast<long long>(app.local())).str("layout", blocked ? "blocked" : "strided").integer("depth", o.depth).integer("repeats", o.repeats)
      .integer("cpu", o.cpu).str("pocl_max_pthread_count", threads ? threads : "").integer("evaluations", o.evaluations)
      .str("items", items)
      .emit();
  for (int r = 0; r <= o.repeats; ++r) {  // repeat 0: the warm-up
    if (has(o, "stages"))
      for (size_t c : o.chunks) app.stages(c, r);
    if (has(o, "staged")) app.staged(r);
    if (has(o, "direct")) app.direct(r);
    if (has(o, "pipelined"))
      for (size_t c : o.chunks) app.pipelined(c, r);
  }
  return 0;
}

}  // namespace xferlab
