// What the collaborative patterns of `xferlab-probe collab` share (collab.cpp runs them; one file
// per pattern: collab_histogram.cpp, collab_taskqueue.cpp): the options and the outcome of one
// repeat, the deterministic inputs, the host's thread split and the host's task transform.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "../loaders/opencl_loader.hpp"
#include "cl_device.hpp"
#include "clock.hpp"

namespace xferlab::collab {

constexpr int kBins = 256;
constexpr size_t kLocal = 64;  // work-items per work-group

// The kernels' OpenCL C is src/xferlab/kernels/collab.cl (sources::k_collab): build_kernels()
// (collab.cpp) builds it with the first option set the device takes; `xferlab-probe programs` too.
double build_kernels(ClDevice& dev, std::string& options, std::string& atomics, std::string& path);

// The host's copy of the task transform over x[0, n): the same operations in the same order for
// each element as the kernel's `transform`, iterations outermost so that the compiler vectorizes
// the inner loop over a block that stays in cache.
inline void transform_span(float* x, size_t n, int iterations) {
  for (int k = 0; k < iterations; ++k)
    for (size_t i = 0; i < n; ++i) x[i] = x[i] * 0.96875f + x[i] * x[i] * 0.015625f + 0.0078125f;
}

// Deterministic pseudo-random input: a 64-bit mix (splitmix64's finalizer) of (seed, index).
inline uint32_t value_at(uint64_t i, uint64_t seed) {
  uint64_t z = i + seed * 0x9E3779B97F4A7C15ull + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
}
inline float float_at(uint64_t i, uint64_t seed) { return (value_at(i, seed) >> 8) * (1.0f / 16777216.0f); }

// Runs body(t, lo, hi) on `threads` std::threads over equal contiguous slices of [0, n).
template <class F>
void parallel(int threads, size_t n, F body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    pool.emplace_back([=, &body] { body(t, lo, hi); });
  }
  for (auto& th : pool) th.join();
}

struct Options {
  std::string pattern, version;
  int device = 0;
  size_t size = 0, block = 0;
  size_t cols = 0, pad = 0;  // PAD: size = rows * cols floats, padded to rows * (cols + pad)
  size_t height = 0, width = 0, super_element = 0;  // TRNS: size = height * width floats, width a multiple of super_element
  int iterations = 0, host_threads = 1, repeats = 1, warmups = 1;  // runs: warmups, then repeats timed
  double share = 0.5;
  uint64_t seed = 1;
  bool corrupt = false;
  int process_cpus = 1;  // CPUs this process may use, before --cpus places the host thread (PAD's work-groups)
  std::string advise = "none";  // PAD U on CUDA: the cuMemAdvise hints (collab_cuda_pad.cpp)
  size_t resolution = 0, tile = 0;  // BS: resolution x resolution points, in tiles of tile x tile
};

// What one repeat measured, and what its validation found.
struct Outcome {
  double allocation = 0, copy = 0, kernel = 0, total = 0;
  double device_share = 0;  // fraction of the work the device did
  size_t copied_bytes = 0;
  long long host_tasks = -1, device_tasks = -1;
  bool ok = true;
  long long wrong = 0, first_wrong = -1;
  double expected = 0, got = 0;
  std::string what;
};

// The records of every repeat, as both models (collab.cpp: OpenCL, collab_cuda.cpp: CUDA) write
// them: one sample and one validation line a repeat (repeat 0 the warm-up); finish() says on stderr
// how many failed validation and gives the exit code (1 if any did).
class Repeats {
 public:
  explicit Repeats(const Options& o) : o_(o) {}
  void record(int repeat, const Outcome& out, bool tasks);  // tasks: the device's and host's task counts too
  int finish() const;

 private:
  const Options& o_;
  int failed_ = 0;
  std::string first_failure_;
};

// Notes one wrong value at index x: the first one's place and values are kept, every one counted.
inline void note_wrong(Outcome& out, long long x, double expected, double got) {
  if (out.ok) {
    out.first_wrong = x;
    out.expected = expected;
    out.got = got;
  }
  out.ok = false;
  ++out.wrong;
}

// Compares result[x] with reference[x] exactly for x in [lo, hi), noting each one that differs.
inline void compare_exactly(const float* result, const float* reference, size_t lo, size_t hi, Outcome& out) {
  for (size_t x = lo; x < hi; ++x)
    if (result[x] != reference[x]) note_wrong(out, static_cast<long long>(x), reference[x], result[x]);
}

