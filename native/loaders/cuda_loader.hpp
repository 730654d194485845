// The CUDA driver API, resolved from libcuda.so.1 with dlopen/dlsym at run time (in the manner of
// Blender Cycles' CUEW): no CUDA toolkit or header is needed to build xferlab.
//
// Every type, constant and signature below was written for xferlab from NVIDIA's public CUDA Driver
// API reference (https://docs.nvidia.com/cuda/cuda-driver-api/), chapters "Data types used by CUDA
// driver" (CUresult, CUdevice_attribute, the CU_MEMHOSTALLOC_*, CU_MEM_ATTACH_*, CU_CTX_*,
// CU_STREAM_* and CU_EVENT_* flags, CU_DEVICE_CPU) and the per-function pages of "Device
// Management", "Context Management", "Peer Context Memory Access" (cuDeviceCanAccessPeer,
// cuCtxEnablePeerAccess and its CUDA_ERROR_PEER_ACCESS_* codes), "Module Management", "Memory
// Management" (cuMemcpyPeerAsync among them), "Unified Addressing" (cuMemAdvise and
// CUmem_advise among them), "Stream Management", "Event Management", "Execution Control" and
// "Error Handling".
// Only what the probe uses is declared. The driver keeps exporting each versioned symbol with the
// signature it was introduced with, so the entry points named here (the `_v2` ones where the driver
// exports them) keep working with newer drivers whose headers map the plain names elsewhere.
#pragma once
#include <cstddef>
#include <string>

