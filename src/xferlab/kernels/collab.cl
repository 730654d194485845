// xferlab measure collab (native/probe/collab.cpp, collab_histogram.cpp, collab_taskqueue.cpp): CHAI-style
// histogram and task queue kernels. collab.cpp builds this one program trying, in turn, the option sets
// "-cl-std=CL2.0 -DXFERLAB_C11=1", "-cl-std=CL3.0 -DXFERLAB_C11=1", (where the device reports
// CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES) "-cl-std=CL3.0 -DXFERLAB_C11=1 -D__opencl_c_atomic_scope_all_devices=1",
// and "-DXFERLAB_C11=0". Embedded in the probe at build time (CMakeLists.txt) and shipped in the wheel.
// The kernels' prelude: FP_CONTRACT OFF keeps the task transform bit-identical to the host's
// reference. SHARED_* are the atomics on memory shared with the host (U version): C11-style with
// the all-SVM-devices scope under OpenCL C 2.0, or CL1.2 atomic_add. The patterns' kernels follow
// it: the histogram's kernels, the task queue's, then PAD's.
#pragma OPENCL FP_CONTRACT OFF
#if XFERLAB_C11
#define SHARED_UINT volatile __global atomic_uint
#define SHARED_INT volatile __global atomic_int
#define SHARED_ADD(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed, memory_scope_all_svm_devices)
#define SHARED_LOAD(p) atomic_load_explicit((p), memory_order_acquire, memory_scope_all_svm_devices)
#define SHARED_STORE(p, v) atomic_store_explicit((p), (v), memory_order_release, memory_scope_all_svm_devices)
#else
#define SHARED_UINT volatile __global uint
#define SHARED_INT volatile __global int
#define SHARED_ADD(p, v) atomic_add((p), (v))
#define SHARED_LOAD(p) atomic_add((p), 0)
#define SHARED_STORE(p, v) (mem_fence(CLK_GLOBAL_MEM_FENCE), atomic_xchg((p), (v)))
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

