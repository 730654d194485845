// The drivers of `xferlab-probe kernels`, one for every programming model, as BabelStream has one
// driver for every model (UoB-HPC/BabelStream: src/main.cpp parses the options, runs the timed
// loop over the kernels, checks the solution and prints the report; each model is a Stream<T> of
// src/Stream.h, which only supplies its arrays and kernels: init_arrays, copy, mul, add, triad,
// nstream, dot, get_arrays). kernels_driver.cpp holds what the OpenCL model
// (kernels.cpp, kernels_memory.cpp) and the CUDA one (kernels_cuda.cpp) share.
//
// Device STREAM (--mode stream): the options (the same flags, defaults and ranges), the arrays'
// size, the loop over memories, types, widths, groups, instances and kernels, the timed loop of a
// point, the check of its output against the host's replay and the JSON lines (stream_check.hpp).
// A StreamModel supplies what differs: which memories, types and widths its device has, its
// work-group size and automatic group count, and for one point its arrays filled with the initial
// values, one launch of every instance's kernel (timed by the host and the device) and the
// read-back of an array.
//
// Device to device between two devices (--mode d2d --peer): the options, the source's pattern, the
// sample and validation lines; the OpenCL copies (kernels_memory.cpp) and CUDA's (kernels_cuda_peer.cpp).
//
// First touch (--mode faults): the options, the loop over memories, strides and repeats, the two
// timed touches, the host's read-back and check and the JSON line; a TouchModel supplies its
// shared memory kinds, a fresh allocation with the touch kernel bound to it, and the kernel's launch.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "args.hpp"
#include "backend.hpp"
#include "stream_check.hpp"

namespace xferlab {

// `kernels --mode stream`'s options, the same for every model.
struct StreamOptions {
  std::vector<std::string> kernels, memories, types;
  std::vector<long long> widths, groups, instances;
  long long size = 0;  // bytes per array
  int iterations = 0, warmup = 0;
  double max_seconds = 0;  // --max-time: stop a point's timed loop past it (0: never)
  int most_instances() const;
};

// Reads the options (`memories`: the model's memory kinds, the first the default) and finishes
// `args`; a width that is not 1, 2, 4, 8 or 16 is refused (BadArgument).
StreamOptions stream_options(Args& args, const std::vector<std::string>& memories);

// One point's arrays in one model: every instance's a, b, c (and partial sums for dot and read)
// in the point's memory, filled with the initial values, and its kernel bound to them.
class StreamArrays {
 public:
  virtual ~StreamArrays() = default;
  // Every instance's kernel launched once, all of them waited for: the host's clock around it all
  // and the device's (< 0 when it has none).
  virtual Timing launch() = 0;
  // Instance `instance`'s array 'a', 'b', 'c' or 's' (the partial sums) copied into `out`.
  virtual void read(int instance, char array, void* out) = 0;
  bool grid_stride = true;  // the kernel loops over the arrays (else one element per work-item)
  size_t partials = 0;      // partial sums a reduction leaves per instance, added by the host
};

// A model's arrays for one point, every instance's, by name ('a', 'b', 'c'; 's': the partial sums).
// A is the model's array (kcl::Array, GpuArray): A(device, memory kind, bytes), fill() and get().
template <class A>
struct InstanceArrays {
  std::vector<std::unique_ptr<A>> a, b, c, s;
  // One more instance: a, b, c in `memory` filled from the initial values, its sums in device memory.
  template <class Device>
  void add(Device& dev, const std::string& memory, size_t bytes, size_t sum_bytes, const void* a0, const void* b0,
           const void* c0) {
    for (auto* list : {&a, &b, &c}) list->push_back(std::make_unique<A>(dev, memory, bytes));
    s.push_back(std::make_unique<A>(dev, "device", sum_bytes));
    a.back()->fill(a0), b.back()->fill(b0), c.back()->fill(c0);
  }
  A& operator()(char name, size_t instance) {
    return *(name == 'a' ? a : name == 'b' ? b : name == 'c' ? c : s).at(instance);
  }
};

class StreamModel {
 public:
  virtual ~StreamModel() = default;
  // "" when the device can run it, else why not (an "unavailable" record; the point is skipped).
  virtual std::string lacks_width(int /*width*/) { return ""; }
  virtual std::string lacks_memory(const std::string& memory) = 0;
  virtual std::string lacks_type(const std::string& /*type*/) { return ""; }
  // Gets the kernels ready for one type and width; returns the work-group size (work-items).
  virtual size_t prepare(const std::string& type, int width) = 0;
  // The number of work-groups for --groups 0, over `vectors` elements of the point's width.
  virtual size_t auto_groups(const std::string& kernel, size_t vectors, size_t local) = 0;
  // The point's arrays (`elements` each, of `p.f64 ? double : float`), filled from a, b and c.
  virtual std::unique_ptr<StreamArrays> load(const StreamPoint& p, size_t elements, const void* a, const void* b,
                                             const void* c) = 0;
};

// The sweep: every memory, type, width, group count, instance count and kernel of `o` on `model`,
// each point's samples and its validation as JSON lines. The model's setup record comes first, from
// its caller. Returns the exit code (0).
int drive_stream(StreamModel& model, const StreamOptions& o);

// `kernels --mode faults`'s options, the same for every model.
struct TouchOptions {
  std::vector<std::string> memories;
  long long size = 0;  // bytes of each fresh allocation
  std::vector<long long> strides;
  int repeats = 0;
};

// Reads the options (`memories`: the model's kinds of shared memory, all of them the default) and
// finishes `args`.
TouchOptions touch_options(Args& args, const std::vector<std::string>& memories);

// One fresh allocation of shared memory, never touched by the host, and the touch kernel bound to
// it: p[i * stride] = (byte)(i + 1) for i < touches.
class FreshMemory {
 public:
  virtual ~FreshMemory() = default;
  virtual Timing touch() = 0;  // the kernel once, waited for
  // The host's view of the bytes, for the check (mapped where the memory needs it), and its end.
  virtual const unsigned char* map() = 0;
  virtual void unmap() {}
};

class TouchModel {
 public:
  virtual ~TouchModel() = default;
  virtual std::string lacks_memory(const std::string& memory) = 0;  // "" or why not
  virtual bool device_clock() const = 0;  // whether touch() gives device seconds (recorded)
  virtual std::unique_ptr<FreshMemory> fresh(const std::string& memory, size_t bytes, unsigned long long stride,
                                             unsigned long long touches) = 0;
};

// The first touch of fresh shared memory by a kernel against a second touch, then the host reading
// it back and checking every touched byte: every memory, stride and repeat of `o`, one sample line
// each. Returns the exit code (0).
int drive_touch(TouchModel& model, const TouchOptions& o);

// `kernels --mode d2d`'s options, the same for every model: --peer, --size, --iterations; finishes `args`.
struct PeerOptions {
  int peer = 1;
  long long size = 0;  // bytes per copy
  int iterations = 0;  // timed copies, after one untimed warm-up
};
PeerOptions peer_options(Args& args);

// The bytes the source holds: byte i is (i * 13 + 5) mod 256.
std::vector<unsigned char> peer_pattern(size_t bytes);

// One timed copy's sample line (`device_seconds` < 0: the model has no device clock, none written).
void emit_peer_sample(const std::string& path, long long size, int iteration, double host_seconds,
                      double device_seconds = -1.0);

// The check of the destination's bytes read back against the source's pattern, as a validation line.
void emit_peer_validation(const std::string& path, const std::vector<unsigned char>& back,
                          const std::vector<unsigned char>& pattern);

}  // namespace xferlab
