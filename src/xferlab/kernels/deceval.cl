// xferlab's DecEval (native/probe/deceval.cpp): pi by the midpoint rule over decompressed values,
// built with -DBLOCKED=0|1 -DEVALS=K. Embedded in the probe at build time (CMakeLists.txt) and shipped in the wheel.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// Work-item g of G adds 4 / (1 + x^2) over its share of x[base .. base + count) to partial[g]: one
// launch per chunk, every launch on the same in-order queue, so the partial sums need no atomics.
// The share: elements g, g + G, ... (neighbouring work-items read neighbouring values: a GPU's
// coalesced loads), or with -DBLOCKED=1 one contiguous block per work-item (a CPU device runs a
// work-item's loop to its end before the next work-item, so a stride of G would reread every line).
// EVALS (a build option) is the integrand's evaluations per element: with EVALS = k > 1 each value
// x_i, the midpoint of its cell of width h, stands for k sub-cells of width h / k, evaluated at
// x_i + first + m * step (m < k): the midpoint rule on N k cells, k times the arithmetic on the same
// data (the device-bound configuration); with EVALS = 1 the loop body is the plain rule.
__kernel void integrate(__global const double* x, const ulong base, const ulong count, __global double* partial,
                        const double first, const double step) {
  const size_t g = get_global_id(0), n = get_global_size(0);
  double s = 0.0;
#if BLOCKED
  const ulong per = (count + n - 1) / n, lo = min((ulong)g * per, count), hi = min(lo + per, count);
  for (ulong j = lo; j < hi; ++j) {
#else
  for (ulong j = g; j < count; j += n) {
#endif
    const double v = x[base + j];
#if EVALS == 1
    s += 4.0 / (1.0 + v * v);
#else
    for (int m = 0; m < EVALS; ++m) {
      const double u = v + first + m * step;
      s += 4.0 / (1.0 + u * u);
    }
#endif
  }
  partial[g] += s;
}
