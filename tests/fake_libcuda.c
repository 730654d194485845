/* A stand-in for libcuda.so.1, written for tests/test_cuda.py: the driver calls xferlab-probe makes,
   implemented over host memory, each checking how it is called. Not CUDA: it shows the call sequence.
   Knobs (environment): FAKE_CUDA_DEVICES=N devices (1 unless set); FAKE_CUDA_PEER which device can access which
   other's memory (cuDeviceCanAccessPeer): unset every pair, "none" no pair, else "a:b,c:d" (a can access b's);
   FAKE_CUDA_CORRUPT a kernel's (and a peer copy's) last value off by one; FAKE_CUDA_REPORT the counts at exit.
   Built with -DFAKE_NO_PEER it exports none of the peer calls (a driver older than CUDA 4.0). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { OK = 0, INVALID_VALUE = 1, INVALID_DEVICE = 101, INVALID_CONTEXT = 201, PEER_ACCESS_UNSUPPORTED = 217,
       INVALID_PTX = 218, INVALID_HANDLE = 400, NOT_FOUND = 500, PEER_ACCESS_ALREADY_ENABLED = 704 };

/* D device, M managed, P pinned; `device`: the device whose context was current when it was allocated */
static struct { char* base; size_t bytes; char kind, where; int device; } regions[1024];
/* Contexts: one handle per device, (void*)(16 + device); the calling thread's current one (-1: none), set by
   cuCtxCreate (which makes the new context current) and cuCtxSetCurrent. */
#define MAX_DEVICES 8
static __thread int current = -1;
static int devices(void) { const char* n = getenv("FAKE_CUDA_DEVICES"); int v = n ? atoi(n) : 1; return v < 1 ? 1 : v > MAX_DEVICES ? MAX_DEVICES : v; }
static int context_device(const void* ctx) { long d = (long)ctx - 16; return d >= 0 && d < devices() ? (int)d : -1; }
/* peer_on[a][b]: a's context has access to b's memory (cuCtxEnablePeerAccess); copies between two devices counted
   by how the driver would move them: peer (the destination's context has access to the source) or staged. */
static int peer_on[MAX_DEVICES][MAX_DEVICES], peer_copies, staged_copies;
/* Managed pages, as the driver keeps them: where = 'H' on the host, 'P' moved to the GPU by a prefetch, 'C'
   left on the GPU by a copy. A copy that finds them left there by a copy did not cross the bus: counted. */
static int resident_copies;
static int launches, bad, live;
static int region_of(const void* p, size_t n);
static const char* module_text;
/* cuMemAdvise's hints as they arrived, "advice:device:bytes" comma-separated, for the report. */
static char advice_log[4096];
static void pad_join(void);

static void note_bad(const char* what) { ++bad; fprintf(stderr, "fake-cuda: bad call: %s\n", what); }
static void add(void* p, size_t n, char kind) {
  for (int i = 0; i < 1024; ++i)
    if (!regions[i].base) {
      regions[i].base = p; regions[i].bytes = n; regions[i].kind = kind; regions[i].where = 'H'; regions[i].device = current < 0 ? 0 : current;
      ++live; return;
    }
}
static int drop(void* p, char kind) {
  for (int i = 0; i < 1024; ++i) if (regions[i].base == p && regions[i].kind == kind) { regions[i].base = 0; --live; return OK; }
  note_bad("free of a pointer not allocated as that kind"); return INVALID_VALUE;
}
/* 'D' or 'M' when [p, p+n) lies in a device or managed allocation, 'P' in pinned, 0 elsewhere. */
static char kind_of(const void* p, size_t n) {
  for (int i = 0; i < 1024; ++i)
    if (regions[i].base && (const char*)p >= regions[i].base && (const char*)p + n <= regions[i].base + regions[i].bytes)
      return regions[i].kind;
  return 0;
}
static int dev(const void* p, size_t n) { char k = kind_of(p, n); return k == 'D' || k == 'M'; }

