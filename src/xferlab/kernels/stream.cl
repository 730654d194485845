// xferlab measure kernels (native/probe/kernels.cpp): BabelStream's kernels for TYPE and vector width W,
// built with -DTYPE=float|double -DW=1|2|4|8|16 -DIS_DOUBLE=0|1 (kernels.cpp options()); also touch (first
// touch of fresh SVM) and spmv. Embedded in the probe at build time (CMakeLists.txt) and shipped in the wheel.
#if IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if W == 1
#define VT TYPE
#define VSUM(v) (v)
#else
#define VT CAT(TYPE, W)
#endif
#define CAT(a, b) CAT2(a, b)
#define CAT2(a, b) a##b
#if W == 2
#define VSUM(v) ((v).s0 + (v).s1)
#elif W == 4
#define VSUM(v) ((v).s0 + (v).s1 + (v).s2 + (v).s3)
#elif W == 8
#define VSUM(v) (VSUM4((v).lo) + VSUM4((v).hi))
#elif W == 16
#define VSUM(v) (VSUM8((v).lo) + VSUM8((v).hi))
#endif
#define VSUM4(v) ((v).s0 + (v).s1 + (v).s2 + (v).s3)
#define VSUM8(v) (VSUM4((v).lo) + VSUM4((v).hi))

// Each streaming kernel twice: a grid-stride loop (any number of groups), and _1, one element per
// work-item (the launch covers the arrays; a CPU device vectorizes it across work-items).
#define STREAM(name, params, body)                                                    \
  kernel void stream_##name params {                                                  \
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) body            \
  }                                                                                   \
  kernel void stream_##name##_1 params {                                              \
    size_t i = get_global_id(0);                                                      \
    if (i < n) body                                                                   \
  }
STREAM(copy, (global const VT* a, global VT* c, ulong n), { c[i] = a[i]; })
STREAM(mul, (global VT* b, global const VT* c, TYPE s, ulong n), { b[i] = s * c[i]; })
STREAM(add, (global const VT* a, global const VT* b, global VT* c, ulong n), { c[i] = a[i] + b[i]; })
STREAM(triad, (global VT* a, global const VT* b, global const VT* c, TYPE s, ulong n), { a[i] = b[i] + s * c[i]; })
void reduce_group(local TYPE* part, TYPE v, global TYPE* sums) {
  size_t l = get_local_id(0);
  part[l] = v;
  for (size_t step = get_local_size(0) / 2; step > 0; step /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < step) part[l] += part[l + step];
  }
  if (l == 0) sums[get_group_id(0)] = part[0];
}
kernel void stream_dot(global const VT* a, global const VT* b, global TYPE* sums, local TYPE* part, ulong n) {
  VT acc = (VT)(0);
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) acc += a[i] * b[i];
  reduce_group(part, VSUM(acc), sums);
}
kernel void stream_read(global const VT* a, global TYPE* sums, local TYPE* part, ulong n) {
  VT acc = (VT)(0);
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) acc += a[i];
  reduce_group(part, VSUM(acc), sums);
}
kernel void touch(global uchar* p, ulong stride, ulong n) {
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) p[i * stride] = (uchar)(i + 1);
}
kernel void spmv(global const ulong* rows, global const uint* cols, global const TYPE* vals, global const TYPE* x,
                 global TYPE* y, ulong n) {
  for (size_t r = get_global_id(0); r < n; r += get_global_size(0)) {
    TYPE acc = 0;
    for (ulong k = rows[r]; k < rows[r + 1]; ++k) acc += vals[k] * x[cols[k]];
    y[r] = acc;
  }
}