// PAD (CHAI's padding, in place): rows x cols floats padded to rows x (cols + pad) in the same
// buffer. Row i moves from i*cols to i*(cols+pad), so rows go from the last to the first: row i may
// be written only once every row j > i whose source its destination covers has been moved
// (done[j] set, release/acquire). Work-groups (and, in U, host threads) pop rows from `next`; the
// popped row is rows - 1 - task. Within a row, chunks of the work-group's size move from the last
// to the first, each read whole before it is written (the destination lies above the source).
void move_row(__global float* data, uint i, uint cols, uint pad) {
  const ulong src = (ulong)i * cols, dst = (ulong)i * (cols + pad);
  const uint lid = get_local_id(0), lsize = get_local_size(0);
  if (src == dst) return;  // row 0, or no padding: uniform across the work-group
  for (long base = (long)((cols - 1) / lsize) * lsize; base >= 0; base -= lsize) {
    const ulong k = (ulong)base + lid;
    float v = 0.0f;
    if (k < cols) v = data[src + k];
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (k < cols) data[dst + k] = v;
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

__kernel void pad_rows(__global float* data, uint rows, uint cols, uint pad, SHARED_INT* next, SHARED_INT* done) {
  __local int task;
  for (;;) {
    if (get_local_id(0) == 0) task = SHARED_ADD(next, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int t = task;
    if (t >= (int)rows) break;
    const uint i = rows - 1 - (uint)t;
    if (get_local_id(0) == 0) {  // the rows whose source this row's destination covers
      const ulong end = (ulong)i * (cols + pad) + cols;
      const uint last = (uint)min((ulong)rows - 1, (end - 1) / cols);
      for (uint j = i + 1; j <= last; ++j)
        while (SHARED_LOAD(&done[j]) == 0) {
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    move_row(data, i, cols, pad);
    if (get_local_id(0) == 0) SHARED_STORE(&done[i], 1);
    barrier(CLK_LOCAL_MEM_FENCE);  // before `task` is overwritten
  }
}

// TRNS (CHAI's in-place transposition, PTTWAC: Sung, Liu and Hwu, "DL: A data layout transformation
// system for heterogeneous computing", InPar 2012): a height x width matrix of floats seen as
// A = height rows of B = width / s super-elements of s floats, [A][B][s] transposed in place to
// [B][A][s]. Super-element g = r*B + c goes to c*A + r = g*A - M*(g/B), M = A*B - 1 (0 and M stay).
// Work-groups (and, in U, host threads) pop cycle starts g from `head`; each reads g's data, checks
// g's flag and, while it finds flags clear, carries the data along the cycle: it reads the next
// super-element, swaps its flag to 1 and, if the flag was 0, writes the carried data there. A flag
// is won once, so every super-element is written once; CHAI's check is an atomic add of 0, kept here
// with acquire-release order so that the start's data is read before anyone may write it.
#if XFERLAB_C11
#define TRNS_CHECK(p) atomic_fetch_add_explicit((p), 0, memory_order_acq_rel, memory_scope_all_svm_devices)
#define TRNS_SWAP(p, v) atomic_exchange_explicit((p), (v), memory_order_acq_rel, memory_scope_all_svm_devices)
#else
#define TRNS_CHECK(p) atomic_add((p), 0)
#define TRNS_SWAP(p, v) atomic_xchg((p), (v))
#endif
#define TRNS_HELD 4  // floats a work-item carries: super-elements of at most 4 x the work-group's size

__kernel void trns_cycles(__global float* data, uint height, uint per_row, uint s, SHARED_INT* head, SHARED_INT* finished) {
  __local int start, done;
  const uint lid = get_local_id(0), lsize = get_local_size(0);
  const ulong A = height, B = per_row, M = A * B - 1;
  float held[TRNS_HELD], next_held[TRNS_HELD];
  for (;;) {
    if (lid == 0) start = SHARED_ADD(head, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong g = (ulong)start;
    if (start < 0 || g >= M) break;
    ulong next = g * A - M * (g / B);
    if (next != g) {
      for (uint q = 0; q < TRNS_HELD; ++q)
        if (lid + q * lsize < s) held[q] = data[g * s + lid + q * lsize];
      barrier(CLK_GLOBAL_MEM_FENCE);  // the start read whole before its flag is checked
      if (lid == 0) done = TRNS_CHECK(&finished[g]);
      barrier(CLK_LOCAL_MEM_FENCE);
      while (!done) {
        for (uint q = 0; q < TRNS_HELD; ++q)
          if (lid + q * lsize < s) next_held[q] = data[next * s + lid + q * lsize];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);  // every work-item has read `done`
        if (lid == 0) done = TRNS_SWAP(&finished[next], 1);
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (!done)
          for (uint q = 0; q < TRNS_HELD; ++q)
            if (lid + q * lsize < s) data[next * s + lid + q * lsize] = held[q];
        for (uint q = 0; q < TRNS_HELD; ++q) held[q] = next_held[q];
        next = next * A - M * (next / B);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // before `start` and `done` are overwritten
  }
}

// BS (CHAI's Bézier surface, collab_bs.cpp): a degree-3 surface (4 x 4 control points, x y z)
// evaluated at res x res points, tiles of tile x tile points the tasks (row by row). bs_blend and
// bs_point are collab_bs.cpp's blend and point, the same operations in the same order (only +, -
// and *, correctly rounded in OpenCL C, and FP_CONTRACT OFF above): the result is bit for bit the
// host's. Work-groups take tiles from `next` (a device buffer in D, tiles [0, tasks) the device's;
// shared with the host threads over SVM in U) and split a tile's points among their work-items.
void bs_blend(float mu, float* b) {
  const float binomial[4] = {1.0f, 3.0f, 3.0f, 1.0f};
  for (int k = 0; k <= 3; ++k) {
    float v = binomial[k];
    for (int i = 0; i < k; ++i) v *= mu;
    for (int i = 0; i < 3 - k; ++i) v *= 1.0f - mu;
    b[k] = v;
  }
}

void bs_point(__local const float* cp, float mui, float muj, __global float* out) {
  float bi[4], bj[4];
  bs_blend(mui, bi);
  bs_blend(muj, bj);
  float x = 0.0f, y = 0.0f, z = 0.0f;
  for (int ki = 0; ki <= 3; ++ki)
    for (int kj = 0; kj <= 3; ++kj) {
      __local const float* p = cp + (ki * 4 + kj) * 3;
      x += p[0] * bi[ki] * bj[kj];
      y += p[1] * bi[ki] * bj[kj];
      z += p[2] * bi[ki] * bj[kj];
    }
  out[0] = x;
  out[1] = y;
  out[2] = z;
}

__kernel void bs_tiles(__global const float* control, __global float* out, uint res, float step, uint tile, uint tasks,
                       SHARED_INT* next) {
  __local float cp[48];
  __local int task;
  const uint lid = get_local_id(0), lsize = get_local_size(0), tiles_j = (res + tile - 1) / tile;
  for (uint i = lid; i < 48; i += lsize) cp[i] = control[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (;;) {
    if (lid == 0) task = SHARED_ADD(next, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int t = task;
    if (t >= (int)tasks) break;
    // Remainders as x - (x / d) * d: clang-14 -O2 turns a / and % pair into a `freeze`, which
    // llvm-spirv-14 cannot translate (`xferlab kernels build --spirv`).
    const uint tr = (uint)t / tiles_j, r0 = tr * tile, c0 = ((uint)t - tr * tiles_j) * tile;
    for (uint p = lid; p < tile * tile; p += lsize) {
      const uint pr = p / tile, r = r0 + pr, c = c0 + (p - pr * tile);
      if (r < res && c < res) bs_point(cp, (float)r * step, (float)c * step, out + ((ulong)r * res + c) * 3);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // before `task` is overwritten
  }
}
