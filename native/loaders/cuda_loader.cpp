// See cuda_loader.hpp: the CUDA driver API resolved with dlopen/dlsym, written from NVIDIA's public
// CUDA Driver API reference (https://docs.nvidia.com/cuda/cuda-driver-api/).
#include "cuda_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <mutex>
#include <string>

namespace xferlab {
namespace cuda {

namespace {

Driver g_driver{};
std::string g_reason;

// Descriptions for the codes the loader itself can meet before (or without) cuGetErrorString.
const char* builtin_text(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA driver is a stub library";
    case CUDA_ERROR_INSUFFICIENT_DRIVER: return "CUDA driver version is insufficient";
    case CUDA_ERROR_DEVICE_UNAVAILABLE: return "CUDA-capable device(s) is/are busy or unavailable";
    case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
    case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
    case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: return "peer access is not supported between these two devices";
    case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: return "peer access is already enabled";
    case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: return "peer access has not been enabled";
    case CUDA_ERROR_INVALID_PTX: return "a PTX JIT compilation failed";
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return "the provided PTX was compiled with an unsupported toolchain";
    case CUDA_ERROR_OPERATING_SYSTEM: return "OS call failed or operation not supported on this OS";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    case CUDA_ERROR_UNKNOWN: return "unknown error";
    default: return nullptr;
  }
}

// dlsym into a typed slot. Converting the object pointer dlsym returns to a function pointer is
// what POSIX requires dlsym's users to do.
template <class F>
bool resolve(void* library, F& slot, const char* name) {
  void* symbol = dlsym(library, name);
  slot = reinterpret_cast<F>(symbol);
  return symbol != nullptr;
}

// The first of `names` that the library exports, or the reason none is. No entry falls back to an
// unversioned name: those are the pre-3.2 ABI (32-bit sizes), not the signatures declared here.
template <class F>
std::string resolve_any(void* library, F& slot, std::initializer_list<const char*> names, bool required) {
  for (const char* name : names)
    if (resolve(library, slot, name)) return "";
  if (!required) return "";
  std::string list;
  for (const char* name : names) list += (list.empty() ? "" : " or ") + std::string(name);
  return cuda_library() + " does not export " + list + " (a CUDA driver older than this probe supports?)";
}

std::string load_once() {
  const std::string path = cuda_library();
  dlerror();
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    return why ? std::string(why) : path + ": dlopen failed";
  }
  // The library stays open for the life of the process: the driver does not support being unloaded.
  Driver& d = g_driver;
  const std::string reasons[] = {
      resolve_any(library, d.cuInit, {"cuInit"}, true),
      resolve_any(library, d.cuDriverGetVersion, {"cuDriverGetVersion"}, true),
      resolve_any(library, d.cuGetErrorString, {"cuGetErrorString"}, false),
      resolve_any(library, d.cuGetErrorName, {"cuGetErrorName"}, false),
      resolve_any(library, d.cuDeviceGetCount, {"cuDeviceGetCount"}, true),
      resolve_any(library, d.cuDeviceGet, {"cuDeviceGet"}, true),
      resolve_any(library, d.cuDeviceGetName, {"cuDeviceGetName"}, true),
      resolve_any(library, d.cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}, true),
      resolve_any(library, d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, true),
      resolve_any(library, d.cuCtxCreate, {"cuCtxCreate_v2"}, true),
      resolve_any(library, d.cuCtxDestroy, {"cuCtxDestroy_v2"}, true),
      resolve_any(library, d.cuCtxSynchronize, {"cuCtxSynchronize"}, true),
      resolve_any(library, d.cuCtxSetCurrent, {"cuCtxSetCurrent"}, false),
      resolve_any(library, d.cuDeviceCanAccessPeer, {"cuDeviceCanAccessPeer"}, false),
      resolve_any(library, d.cuCtxEnablePeerAccess, {"cuCtxEnablePeerAccess"}, false),
      resolve_any(library, d.cuMemcpyPeerAsync, {"cuMemcpyPeerAsync"}, false),
      resolve_any(library, d.cuMemGetInfo, {"cuMemGetInfo_v2"}, true),
      resolve_any(library, d.cuMemAlloc, {"cuMemAlloc_v2"}, true),
      resolve_any(library, d.cuMemFree, {"cuMemFree_v2"}, true),
      resolve_any(library, d.cuMemHostAlloc, {"cuMemHostAlloc"}, true),
      resolve_any(library, d.cuMemFreeHost, {"cuMemFreeHost"}, true),
      resolve_any(library, d.cuMemAllocManaged, {"cuMemAllocManaged"}, false),
      resolve_any(library, d.cuMemPrefetchAsync, {"cuMemPrefetchAsync"}, false),
      resolve_any(library, d.cuMemAdvise, {"cuMemAdvise"}, false),
      resolve_any(library, d.cuMemcpy, {"cuMemcpy"}, true),
      resolve_any(library, d.cuMemcpyAsync, {"cuMemcpyAsync"}, true),
      resolve_any(library, d.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, true),
      resolve_any(library, d.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, true),
      resolve_any(library, d.cuMemcpyDtoD, {"cuMemcpyDtoD_v2"}, true),
      resolve_any(library, d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, true),
      resolve_any(library, d.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"}, true),
      resolve_any(library, d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, true),
      resolve_any(library, d.cuModuleLoadData, {"cuModuleLoadData"}, true),
      resolve_any(library, d.cuModuleUnload, {"cuModuleUnload"}, true),
      resolve_any(library, d.cuModuleGetFunction, {"cuModuleGetFunction"}, true),
      resolve_any(library, d.cuLaunchKernel, {"cuLaunchKernel"}, true),
      resolve_any(library, d.cuStreamCreate, {"cuStreamCreate"}, true),
      resolve_any(library, d.cuStreamSynchronize, {"cuStreamSynchronize"}, true),
      resolve_any(library, d.cuStreamDestroy, {"cuStreamDestroy_v2"}, true),
      resolve_any(library, d.cuEventCreate, {"cuEventCreate"}, true),
      resolve_any(library, d.cuEventRecord, {"cuEventRecord"}, true),
      resolve_any(library, d.cuEventSynchronize, {"cuEventSynchronize"}, true),
      resolve_any(library, d.cuEventElapsedTime, {"cuEventElapsedTime"}, true),
      resolve_any(library, d.cuEventDestroy, {"cuEventDestroy_v2"}, true),
  };
  for (const auto& reason : reasons)
    if (!reason.empty()) return reason;

