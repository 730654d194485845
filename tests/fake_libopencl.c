/* A stand-in OpenCL library for the one device no machine of the test suite has: an accelerator whose
 * runtime compiles nothing (an FPGA's: CL_DEVICE_COMPILER_AVAILABLE false). Given to the probe and the
 * offload runtime as XFERLAB_OPENCL_LIBRARY, it forwards every call to the system's ICD loader,
 * libOpenCL.so.1 (its dependency: dlsym on this library's handle finds every other entry point there),
 * and changes one answer: clGetDeviceInfo(CL_DEVICE_COMPILER_AVAILABLE) says CL_FALSE. The device's
 * binaries still load through the real driver, so a test can show both sides: the one-line refusal
 * naming --program, and the same command running from `xferlab kernels build`'s binaries. Issue 26's
 * fault-injection stand-in, as tests/fake_libcuda.c is CUDA's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef cl_uint cl_bool;
typedef cl_uint cl_device_info;
#define CL_DEVICE_COMPILER_AVAILABLE 0x1028

cl_int clGetDeviceInfo(void* device, cl_device_info name, size_t size, void* value, size_t* size_ret) {
  static cl_int (*real)(void*, cl_device_info, size_t, void*, size_t*);
  if (!real) {
    void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    real = (cl_int (*)(void*, cl_device_info, size_t, void*, size_t*))(lib ? dlsym(lib, "clGetDeviceInfo") : NULL);
    if (!real) return -6; /* CL_OUT_OF_HOST_MEMORY: the real library is missing */
  }
  if (name == CL_DEVICE_COMPILER_AVAILABLE) {
    if (size_ret) *size_ret = sizeof(cl_bool);
    if (value) {
      if (size < sizeof(cl_bool)) return -30; /* CL_INVALID_VALUE */
      *(cl_bool*)value = 0;
    }
    return 0;
  }
  return real(device, name, size, value, size_ret);
}