// Compares a histogram with the host-only reference; fills `out`'s verdict (first wrong bin, count,
// one line saying what differs).
inline void check_histogram(const std::vector<uint32_t>& got, const std::vector<uint64_t>& reference, Outcome& out) {
  for (int b = 0; b < kBins; ++b) {
    if (got[b] != reference[b]) note_wrong(out, b, static_cast<double>(reference[b]), got[b]);
  }
  if (!out.ok)
    out.what = std::to_string(out.wrong) + " of " + std::to_string(kBins) + " bins differ; bin " +
               std::to_string(out.first_wrong) + ": expected " + std::to_string(static_cast<long long>(out.expected)) +
               ", got " + std::to_string(static_cast<long long>(out.got));
}

// Histogram (CHAI HSTI), collab_histogram.cpp. The constructor computes the host-only reference.
struct Histogram {
  Options& o;
  ClDevice& dev;
  cl::cl_kernel kd, ku;
  std::vector<uint64_t> reference = std::vector<uint64_t>(kBins, 0);

  Histogram(Options& opts, ClDevice& d);
  size_t device_values() const;
  size_t groups() const;
  static void count_host(const uint32_t* in, size_t lo, size_t hi, uint32_t* shared);
  void fill_input(uint32_t* in) const;
  Outcome run();
};

// Task queue (CHAI TQH, simplified), collab_taskqueue.cpp. The constructor computes the host-only
// reference.
struct TaskQueue {
  Options& o;
  ClDevice& dev;
  cl::cl_kernel kd, ku;
  size_t tasks;
  std::vector<float> reference;

  TaskQueue(Options& opts, ClDevice& d);
  void run_task(float* data, size_t t) const;
  void fill_input(float* data) const;
  long long host_work(float* data, int* next, size_t end) const;
  Outcome run();
};

// PAD (CHAI's padding, in place), collab_pad.cpp. The constructor computes the host-only reference.
struct Pad {
  Options& o;
  ClDevice& dev;
  cl::cl_kernel k;
  size_t rows;
  std::vector<float> reference;  // rows x (cols + pad), padding cells 0
  size_t groups = 1;             // work-groups launched, D and U alike (work_groups())
  std::string groups_rule;       // how `groups` was chosen, for the setup record

  Pad(Options& opts, ClDevice& d);
  long long host_rows(float* data, int* next, int* done, size_t lo, size_t hi) const;
  Outcome run();
};

// TRNS (CHAI's in-place transposition, PTTWAC), collab_trns.cpp: height x width floats as height x
// (width / super_element) super-elements, transposed in place by following cycles, a flag a
// super-element. The constructor computes the host-only reference (an out-of-place transpose).
struct Trns {
  Options& o;
  ClDevice& dev;
  cl::cl_kernel k;
  size_t tiles_per_row, tiles;  // super-elements per row, in all
  std::vector<float> reference;

  Trns(Options& opts, ClDevice& d);
  size_t cycle_starts() const { return tiles ? tiles - 1 : 0; }  // CHAI's tasks: every super-element but the last
  long long host_cycles(float* data, int* finished, int* head) const;
  Outcome run();
};

// BS (CHAI's Bézier surface), collab_bs.cpp: a degree-3 surface (4 x 4 control points, CHAI's -m 3)
// evaluated at resolution x resolution points (x, y, z floats), tiles of tile x tile points the
// tasks. The constructor makes the control points and computes the host-only reference.
constexpr int kBsDegree = 3;
struct Bs {
  Options& o;
  ClDevice& dev;
  cl::cl_kernel k;
  size_t tiles_j, tasks;
  float step;                    // 1 / (resolution - 1): mu = row * step (see collab_bs.cpp)
  std::vector<float> control;    // (kBsDegree + 1)^2 points, x y z each
  std::vector<float> reference;  // resolution^2 points, x y z each

  Bs(Options& opts, ClDevice& d);
  void tile(const float* cp, float* out, size_t t) const;
  long long host_tiles(const float* cp, float* out, int* next, size_t lo, size_t hi) const;
  Outcome run();
};


// PAD's pieces both models run (collab_pad.cpp): the host-only reference (rows x (cols + pad),
// padding cells 0), the input, the host threads' rows of [lo, hi) popped from `next` with a flag a
// row in `done`, and the validation of every cell that is not padding.
std::vector<float> pad_reference(const Options& o, size_t rows);
void pad_fill(const Options& o, size_t rows, float* data);
long long pad_host_rows(const Options& o, float* data, int* next, int* done, size_t lo, size_t hi);
void pad_check(const Options& o, size_t rows, const float* result, const std::vector<float>& reference, Outcome& out);

// The histogram and PAD on a CUDA GPU, D and U (collab_cuda.cpp, collab_cuda_pad.cpp); the histogram's PTX module.
int run_collab_cuda(Options& o);
std::string cuda_histogram_ptx();

}  // namespace xferlab::collab
