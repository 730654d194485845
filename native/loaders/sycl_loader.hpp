// A SYCL runtime, reached through dpctl's C API (libDPCTLSyclInterface.so, the C wrapper over
// sycl::queue, sycl::malloc_* and kernel submission that dpctl ships on PyPI beside Intel's SYCL
// runtime, libsycl), resolved with dlopen/dlsym at run time: no SYCL compiler or header is needed to
// build xferlab, and a machine without dpctl reports "not available" (exit code 3).
//
// SYCL itself is a C++ template API (the SYCL 2020 specification, Khronos), which cannot be called
// without its headers and compiler; dpctl's C API (dpctl 0.22, include/syclinterface/*.h: the
// queue, USM, event, device, device manager, platform, kernel bundle and service interfaces) is a
// stable C ABI over it. Every type, enum value and signature below was written for xferlab from
// those headers; only what the probe uses is declared.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace xferlab {
namespace sycl {

// Opaque references (dpctl_sycl_types.h).
struct Opaque;
using DeviceRef = Opaque*;
using QueueRef = Opaque*;
using ContextRef = Opaque*;
using EventRef = Opaque*;
using PlatformRef = Opaque*;
using KernelBundleRef = Opaque*;
using KernelRef = Opaque*;
using DeviceVectorRef = Opaque*;

// dpctl_sycl_enum_types.h
constexpr int DPCTL_ALL = (1 << 6) - 1;          // DPCTLSyclDeviceType: every device type
constexpr int DPCTL_ALL_BACKENDS = ((1 << 5) - 1) << 16;
constexpr int DPCTL_CUDA = 1 << 16, DPCTL_LEVEL_ZERO = 1 << 17, DPCTL_OPENCL = 1 << 18, DPCTL_HIP = 1 << 19;
constexpr int DPCTL_ACCELERATOR = 1 << 0, DPCTL_CPU = 1 << 2, DPCTL_GPU = 1 << 4;
constexpr int DPCTL_ENABLE_PROFILING = 1 << 0;   // DPCTLQueuePropertyType
constexpr int DPCTL_IN_ORDER = 1 << 1;
constexpr int DPCTL_VOID_PTR = 10;               // DPCTLKernelArgType
// DPCTLSyclAspectType (an enum counted from 0: host, cpu, gpu, accelerator, custom, fp16, fp64,
// atomic64, image, online_compiler, online_linker, queue_profiling, usm_device_allocations, ...).
constexpr int kAspectQueueProfiling = 11;
constexpr int kAspectUsmDevice = 12;
constexpr int kAspectUsmHost = 13;
constexpr int kAspectUsmShared = 14;

using ErrorHandler = void(int);

struct Api {
  const char* (*DPCTLService_GetDPCPPVersion)();
  void (*DPCTLCString_Delete)(const char*);
  DeviceVectorRef (*DPCTLDeviceMgr_GetDevices)(int);
  size_t (*DPCTLDeviceVector_Size)(DeviceVectorRef);
  DeviceRef (*DPCTLDeviceVector_GetAt)(DeviceVectorRef, size_t);
  void (*DPCTLDeviceVector_Delete)(DeviceVectorRef);
  void (*DPCTLDevice_Delete)(DeviceRef);
  const char* (*DPCTLDevice_GetName)(DeviceRef);
  const char* (*DPCTLDevice_GetVendor)(DeviceRef);
  const char* (*DPCTLDevice_GetDriverVersion)(DeviceRef);
  int (*DPCTLDevice_GetBackend)(DeviceRef);
  int (*DPCTLDevice_GetDeviceType)(DeviceRef);
  uint32_t (*DPCTLDevice_GetMaxComputeUnits)(DeviceRef);
  uint64_t (*DPCTLDevice_GetGlobalMemSize)(DeviceRef);
  uint64_t (*DPCTLDevice_GetMaxMemAllocSize)(DeviceRef);
  bool (*DPCTLDevice_HasAspect)(DeviceRef, int);
  PlatformRef (*DPCTLDevice_GetPlatform)(DeviceRef);
  const char* (*DPCTLPlatform_GetName)(PlatformRef);
  const char* (*DPCTLPlatform_GetVersion)(PlatformRef);
  void (*DPCTLPlatform_Delete)(PlatformRef);
  QueueRef (*DPCTLQueue_CreateForDevice)(DeviceRef, ErrorHandler*, int);
  void (*DPCTLQueue_Delete)(QueueRef);
  ContextRef (*DPCTLQueue_GetContext)(QueueRef);
  void (*DPCTLContext_Delete)(ContextRef);
  void (*DPCTLQueue_Wait)(QueueRef);
  EventRef (*DPCTLQueue_Memcpy)(QueueRef, void*, const void*, size_t);
  EventRef (*DPCTLQueue_SubmitRange)(KernelRef, QueueRef, void**, const int*, size_t, const size_t*, size_t,
                                     const EventRef*, size_t);
  void* (*DPCTLmalloc_device)(size_t, QueueRef);
  void* (*DPCTLmalloc_host)(size_t, QueueRef);
  void* (*DPCTLmalloc_shared)(size_t, QueueRef);
  void (*DPCTLfree_with_queue)(void*, QueueRef);
  void (*DPCTLEvent_Wait)(EventRef);
  void (*DPCTLEvent_Delete)(EventRef);
  uint64_t (*DPCTLEvent_GetProfilingInfoStart)(EventRef);
  uint64_t (*DPCTLEvent_GetProfilingInfoEnd)(EventRef);
  KernelBundleRef (*DPCTLKernelBundle_CreateFromOCLSource)(ContextRef, DeviceRef, const char*, const char*);
  KernelRef (*DPCTLKernelBundle_GetKernel)(KernelBundleRef, const char*);
  void (*DPCTLKernelBundle_Delete)(KernelBundleRef);
  void (*DPCTLKernel_Delete)(KernelRef);
};

// The library: $XFERLAB_SYCL_LIBRARY, else dpctl's in the Python environment the probe was
// installed into (<bin>/../lib/python3*/site-packages/dpctl/), else libDPCTLSyclInterface.so on
// the loader's search path.
std::string sycl_library();
// Loads it once; "" when loaded, else why not (the reason NotAvailable carries).
std::string load_sycl();
const Api& sycl_api();

}  // namespace sycl
}  // namespace xferlab
