/* The plain-C reference for benchmarks/bench_device.py: what a programmer writes against the OpenCL
 * API to time an empty kernel's launch and a host-to-device copy, with nothing else in the loop.
 * The OpenCL library is loaded at run time (as xferlab does), so no OpenCL headers are needed; the
 * few types and prototypes below follow the Khronos OpenCL API specification (cl.h's values).
 *
 *   launch LAUNCHES WARMUP COPY_BYTES COPIES
 *
 * LAUNCHES 0 skips the launches, COPIES 0 the copies (benchmarks/bench_device.py times each in a
 * process of its own, as xferlab-probe's launch and transfer runs are). Prints, each the median over
 * the timed repetitions after WARMUP launches (2 copies):
 *   launch_median_seconds S           clEnqueueNDRangeKernel of one work item + clWaitForEvents on a
 *                                     queue without profiling, host clock around both;
 *   launch_profiled_median_seconds S  the same on a second queue created with CL_QUEUE_PROFILING_ENABLE,
 *                                     the event's START and END read after the wait (as xferlab-probe
 *                                     does for its device clock); the two kinds of launch alternate in
 *                                     blocks of 100 in this one process, so that the difference between
 *                                     them is the profiling's and not the machine's or the process's;
 *   copy_median_seconds S             blocking clEnqueueWriteBuffer of COPY_BYTES into a CL_MEM_READ_WRITE
 *                                     buffer, from the host buffer xferlab-probe's pageable kind uses:
 *                                     aligned_alloc at 2 MiB with MADV_HUGEPAGE from 2 MiB up, else at
 *                                     4 KiB (device.cpp / opencl_backend.cpp). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef uint64_t cl_bitfield;
typedef void *cl_platform_id, *cl_device_id, *cl_context, *cl_command_queue, *cl_mem, *cl_program, *cl_kernel,
    *cl_event;

#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
#define CL_MEM_READ_WRITE 1u
#define CL_QUEUE_PROFILING_ENABLE 2u
#define CL_PROFILING_COMMAND_START 0x1282u
#define CL_PROFILING_COMMAND_END 0x1283u

static cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
static cl_int (*GetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id *, cl_uint *);
static cl_context (*CreateContext)(const intptr_t *, cl_uint, const cl_device_id *, void *, void *, cl_int *);
static cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_bitfield, cl_int *);
static cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
static cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *, void *, void *);
static cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
static cl_mem (*CreateBuffer)(cl_context, cl_bitfield, size_t, void *, cl_int *);
static cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
                                      const size_t *, cl_uint, const cl_event *, cl_event *);
static cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void *, cl_uint,
                                    const cl_event *, cl_event *);
static cl_int (*WaitForEvents)(cl_uint, const cl_event *);
static cl_int (*GetEventProfilingInfo)(cl_event, cl_uint, size_t, void *, size_t *);
static cl_int (*ReleaseEvent)(cl_event);

static void need(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "reference: %s failed\n", what);
    exit(1);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One launch and its wait, host clock around both; with `profiled`, the event's device timestamps
 * are read afterwards, outside the timed part, as xferlab-probe reads them. */
static double launch_once(cl_command_queue queue, cl_kernel kernel, int profiled) {
  const size_t global = 1;
  cl_event ev;
  double t0 = now();
  need(EnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, &ev) == 0, "clEnqueueNDRangeKernel");
  need(WaitForEvents(1, &ev) == 0, "clWaitForEvents");
  double t1 = now();
  if (profiled) {
    cl_ulong start = 0, end = 0;
    need(GetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) == 0 &&
             GetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) == 0,
         "clGetEventProfilingInfo");
  }
  ReleaseEvent(ev);
  return t1 - t0;
}