namespace xferlab {
namespace cuda {

// Opaque handles and scalar types (Data types used by CUDA driver).
using CUresult = int;                       // enum cudaError_enum; CUDA_SUCCESS is 0
using CUdevice = int;                       // a device ordinal as the driver sees it
using CUdeviceptr = unsigned long long;     // a device (or unified) virtual address
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUdevice_attribute = int;             // enum CUdevice_attribute_enum

// CUresult values the probe names itself (the driver's cuGetErrorString describes the others).
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
constexpr CUresult CUDA_ERROR_INSUFFICIENT_DRIVER = 35;
constexpr CUresult CUDA_ERROR_DEVICE_UNAVAILABLE = 46;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
constexpr CUresult CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_OPERATING_SYSTEM = 304;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;  // cuCtxEnablePeerAccess, a second time
constexpr CUresult CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
constexpr CUresult CUDA_ERROR_UNKNOWN = 999;

// CUdevice_attribute values used by describe() and supports().
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;                 // kHz
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_INTEGRATED = 18;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_TCC_DRIVER = 35;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;          // kHz
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;    // bits
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;              // bytes
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 88;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89;

// Flags.
constexpr unsigned CU_CTX_SCHED_SPIN = 0x01;          // cuCtxCreate: spin while waiting for the GPU
constexpr unsigned CU_CTX_MAP_HOST = 0x08;            // cuCtxCreate: allow mapped pinned allocations
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x01;   // cuMemHostAlloc: pinned for every context
constexpr unsigned CU_MEMHOSTALLOC_DEVICEMAP = 0x02;  // cuMemHostAlloc: mapped into the device's space
constexpr unsigned CU_MEM_ATTACH_GLOBAL = 0x1;        // cuMemAllocManaged: any stream, any device
constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;      // cuStreamCreate: no implicit sync with stream 0
constexpr unsigned CU_EVENT_DEFAULT = 0x0;            // cuEventCreate: timing enabled
constexpr CUdevice CU_DEVICE_CPU = -1;                // cuMemPrefetchAsync, cuMemAdvise: the host as the processor

// CUmem_advise (cuMemAdvise's advice, CUDA 8.0+). READ_MOSTLY ignores the device argument;
// PREFERRED_LOCATION and ACCESSED_BY take a GPU (one with concurrentManagedAccess) or CU_DEVICE_CPU.
using CUmem_advise = int;                              // enum CUmem_advise_enum
constexpr CUmem_advise CU_MEM_ADVISE_SET_READ_MOSTLY = 1;
constexpr CUmem_advise CU_MEM_ADVISE_UNSET_READ_MOSTLY = 2;
constexpr CUmem_advise CU_MEM_ADVISE_SET_PREFERRED_LOCATION = 3;
constexpr CUmem_advise CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 4;
constexpr CUmem_advise CU_MEM_ADVISE_SET_ACCESSED_BY = 5;
constexpr CUmem_advise CU_MEM_ADVISE_UNSET_ACCESSED_BY = 6;

// The entry points, each with the exact signature of the symbol it is resolved from.
struct Driver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);  // optional (CUDA 6.0+)
  CUresult (*cuGetErrorName)(CUresult error, const char** text);    // optional (CUDA 6.0+)
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device);                       // _v2
  CUresult (*cuDeviceGetAttribute)(int* value, CUdevice_attribute attribute, CUdevice device);
  CUresult (*cuCtxCreate)(CUcontext* context, unsigned flags, CUdevice device);       // _v2
  CUresult (*cuCtxDestroy)(CUcontext context);                                        // _v2
  CUresult (*cuCtxSynchronize)();
  // Peer to peer ("Peer Context Memory Access", CUDA 4.0+), optional: kernels --mode d2d between two
  // devices needs all four (cuda_peer_missing() names the first one absent).
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuDeviceCanAccessPeer)(int* can_access, CUdevice device, CUdevice peer);
  CUresult (*cuCtxEnablePeerAccess)(CUcontext peer, unsigned flags);  // flags: 0
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context,
                                size_t bytes, CUstream stream);
  CUresult (*cuMemGetInfo)(size_t* free_bytes, size_t* total_bytes);                  // _v2
  CUresult (*cuMemAlloc)(CUdeviceptr* pointer, size_t bytes);                         // _v2
  CUresult (*cuMemFree)(CUdeviceptr pointer);                                         // _v2
  CUresult (*cuMemHostAlloc)(void** pointer, size_t bytes, unsigned flags);
  CUresult (*cuMemFreeHost)(void* pointer);
  CUresult (*cuMemAllocManaged)(CUdeviceptr* pointer, size_t bytes, unsigned flags);  // optional (6.0+)
  CUresult (*cuMemPrefetchAsync)(CUdeviceptr pointer, size_t bytes, CUdevice to,
                                 CUstream stream);                                    // optional (8.0+)
  // optional (8.0+): the original symbol; CUDA 12.2's cuMemAdvise_v2 takes a CUmemLocation instead.
  CUresult (*cuMemAdvise)(CUdeviceptr pointer, size_t bytes, CUmem_advise advice, CUdevice device);
  CUresult (*cuMemcpy)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);               // unified addressing
  CUresult (*cuMemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes);           // _v2
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes);                 // _v2
  CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);           // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);        // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);  // _v2
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                             CUstream stream, void** parameters, void** extra);
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamDestroy)(CUstream stream);                                       // _v2
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float* milliseconds, CUevent start, CUevent end);
  CUresult (*cuEventDestroy)(CUevent event);                                          // _v2
};

// The library dlopen()ed: $XFERLAB_CUDA_LIBRARY when set and not empty, else "libcuda.so.1".
std::string cuda_library();

// Opens the library, resolves every entry point and calls cuInit(0), once per process (later calls
// return the first answer). Returns "" on success, else why the driver cannot be used, e.g.
// "libcuda.so.1: cannot open shared object file: No such file or directory" or
// "cuInit returned 100 (no CUDA-capable device is detected)". Never aborts, never throws.
std::string load_cuda();

// The resolved entry points; only valid after load_cuda() returned "".
const Driver& cuda_driver();

// "" when the driver exports every peer-to-peer entry point above, else the first missing one's name.
std::string cuda_peer_missing();

// "out of memory (CUDA_ERROR_OUT_OF_MEMORY = 2)": the driver's own words when it can give them.
std::string cuda_error_text(CUresult result);

// Throws std::runtime_error("<call>: <cuda_error_text>") unless result is CUDA_SUCCESS.
void cuda_check(CUresult result, const char* call);

}  // namespace cuda
}  // namespace xferlab