static int region_of(const void* p, size_t n) {
  for (int i = 0; i < 1024; ++i)
    if (regions[i].base && (const char*)p >= regions[i].base && (const char*)p + n <= regions[i].base + regions[i].bytes) return i;
  return -1;
}
static void copied(const void* p, size_t n) {
  int i = region_of(p, n);
  if (i < 0 || regions[i].kind != 'M') return;
  if (regions[i].where == 'C') ++resident_copies;
  regions[i].where = 'C';
}
__attribute__((destructor)) static void report(void) {
  if (getenv("FAKE_CUDA_REPORT"))
    fprintf(stderr, "fake-cuda: launches=%d bad=%d live=%d resident_copies=%d peer_copies=%d staged_copies=%d advice=%s\n",
            launches, bad, live, resident_copies, peer_copies, staged_copies, advice_log[0] ? advice_log : "-");
}

CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : (getenv("FAKE_CUDA_INIT") ? atoi(getenv("FAKE_CUDA_INIT")) : OK); }
CUresult cuDriverGetVersion(int* v) { *v = 12040; return OK; }
CUresult cuGetErrorString(CUresult r, const char** s) {
  *s = r == 100 ? "no CUDA-capable device is detected" : r == 1 ? "invalid argument" : "fake error"; return OK;
}
CUresult cuGetErrorName(CUresult r, const char** s) { *s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_FAKE"; return OK; }
CUresult cuDeviceGetCount(int* n) { *n = devices(); return OK; }
CUresult cuDeviceGet(int* d, int ordinal) { if (ordinal < 0 || ordinal >= devices()) return INVALID_DEVICE; *d = ordinal; return OK; }
CUresult cuDeviceGetName(char* name, int len, int d) { snprintf(name, len, "xferlab \"fake\" device %d", d); return OK; }
CUresult cuDeviceTotalMem_v2(size_t* bytes, int d) { (void)d; *bytes = 1ull << 30; return OK; }
CUresult cuDeviceGetAttribute(int* v, int a, int d) {
  switch (a) {
    case 75: *v = 8; break;  case 76: *v = 6; break;  case 16: *v = 2; break;
    case 41: case 83: case 19: *v = 1; break;
    case 89: *v = getenv("FAKE_CUDA_NO_CMA") ? 0 : 1; break;
    case 33: *v = 0x65 + d; break;
    /* CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz) and GLOBAL_MEMORY_BUS_WIDTH (bits): 0 (not reported) unless
       FAKE_CUDA_MEMORY="kHz bits" gives them, as an H200's driver does: "3201000 6016" */
    case 36: *v = getenv("FAKE_CUDA_MEMORY") ? atoi(getenv("FAKE_CUDA_MEMORY")) : 0; break;
    case 37: *v = getenv("FAKE_CUDA_MEMORY") && strchr(getenv("FAKE_CUDA_MEMORY"), ' ')
                  ? atoi(strchr(getenv("FAKE_CUDA_MEMORY"), ' ') + 1) : 0; break;
    default: *v = 0;
  }
  return OK;
}
CUresult cuCtxCreate_v2(void** ctx, unsigned flags, int d) {
  (void)flags; if (d < 0 || d >= devices()) return INVALID_DEVICE;
  *ctx = (void*)(16L + d); current = d; return OK;
}
CUresult cuCtxDestroy_v2(void* ctx) {
  int d = context_device(ctx);
  if (d < 0) return INVALID_HANDLE;
  if (current == d) current = -1;
  for (int k = 0; k < MAX_DEVICES; ++k) peer_on[d][k] = peer_on[k][d] = 0;  /* its peer mappings go with it */
  return OK;
}
CUresult cuCtxSetCurrent(void* ctx) {
  if (!ctx) { current = -1; return OK; }
  int d = context_device(ctx);
  if (d < 0) return INVALID_CONTEXT;
  current = d; return OK;
}
#ifndef FAKE_NO_PEER
/* Whether FAKE_CUDA_PEER lets device a access device b's memory. */
static int can_access(int a, int b) {
  const char* spec = getenv("FAKE_CUDA_PEER");
  if (!spec) return 1;
  char pair[16];
  snprintf(pair, sizeof pair, "%d:%d", a, b);
  for (const char* at = strstr(spec, pair); at; at = strstr(at + 1, pair))
    if ((at == spec || at[-1] == ',') && (at[strlen(pair)] == ',' || !at[strlen(pair)])) return 1;
  return 0;
}
/* As the reference says: 1 when `dev` can access `peer`'s memory; two devices, both valid and different. */
CUresult cuDeviceCanAccessPeer(int* can, int dev, int peer) {
  if (!can) return INVALID_VALUE;
  if (dev < 0 || dev >= devices() || peer < 0 || peer >= devices() || dev == peer) return INVALID_DEVICE;
  *can = can_access(dev, peer); return OK;
}
/* The current context gets access to `peer`'s memory: flags must be 0; no current context, an unknown peer
   context or the current device's own: errors; a pair cuDeviceCanAccessPeer refuses: unsupported; the second
   time: CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED. */
CUresult cuCtxEnablePeerAccess(void* peer, unsigned flags) {
  int to = context_device(peer);
  if (flags) return INVALID_VALUE;
  if (current < 0 || to < 0) return INVALID_CONTEXT;
  if (to == current) return INVALID_DEVICE;
  if (!can_access(current, to)) return PEER_ACCESS_UNSUPPORTED;
  if (peer_on[current][to]) return PEER_ACCESS_ALREADY_ENABLED;
  peer_on[current][to] = 1; return OK;
}
/* dst in dst_ctx's device memory, src in src_ctx's; peer when dst's context has access to src's memory, else the
   driver stages it (counted apart). FAKE_CUDA_CORRUPT: the last byte written off by one. */
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void* dst_ctx, CUdeviceptr src, void* src_ctx, size_t n, void* s) {
  int to = context_device(dst_ctx), from = context_device(src_ctx), i = region_of((void*)dst, n), j = region_of((void*)src, n);
  if (to < 0 || from < 0) { note_bad("cuMemcpyPeerAsync: a context that is none"); return INVALID_CONTEXT; }
  if (!s || !n || i < 0 || j < 0 || regions[i].kind != 'D' || regions[j].kind != 'D' || regions[i].device != to ||
      regions[j].device != from) {
    note_bad("cuMemcpyPeerAsync: buffers not in their contexts' device memory"); return INVALID_VALUE;
  }
  if (to != from && peer_on[to][from]) ++peer_copies;
  else if (to != from) ++staged_copies;
  memmove((void*)dst, (const void*)src, n);
  if (getenv("FAKE_CUDA_CORRUPT")) ((unsigned char*)dst)[n - 1] += 1;
  return OK;
}
#endif
CUresult cuCtxSynchronize(void) { return OK; }
CUresult cuMemGetInfo_v2(size_t* f, size_t* t) { *f = *t = 1ull << 30; return OK; }
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) { void* m = malloc(n); add(m, n, 'D'); *p = (CUdeviceptr)m; return n ? OK : INVALID_VALUE; }
CUresult cuMemFree_v2(CUdeviceptr p) { if (drop((void*)p, kind_of((void*)p, 1) == 'M' ? 'M' : 'D') == OK) free((void*)p); return OK; }
CUresult cuMemHostAlloc(void** p, size_t n, unsigned flags) { (void)flags; *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096); add(*p, n, 'P'); return OK; }
CUresult cuMemFreeHost(void* p) { if (drop(p, 'P') == OK) free(p); return OK; }
CUresult cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned flags) {
  if (flags != 1) note_bad("cuMemAllocManaged without CU_MEM_ATTACH_GLOBAL");
  void* m = malloc(n); add(m, n, 'M'); *p = (CUdeviceptr)m; return OK;
}
CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, int to, void* s) {
  (void)s; if (kind_of((void*)p, n) != 'M' || (to != 0 && to != -1)) { note_bad("cuMemPrefetchAsync"); return INVALID_VALUE; }
  regions[region_of((void*)p, n)].where = to == -1 ? 'H' : 'P'; return OK;
}
#ifndef FAKE_NO_ADVISE
/* As the driver documents it: a managed range, one of CUmem_advise's six values; READ_MOSTLY ignores the device,
   the others take a GPU with concurrentManagedAccess or CU_DEVICE_CPU (-1). Records the hint. */
