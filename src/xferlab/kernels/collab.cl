// xferlab measure collab (native/probe/collab.cpp, collab_histogram.cpp, collab_taskqueue.cpp): CHAI-style
// histogram and task queue kernels. collab.cpp builds this one program trying, in turn, the option sets
// "-cl-std=CL2.0 -DXFERLAB_C11=1", "-cl-std=CL3.0 -DXFERLAB_C11=1", (where the device reports
// CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES) "-cl-std=CL3.0 -DXFERLAB_C11=1 -D__opencl_c_atomic_scope_all_devices=1",
// and "-DXFERLAB_C11=0". Embedded in the probe at build time (CMakeLists.txt) and shipped in the wheel.
// The kernels' prelude: FP_CONTRACT OFF keeps the task transform bit-identical to the host's
// reference. SHARED_* are the atomics on memory shared with the host (U version): C11-style with
// the all-SVM-devices scope under OpenCL C 2.0, or CL1.2 atomic_add. The patterns' kernels follow
// it: the histogram's kernels, then the task queue's.
#pragma OPENCL FP_CONTRACT OFF
#if XFERLAB_C11
#define SHARED_UINT volatile __global atomic_uint
#define SHARED_INT volatile __global atomic_int
#define SHARED_ADD(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed, memory_scope_all_svm_devices)
#else
#define SHARED_UINT volatile __global uint
#define SHARED_INT volatile __global int
#define SHARED_ADD(p, v) atomic_add((p), (v))
#endif

// The histogram's kernels (the SHARED_* macros come from the prelude above).
// This work-group's slice of in[0, count), counted into l[256].
void count_slice(__global const uint* in, uint count, volatile __local uint* l) {
  const uint lid = get_local_id(0), lsize = get_local_size(0);
  const uint groups = get_num_groups(0), g = get_group_id(0);
  for (uint b = lid; b < 256; b += lsize) l[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint per = ((count + groups - 1) / groups + lsize - 1) / lsize * lsize;
  const uint first = min(count, g * per), end = min(count, first + per);
  for (uint i = first + lid; i < end; i += lsize) atomic_inc(&l[in[i] >> 24]);
  barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel void hist_d(__global const uint* in, uint count, volatile __global uint* hist) {
  volatile __local uint l[256];
  count_slice(in, count, l);
  for (uint b = get_local_id(0); b < 256; b += get_local_size(0))
    if (l[b]) atomic_add(&hist[b], l[b]);
}

__kernel void hist_u(__global const uint* in, uint count, SHARED_UINT* hist) {
  volatile __local uint l[256];
  count_slice(in, count, l);
  for (uint b = get_local_id(0); b < 256; b += get_local_size(0))
    if (l[b]) SHARED_ADD(&hist[b], l[b]);
}

// The task queue's kernels (the SHARED_* macros come from collab.cpp's prelude; FP_CONTRACT OFF
// there keeps `transform` bit-identical to the host's transform_span).
float transform(float x, int iterations) {
  for (int k = 0; k < iterations; ++k) x = x * 0.96875f + x * x * 0.015625f + 0.0078125f;
  return x;
}

void run_task(__global float* data, uint n, uint block, int iterations, uint t) {
  const ulong first = (ulong)t * block, end = min((ulong)n, first + block);
  for (ulong i = first + get_local_id(0); i < end; i += get_local_size(0)) data[i] = transform(data[i], iterations);
}

// D: one work-group per task, tasks [0, number of groups).
__kernel void tasks_d(__global float* data, uint n, uint block, int iterations) {
  run_task(data, n, block, iterations, get_group_id(0));
}

// U: persistent work-groups pop tasks from the counter shared with the host threads.
__kernel void tasks_u(__global float* data, uint n, uint block, int iterations, uint tasks, SHARED_INT* next) {
  __local int task;
  for (;;) {
    if (get_local_id(0) == 0) task = SHARED_ADD(next, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int t = task;
    if (t >= (int)tasks) break;
    run_task(data, n, block, iterations, (uint)t);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