  const CUresult init = d.cuInit(0);
  if (init != CUDA_SUCCESS) {
    const char* text = nullptr;
    if (d.cuGetErrorString && d.cuGetErrorString(init, &text) != CUDA_SUCCESS) text = nullptr;
    if (!text) text = builtin_text(init);
    return "cuInit returned " + std::to_string(init) + " (" + (text ? text : "no description") + ")";
  }
  return "";
}

}  // namespace

std::string cuda_library() {
  const char* path = std::getenv("XFERLAB_CUDA_LIBRARY");
  return path && *path ? std::string(path) : std::string("libcuda.so.1");
}

std::string load_cuda() {
  static std::once_flag once;  // loaded once, whichever thread comes first
  std::call_once(once, [] {
    g_reason = load_once();
  });
  return g_reason;
}

const Driver& cuda_driver() { return g_driver; }

std::string cuda_peer_missing() {
  const Driver& d = g_driver;
  if (!d.cuCtxSetCurrent) return "cuCtxSetCurrent";
  if (!d.cuDeviceCanAccessPeer) return "cuDeviceCanAccessPeer";
  if (!d.cuCtxEnablePeerAccess) return "cuCtxEnablePeerAccess";
  if (!d.cuMemcpyPeerAsync) return "cuMemcpyPeerAsync";
  return "";
}

std::string cuda_error_text(CUresult result) {
  const char* text = nullptr;
  const char* name = nullptr;
  if (g_driver.cuGetErrorString && g_driver.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  if (g_driver.cuGetErrorName && g_driver.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (!text) text = builtin_text(result);
  std::string out = text ? text : "unrecognised error";
  out += " (";
  if (name) out += std::string(name) + " = ";
  out += std::to_string(result) + ")";
  return out;
}

void cuda_check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) throw std::runtime_error(std::string(call) + ": " + cuda_error_text(result));
}

}  // namespace cuda
}  // namespace xferlab