#define LOAD(name) need((*(void **)&name = dlsym(lib, "cl" #name)) != NULL, "dlsym cl" #name)
#define BLOCK 100

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: launch LAUNCHES WARMUP COPY_BYTES COPIES\n");
    return 2;
  }
  size_t launches = strtoull(argv[1], NULL, 10), warmup = strtoull(argv[2], NULL, 10);
  size_t bytes = strtoull(argv[3], NULL, 10), copies = strtoull(argv[4], NULL, 10);
  need(bytes > 0, "arguments (COPY_BYTES at least 1)");
  void *lib = dlopen("libOpenCL.so.1", RTLD_NOW);
  need(lib != NULL, "dlopen libOpenCL.so.1");
  LOAD(GetPlatformIDs); LOAD(GetDeviceIDs); LOAD(CreateContext); LOAD(CreateCommandQueue);
  LOAD(CreateProgramWithSource); LOAD(BuildProgram); LOAD(CreateKernel); LOAD(CreateBuffer);
  LOAD(EnqueueNDRangeKernel); LOAD(EnqueueWriteBuffer); LOAD(WaitForEvents); LOAD(GetEventProfilingInfo);
  LOAD(ReleaseEvent);

  cl_platform_id platform;
  cl_device_id device;
  cl_uint count = 0;
  cl_int err = 0;
  need(GetPlatformIDs(1, &platform, &count) == 0 && count > 0, "clGetPlatformIDs");
  need(GetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &count) == 0 && count > 0, "clGetDeviceIDs");
  cl_context context = CreateContext(NULL, 1, &device, NULL, NULL, &err);
  need(err == 0, "clCreateContext");
  cl_command_queue queue = CreateCommandQueue(context, device, 0, &err);
  need(err == 0, "clCreateCommandQueue");
  cl_command_queue profiling = CreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &err);
  need(err == 0, "clCreateCommandQueue(CL_QUEUE_PROFILING_ENABLE)");
  const char *source = "__kernel void empty(void) {}";
  cl_program program = CreateProgramWithSource(context, 1, &source, NULL, &err);
  need(err == 0 && BuildProgram(program, 1, &device, "", NULL, NULL) == 0, "clBuildProgram");
  cl_kernel kernel = CreateKernel(program, "empty", &err);
  need(err == 0, "clCreateKernel");

  double *plain = malloc(sizeof(double) * (launches + copies + 1)), *profiled = malloc(sizeof(double) * (launches + 1));
  need(plain != NULL && profiled != NULL, "malloc");
  for (size_t i = 0; launches && i < warmup; ++i) {
    launch_once(queue, kernel, 0);
    launch_once(profiling, kernel, 1);
  }
  for (size_t done = 0; done < launches; done += BLOCK) {  /* alternating blocks: plain, profiled */
    size_t n = launches - done < BLOCK ? launches - done : BLOCK;
    for (size_t i = 0; i < n; ++i) plain[done + i] = launch_once(queue, kernel, 0);
    for (size_t i = 0; i < n; ++i) profiled[done + i] = launch_once(profiling, kernel, 1);
  }
  if (launches) {
    printf("launch_median_seconds %.9e\n", median(plain, launches));
    printf("launch_profiled_median_seconds %.9e\n", median(profiled, launches));
  }
  if (!copies) return 0;

  /* The probe's pageable host buffer (opencl_backend.cpp allocate_host). */
  const size_t huge = (size_t)2 << 20, align = bytes >= huge ? huge : 4096;
  const size_t length = (bytes + align - 1) / align * align;
  char *host = aligned_alloc(align, length);
  need(host != NULL, "aligned_alloc");
  if (length >= huge) madvise(host, length, MADV_HUGEPAGE);
  memset(host, 1, bytes);
  cl_mem buffer = CreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  need(err == 0, "clCreateBuffer");
  for (size_t i = 0; i < copies + 2; ++i) {
    double t0 = now();
    need(EnqueueWriteBuffer(queue, buffer, 1, 0, bytes, host, 0, NULL, NULL) == 0, "clEnqueueWriteBuffer");
    double t1 = now();
    if (i >= 2) plain[i - 2] = t1 - t0;
  }
  printf("copy_median_seconds %.9e\n", median(plain, copies));
  return 0;
}