CUresult cuMemAdvise(CUdeviceptr p, size_t n, int advice, int device) {
  if (!n || kind_of((void*)p, n) != 'M') { note_bad("cuMemAdvise outside managed memory"); return INVALID_VALUE; }
  if (advice < 1 || advice > 6) { note_bad("cuMemAdvise: advice not a CUmem_advise value"); return INVALID_VALUE; }
  if (advice > 2 && device != -1 && (device != 0 || getenv("FAKE_CUDA_NO_CMA"))) { note_bad("cuMemAdvise device"); return INVALID_DEVICE; }
  size_t at = strlen(advice_log);
  snprintf(advice_log + at, sizeof advice_log - at, "%s%d:%d:%zu", at ? "," : "", advice, device, n);
  return OK;
}
#endif
#define COPY(name, cond, ...) \
  CUresult name(__VA_ARGS__) { if (!(cond)) { note_bad(#name); return INVALID_VALUE; } copied((const void*)dst, n); copied((const void*)src, n); \
    memcpy((void*)dst, (const void*)src, n); return OK; }
COPY(cuMemcpy, 1, CUdeviceptr dst, CUdeviceptr src, size_t n)
COPY(cuMemcpyHtoD_v2, dev((void*)dst, n) && !dev(src, n), CUdeviceptr dst, const void* src, size_t n)
COPY(cuMemcpyDtoH_v2, !dev(dst, n) && dev((void*)src, n), void* dst, CUdeviceptr src, size_t n)
COPY(cuMemcpyDtoD_v2, dev((void*)dst, n) && dev((void*)src, n), CUdeviceptr dst, CUdeviceptr src, size_t n)
COPY(cuMemcpyAsync, s, CUdeviceptr dst, CUdeviceptr src, size_t n, void* s)
COPY(cuMemcpyHtoDAsync_v2, s && dev((void*)dst, n) && !dev(src, n), CUdeviceptr dst, const void* src, size_t n, void* s)
COPY(cuMemcpyDtoHAsync_v2, s && !dev(dst, n) && dev((void*)src, n), void* dst, CUdeviceptr src, size_t n, void* s)
#ifndef FAKE_OLD_DRIVER
COPY(cuMemcpyDtoDAsync_v2, s && dev((void*)dst, n) && dev((void*)src, n), CUdeviceptr dst, CUdeviceptr src, size_t n, void* s)
#endif
CUresult cuModuleLoadData(void** m, const void* image) {
  module_text = image;
  if (!strstr(module_text, ".version") || !strstr(module_text, ".target")) return INVALID_PTX;
  *m = (void*)32; return OK;
}
CUresult cuModuleUnload(void* m) { return m == (void*)32 ? OK : INVALID_HANDLE; }
/* The stream kernels of kernels_cuda.cpp, by name: the stand-in does their arithmetic on the host so
   that the probe's arguments, launch shapes and checks can be tested (it does not run the PTX). */
static const char* stream_names[] = {"copy", "mul", "add", "triad", "dot", "read"};
CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
  char entry[128];
  snprintf(entry, sizeof entry, ".entry %s(", name);
  if (m != (void*)32 || !strstr(module_text, entry)) return NOT_FOUND;
  if (!strcmp(name, "xferlab_touch")) { *f = (void*)300L; return OK; }
  if (!strcmp(name, "xferlab_hist_d")) { *f = (void*)310L; return OK; }
  if (!strcmp(name, "xferlab_hist_u")) { *f = (void*)311L; return OK; }
  if (!strcmp(name, "xferlab_pad_d")) { *f = (void*)320L; return OK; }
  if (!strcmp(name, "xferlab_pad_u")) { *f = (void*)321L; return OK; }
  for (int k = 0; k < 6; ++k)
    for (int d = 0; d < 2; ++d) {
      char want[64];
      snprintf(want, sizeof want, "xferlab_%s_%s", stream_names[k], d ? "f64" : "f32");
      if (!strcmp(name, want)) { *f = (void*)(long)(200 + 2 * k + d); return OK; }
    }
  if (strncmp(name, "xferlab_empty", 13)) return NOT_FOUND;
  *f = (void*)(long)(100 + atoi(name + 13)); return OK;  /* remembers how many parameters it takes */
}
static int reachable(const void* p, size_t n) { char k = kind_of(p, n); return k == 'D' || k == 'M' || k == 'P'; }
#define PTR(i) ((void*)*(CUdeviceptr*)params[i])
static CUresult stream_kernel(int id, unsigned threads, void** params) {
  int k = (id - 200) / 2, f64 = (id - 200) % 2, arrays = k == 2 || k == 3 ? 3 : k == 5 ? 1 : 2;
  int has_scalar = k == 1 || k == 3, last = arrays + (k >= 4) + has_scalar;
  unsigned long long n = *(unsigned long long*)params[last];
  size_t es = f64 ? 8 : 4;
  for (int i = 0; i < arrays; ++i)
    if (!reachable(PTR(i), n * es)) { note_bad("stream kernel array"); return INVALID_VALUE; }
  if (k >= 4 && !reachable(PTR(arrays), threads * es)) { note_bad("stream kernel partial sums"); return INVALID_VALUE; }
  double s = has_scalar ? (f64 ? *(double*)params[arrays] : *(float*)params[arrays]) : 0;
#define AT(p, i) (f64 ? ((double*)(p))[i] : (double)((float*)(p))[i])
#define SET(p, i, v) do { if (f64) ((double*)(p))[i] = (v); else ((float*)(p))[i] = (float)(v); } while (0)
  double sum = 0;
  for (unsigned long long i = 0; i < n; ++i) {
    if (k == 0) SET(PTR(1), i, AT(PTR(0), i));
    else if (k == 1) SET(PTR(0), i, s * AT(PTR(1), i));
    else if (k == 2) SET(PTR(2), i, AT(PTR(0), i) + AT(PTR(1), i));
    else if (k == 3) SET(PTR(0), i, AT(PTR(1), i) + s * AT(PTR(2), i));
    else if (k == 4) sum += AT(PTR(0), i) * AT(PTR(1), i);
    else sum += AT(PTR(0), i);
  }
  if (k >= 4) { for (unsigned t = 0; t < threads; ++t) SET(PTR(arrays), t, t ? 0.0 : sum); }
  /* FAKE_CUDA_CORRUPT: the last element written (or the sum) is off by one, for the probe's check to catch. */
  if (getenv("FAKE_CUDA_CORRUPT")) {
    void* out = PTR(k >= 4 ? arrays : k == 0 || k == 2 ? 1 + (k == 2) : 0);
    size_t at = k >= 4 ? 0 : n - 1;
    SET(out, at, AT(out, at) + 1.0);
  }
  return OK;
}
/* PAD (xferlab_pad_d / xferlab_pad_u): rows popped from *next, a row i moved from i*cols to i*(cols+pad) once
   the flags of the rows its destination covers are set, then its flag set: the kernel's protocol, run by one
   host thread per block (at most 4) that keeps running after the launch returns, as a kernel does, until
   cuStreamSynchronize; so U's host threads share the counter and the flags with it. */
static struct { float* data; unsigned rows, cols, pad; int* next; int* done; } pad_args;
static pthread_t pad_threads[4];
static int pad_running;
static void* pad_block(void* unused) {
  (void)unused;
  const unsigned rows = pad_args.rows, c = pad_args.cols, p = pad_args.pad;
  for (;;) {
    int t = __atomic_fetch_add(pad_args.next, 1, __ATOMIC_RELAXED);
    if (t < 0 || (unsigned)t >= rows) return 0;
    unsigned long long i = rows - 1 - (unsigned)t, last = (i * (c + p) + c - 1) / c;
    if (last > rows - 1) last = rows - 1;
    for (unsigned long long j = i + 1; j <= last; ++j)
      while (!__atomic_load_n(&pad_args.done[j], __ATOMIC_ACQUIRE)) sched_yield();
    memmove(pad_args.data + i * (c + p), pad_args.data + i * c, c * sizeof(float));
    __atomic_store_n(&pad_args.done[i], 1, __ATOMIC_RELEASE);
  }
}
static CUresult pad_launch(int u, unsigned blocks, unsigned one, unsigned threads, unsigned shared, void* s, void** params, void** extra) {
  char need = u ? 'M' : 'D';
  if (!blocks || one != 1 || !threads || shared || !s || extra || !params || pad_running) { note_bad("cuLaunchKernel (pad)"); return INVALID_VALUE; }
  float* data = PTR(0); unsigned rows = *(unsigned*)params[1], c = *(unsigned*)params[2], p = *(unsigned*)params[3];
  int* next = PTR(4); int* done = PTR(5);
  if (!rows || !c || kind_of(data, (size_t)rows * (c + p) * 4) != need || kind_of(next, 4) != need || kind_of(done, rows * 4ull) != need) {
    note_bad("pad kernel memory"); return INVALID_VALUE;
  }
  pad_args.data = data; pad_args.rows = rows; pad_args.cols = c; pad_args.pad = p; pad_args.next = next; pad_args.done = done;
  pad_running = blocks < 4 ? (int)blocks : 4;
  for (int b = 0; b < pad_running; ++b) pthread_create(&pad_threads[b], 0, pad_block, 0);
  return OK;
}
static void pad_join(void) {
  for (int b = 0; b < pad_running; ++b) pthread_join(pad_threads[b], 0);
  pad_running = 0;
}
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void* s, void** params, void** extra) {
  ++launches;
  if ((long)f >= 200 && (long)f < 212) {
    if (gx * bx == 0 || gy * gz * by * bz != 1 || shared || !s || extra || !params) { note_bad("cuLaunchKernel (stream)"); return INVALID_VALUE; }
    return stream_kernel((int)(long)f, gx * bx, params);
  }
  if ((long)f == 310 || (long)f == 311) {  /* histogram: hist[in[i] >> 24] += 1, i < count */
    unsigned* in = PTR(0); unsigned count = *(unsigned*)params[1]; unsigned* hist = PTR(2);
    char need = (long)f == 311 ? 'M' : 'D';
    if ((count && kind_of(in, count * 4ull) != need) || kind_of(hist, 1024) != need) {
      note_bad("histogram kernel memory"); return INVALID_VALUE;
    }
    for (unsigned i = 0; i < count; ++i) __atomic_fetch_add(&hist[in[i] >> 24], 1u, __ATOMIC_RELAXED);
    return OK;
  }
  if ((long)f == 320 || (long)f == 321) return pad_launch((long)f == 321, gx, gy * gz * by * bz, bx, shared, s, params, extra);
  if ((long)f == 300) {  /* touch: p[i * stride] = i + 1 */
    unsigned char* p = PTR(0);
    unsigned long long stride = *(unsigned long long*)params[1], n = *(unsigned long long*)params[2];
    if (kind_of(p, n * stride) != 'M') { note_bad("touch outside managed memory"); return INVALID_VALUE; }
    for (unsigned long long i = 0; i < n; ++i) p[i * stride] = (unsigned char)(i + 1);
    if (getenv("FAKE_CUDA_CORRUPT") && n) p[(n - 1) * stride] += 1;  /* the last touch wrong */
    return OK;
  }
  int n = (int)(long)f - 100;
  if (n < 0 || n > 8 || gx * gy * gz * bx * by * bz != 1 || shared || !s || extra || (n && !params)) { note_bad("cuLaunchKernel"); return INVALID_VALUE; }
  for (int i = 0; i < n; ++i)
    if (!params[i] || !dev((void*)*(CUdeviceptr*)params[i], 1)) { note_bad("cuLaunchKernel parameter"); return INVALID_VALUE; }
  return OK;
}
CUresult cuStreamCreate(void** s, unsigned flags) { (void)flags; *s = malloc(1); return OK; }
CUresult cuStreamSynchronize(void* s) { pad_join(); return s ? OK : INVALID_HANDLE; }
CUresult cuStreamDestroy_v2(void* s) { pad_join(); free(s); return OK; }
CUresult cuEventCreate(void** e, unsigned flags) { (void)flags; *e = calloc(1, sizeof(double)); return OK; }
CUresult cuEventRecord(void* e, void* s) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  if (!s) return INVALID_HANDLE;
  *(double*)e = t.tv_sec * 1e3 + t.tv_nsec * 1e-6; return OK;
}
CUresult cuEventSynchronize(void* e) { return *(double*)e > 0 ? OK : INVALID_HANDLE; }
CUresult cuEventElapsedTime(float* ms, void* a, void* b) {
  if (*(double*)a <= 0 || *(double*)b <= 0) return INVALID_HANDLE;
  *ms = (float)(*(double*)b - *(double*)a); return OK;
}
CUresult cuEventDestroy_v2(void* e) { free(e); return OK; }
