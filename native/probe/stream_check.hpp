// What device STREAM's driver (kernels_driver.cpp) and its models (kernels.cpp: OpenCL,
// kernels_cuda.cpp: CUDA) share: the initial arrays, the kernels' arguments, the host's replay that
// checks a kernel's output, and the sample and validation records.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "json.hpp"

namespace xferlab {

constexpr double kStreamScalar = 0.4;  // BabelStream's startScalar

// Index-dependent initial values, so that a kernel that misses or misplaces elements is caught.
template <class T>
void stream_initial(size_t n, std::vector<T>& a, std::vector<T>& b, std::vector<T>& c) {
  a.resize(n), b.resize(n), c.resize(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<T>(0.1 + 0.001 * static_cast<double>(i % 97));
    b[i] = static_cast<T>(0.2 + 0.002 * static_cast<double>(i % 89));
    c[i] = static_cast<T>(0.003 * static_cast<double>(i % 83));
  }
}

inline bool stream_reduces(const std::string& kernel) { return kernel == "dot" || kernel == "read"; }

// Which initial array a streaming kernel writes: 'c' (copy, add), 'b' (mul), 'a' (triad).
inline char stream_output(const std::string& kernel) {
  return kernel == "copy" || kernel == "add" ? 'c' : kernel == "mul" ? 'b' : 'a';
}

// The arrays a kernel takes, in the order of its parameters in every model's kernels ('s': the
// partial sums of dot and read); a scaled kernel (mul, triad) takes the scalar after them, every
// kernel the length last.
inline std::string stream_arguments(const std::string& kernel) {
  return kernel == "copy" ? "ac" : kernel == "mul" ? "bc" : kernel == "dot" ? "abs" : kernel == "read" ? "as" : "abc";
}
inline bool stream_scaled(const std::string& kernel) { return kernel == "mul" || kernel == "triad"; }

// "" when `out` (the written array, or the partial sums of dot/read) is what the host's replay of
// `kernel` on a, b, c gives; else what differs, for instance `instance`. Tolerances: relative 1e-5
// (float) and 1e-12 (double) per element; 1e-3 and 1e-10 for the sums, added in another order.
template <class T>
std::string stream_check(const std::string& kernel, int instance, const std::vector<T>& a, const std::vector<T>& b,
                         const std::vector<T>& c, const std::vector<T>& out) {
  const bool f64 = sizeof(T) == 8;
  const T scalar = static_cast<T>(kStreamScalar);
  const std::string who = "instance " + std::to_string(instance) + ": ";
  if (stream_reduces(kernel)) {
    long double got = 0, want = 0;
    for (T v : out) got += v;
    for (size_t i = 0; i < a.size(); ++i) want += kernel == "dot" ? static_cast<long double>(a[i]) * b[i] : a[i];
    if (std::fabs(static_cast<double>((got - want) / want)) > (f64 ? 1e-10 : 1e-3))
      return who + "sum " + std::to_string(static_cast<double>(got)) + ", expected " + std::to_string(static_cast<double>(want));
    return "";
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const double want = kernel == "copy" ? a[i] : kernel == "mul" ? scalar * c[i] : kernel == "add" ? a[i] + b[i]
                                                                                                   : b[i] + scalar * c[i];
    if (std::fabs(out[i] - want) > (f64 ? 1e-12 : 1e-5) * std::max(1.0, std::fabs(want)))
      return who + "element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", expected " + std::to_string(want);
  }
  return "";
}

// BabelStream's byte counting: the arrays a kernel reads or writes once (copy, mul, dot 2; add, triad 3; read 1).
inline int stream_arrays(const std::string& kernel) {
  return (kernel == "add" || kernel == "triad") ? 3 : kernel == "read" ? 1 : 2;
}

// One point of device STREAM, as its sample and validation records name it.
struct StreamPoint {
  std::string kernel, memory;
  bool f64 = false;
  int width = 1;
  long long groups = 0, local = 0;
  int instances = 1;
  bool grid_stride = true;
  long long size_bytes = 0;  // per array
  double bytes() const { return static_cast<double>(stream_arrays(kernel)) * size_bytes * instances; }
};

inline void stream_sample(const StreamPoint& p, int iteration, double host_seconds, double device_seconds) {
  JsonLine()
      .str("record", "sample")
      .str("kernel", p.kernel)
      .str("memory", p.memory)
      .str("type", p.f64 ? "double" : "float")
      .integer("width", p.width)
      .integer("groups", p.groups)
      .integer("local", p.local)
      .integer("instances", p.instances)
      .boolean("grid_stride", p.grid_stride)
      .integer("size_bytes", p.size_bytes)
      .integer("iteration", iteration)
      .number("host_seconds", host_seconds)
      .number("device_seconds", device_seconds)
      .number("bytes", p.bytes())
      .emit();
}

inline void stream_validation(const StreamPoint& p, const std::string& what) {
  const std::string& kernel = p.kernel;
  JsonLine()
      .str("record", "validation")
      .str("kernel", kernel)
      .str("memory", p.memory)
      .str("type", p.f64 ? "double" : "float")
      .integer("width", p.width)
      .integer("groups", p.groups)
      .integer("instances", p.instances)
      .boolean("ok", what.empty())
      .str("what", !what.empty()             ? what
                   : stream_reduces(kernel) ? "the sum as the host's replay"
                                            : "every element as the host's replay")
      .emit();
}

}  // namespace xferlab
