// See sycl_loader.hpp: dpctl's C API over a SYCL runtime, resolved with dlopen/dlsym.
#include "sycl_loader.hpp"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

namespace xferlab {
namespace sycl {

namespace {

Api g_api{};
std::string g_reason;

template <class F>
bool resolve(void* library, F& slot, const char* name) {
  void* symbol = dlsym(library, name);
  slot = reinterpret_cast<F>(symbol);
  return symbol != nullptr;
}

// dpctl beside the probe: the probe is installed into the package (site-packages/xferlab/bin/) and
// into the environment's bin/; dpctl into site-packages/dpctl/.
std::string beside_probe() {
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  for (const char* where : {"/../../dpctl/", "/../lib/python3*/site-packages/dpctl/"}) {
    const std::string pattern = dir + where + "libDPCTLSyclInterface.so";
    glob_t found{};
    std::string path;
    if (glob(pattern.c_str(), 0, nullptr, &found) == 0 && found.gl_pathc > 0) path = found.gl_pathv[0];
    globfree(&found);
    char real[PATH_MAX] = {};
    if (!path.empty() && realpath(path.c_str(), real)) return real;
  }
  return "";
}

#define XF_SYCL_RESOLVE(name)                                                                    \
  if (!resolve(library, d.name, #name))                                                         \
    return path + " does not export " #name " (a dpctl older than 0.22, which this probe was written for?)";

std::string load_once() {
  const std::string path = sycl_library();
  dlerror();
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    return std::string(why ? why : (path + ": dlopen failed").c_str()) +
           " (install dpctl: pip install 'xferlab[sycl]', or name the library in XFERLAB_SYCL_LIBRARY)";
  }
  Api& d = g_api;  // the library stays open for the life of the process
  XF_SYCL_RESOLVE(DPCTLService_GetDPCPPVersion)
  XF_SYCL_RESOLVE(DPCTLCString_Delete)
  XF_SYCL_RESOLVE(DPCTLDeviceMgr_GetDevices)
  XF_SYCL_RESOLVE(DPCTLDeviceVector_Size)
  XF_SYCL_RESOLVE(DPCTLDeviceVector_GetAt)
  XF_SYCL_RESOLVE(DPCTLDeviceVector_Delete)
  XF_SYCL_RESOLVE(DPCTLDevice_Delete)
  XF_SYCL_RESOLVE(DPCTLDevice_GetName)
  XF_SYCL_RESOLVE(DPCTLDevice_GetVendor)
  XF_SYCL_RESOLVE(DPCTLDevice_GetDriverVersion)
  XF_SYCL_RESOLVE(DPCTLDevice_GetBackend)
  XF_SYCL_RESOLVE(DPCTLDevice_GetDeviceType)
  XF_SYCL_RESOLVE(DPCTLDevice_GetMaxComputeUnits)
  XF_SYCL_RESOLVE(DPCTLDevice_GetGlobalMemSize)
  XF_SYCL_RESOLVE(DPCTLDevice_GetMaxMemAllocSize)
  XF_SYCL_RESOLVE(DPCTLDevice_HasAspect)
  XF_SYCL_RESOLVE(DPCTLDevice_GetPlatform)
  XF_SYCL_RESOLVE(DPCTLPlatform_GetName)
  XF_SYCL_RESOLVE(DPCTLPlatform_GetVersion)
  XF_SYCL_RESOLVE(DPCTLPlatform_Delete)
  XF_SYCL_RESOLVE(DPCTLQueue_CreateForDevice)
  XF_SYCL_RESOLVE(DPCTLQueue_Delete)
  XF_SYCL_RESOLVE(DPCTLQueue_GetContext)
  XF_SYCL_RESOLVE(DPCTLContext_Delete)
  XF_SYCL_RESOLVE(DPCTLQueue_Wait)
  XF_SYCL_RESOLVE(DPCTLQueue_Memcpy)
  XF_SYCL_RESOLVE(DPCTLQueue_SubmitRange)
  XF_SYCL_RESOLVE(DPCTLmalloc_device)
  XF_SYCL_RESOLVE(DPCTLmalloc_host)
  XF_SYCL_RESOLVE(DPCTLmalloc_shared)
  XF_SYCL_RESOLVE(DPCTLfree_with_queue)
  XF_SYCL_RESOLVE(DPCTLEvent_Wait)
  XF_SYCL_RESOLVE(DPCTLEvent_Delete)
  XF_SYCL_RESOLVE(DPCTLEvent_GetProfilingInfoStart)
  XF_SYCL_RESOLVE(DPCTLEvent_GetProfilingInfoEnd)
  XF_SYCL_RESOLVE(DPCTLKernelBundle_CreateFromOCLSource)
  XF_SYCL_RESOLVE(DPCTLKernelBundle_GetKernel)
  XF_SYCL_RESOLVE(DPCTLKernelBundle_Delete)
  XF_SYCL_RESOLVE(DPCTLKernel_Delete)
  return "";
}

}  // namespace

std::string sycl_library() {
  const char* path = std::getenv("XFERLAB_SYCL_LIBRARY");
  if (path && *path) return path;
  const std::string found = beside_probe();
  return found.empty() ? "libDPCTLSyclInterface.so" : found;
}

std::string load_sycl() {
  static std::once_flag once;
  std::call_once(once, [] { g_reason = load_once(); });
  return g_reason;
}

const Api& sycl_api() { return g_api; }

}  // namespace sycl
}  // namespace xferlab
