#include "opencl_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace xferlab::cl {

namespace {
template <class F>
bool resolve(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  return out != nullptr;
}
}  // namespace

std::string load(Api& api) {
  // The library is opened once, by whichever thread comes first (std::call_once: the runtime's
  // threads and the probe may all call load()).
  static void* lib = nullptr;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* override_path = std::getenv("XFERLAB_OPENCL_LIBRARY");
    const char* path = override_path && *override_path ? override_path : "libOpenCL.so.1";
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      failure = std::string("cannot load the OpenCL library ") + path + ": " + (why ? why : "unknown reason");
    }
  });
  if (!lib) return failure;
  bool ok = true;
#define XFERLAB_CL(name) ok = resolve(lib, "cl" #name, api.name) && ok
  XFERLAB_CL(GetPlatformIDs);
  XFERLAB_CL(GetPlatformInfo);
  XFERLAB_CL(GetDeviceIDs);
  XFERLAB_CL(GetDeviceInfo);
  XFERLAB_CL(CreateContext);
  XFERLAB_CL(ReleaseContext);
  XFERLAB_CL(CreateCommandQueue);
  XFERLAB_CL(ReleaseCommandQueue);
  XFERLAB_CL(CreateBuffer);
  XFERLAB_CL(ReleaseMemObject);
  XFERLAB_CL(EnqueueWriteBuffer);
  XFERLAB_CL(EnqueueReadBuffer);
  XFERLAB_CL(EnqueueCopyBuffer);
  XFERLAB_CL(EnqueueMapBuffer);
  XFERLAB_CL(EnqueueUnmapMemObject);
  XFERLAB_CL(CreateProgramWithSource);
  XFERLAB_CL(BuildProgram);
  XFERLAB_CL(GetProgramBuildInfo);
  XFERLAB_CL(ReleaseProgram);
  XFERLAB_CL(CreateProgramWithBinary);
  XFERLAB_CL(GetProgramInfo);
  XFERLAB_CL(CreateKernel);
  XFERLAB_CL(ReleaseKernel);
  XFERLAB_CL(SetKernelArg);
  XFERLAB_CL(GetKernelWorkGroupInfo);
  XFERLAB_CL(EnqueueNDRangeKernel);
  XFERLAB_CL(Flush);
  XFERLAB_CL(Finish);
  XFERLAB_CL(WaitForEvents);
  XFERLAB_CL(GetEventProfilingInfo);
  XFERLAB_CL(ReleaseEvent);
#undef XFERLAB_CL
  if (!ok) return "the OpenCL library lacks OpenCL 1.2 entry points";
  // OpenCL 2.0: optional.
  resolve(lib, "clCreateCommandQueueWithProperties", api.CreateCommandQueueWithProperties);
  resolve(lib, "clSetKernelArgSVMPointer", api.SetKernelArgSVMPointer);
  resolve(lib, "clSVMAlloc", api.SVMAlloc);
  resolve(lib, "clSVMFree", api.SVMFree);
  resolve(lib, "clEnqueueSVMMemcpy", api.EnqueueSVMMemcpy);
  resolve(lib, "clEnqueueSVMMap", api.EnqueueSVMMap);
  resolve(lib, "clEnqueueSVMUnmap", api.EnqueueSVMUnmap);
  resolve(lib, "clCreateProgramWithIL", api.CreateProgramWithIL);  // OpenCL 2.1
  return "";
}

std::string error_name(cl_int code) {
  static const struct {
    cl_int code;
    const char* name;
  } names[] = {
      {0, "CL_SUCCESS"}, {-1, "CL_DEVICE_NOT_FOUND"}, {-2, "CL_DEVICE_NOT_AVAILABLE"},
      {-3, "CL_COMPILER_NOT_AVAILABLE"}, {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"}, {-5, "CL_OUT_OF_RESOURCES"},
      {-6, "CL_OUT_OF_HOST_MEMORY"}, {-11, "CL_BUILD_PROGRAM_FAILURE"}, {-16, "CL_LINKER_NOT_AVAILABLE"},
      {-17, "CL_LINK_PROGRAM_FAILURE"}, {-42, "CL_INVALID_BINARY"},
      {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"}, {-30, "CL_INVALID_VALUE"},
      {-33, "CL_INVALID_DEVICE"}, {-34, "CL_INVALID_CONTEXT"}, {-36, "CL_INVALID_COMMAND_QUEUE"},
      {-38, "CL_INVALID_MEM_OBJECT"}, {-43, "CL_INVALID_BUILD_OPTIONS"}, {-44, "CL_INVALID_PROGRAM"},
      {-45, "CL_INVALID_PROGRAM_EXECUTABLE"}, {-46, "CL_INVALID_KERNEL_NAME"}, {-48, "CL_INVALID_KERNEL"},
      {-49, "CL_INVALID_ARG_INDEX"}, {-50, "CL_INVALID_ARG_VALUE"}, {-51, "CL_INVALID_ARG_SIZE"},
      {-52, "CL_INVALID_KERNEL_ARGS"}, {-54, "CL_INVALID_WORK_GROUP_SIZE"}, {-55, "CL_INVALID_WORK_ITEM_SIZE"},
      {-57, "CL_INVALID_EVENT_WAIT_LIST"}, {-58, "CL_INVALID_EVENT"}, {-59, "CL_INVALID_OPERATION"},
      {-61, "CL_INVALID_BUFFER_SIZE"}, {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  for (auto& n : names)
    if (n.code == code) return std::string(n.name) + " (" + std::to_string(code) + ")";
  return "OpenCL error " + std::to_string(code);
}

std::vector<std::pair<cl_platform_id, cl_device_id>> all_devices(const Api& api, std::string& why) {
  std::vector<std::pair<cl_platform_id, cl_device_id>> devices;
  cl_uint platforms = 0;
  cl_int err = api.GetPlatformIDs(0, nullptr, &platforms);
  if (err != CL_SUCCESS || platforms == 0) {
    why = "no OpenCL platform is installed (" + error_name(err) + "); install an ICD such as pocl-opencl-icd";
    return devices;
  }
  std::vector<cl_platform_id> ids(platforms);
  api.GetPlatformIDs(platforms, ids.data(), nullptr);
  for (auto p : ids) {
    cl_uint count = 0;
    if (api.GetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS || count == 0) continue;
    std::vector<cl_device_id> found(count);
    api.GetDeviceIDs(p, CL_DEVICE_TYPE_ALL, count, found.data(), nullptr);
    for (auto d : found) devices.emplace_back(p, d);
  }
  if (devices.empty()) why = "the OpenCL platforms have no devices";
  return devices;
}

namespace {
template <class Handle, class Info>
std::string query_text(cl_int (*query)(Handle, Info, size_t, void*, size_t*), Handle handle, Info what) {
  size_t size = 0;
  query(handle, what, 0, nullptr, &size);
  std::string out(size, '\0');
  query(handle, what, size, out.data(), nullptr);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}
}  // namespace

std::string device_text(const Api& api, cl_device_id device, cl_device_info what) {
  return query_text(api.GetDeviceInfo, device, what);
}

std::string platform_text(const Api& api, cl_platform_id platform, cl_platform_info what) {
  return query_text(api.GetPlatformInfo, platform, what);
}

cl_command_queue make_queue(const Api& api, cl_context context, cl_device_id device, bool profiling, cl_int& err) {
  const cl_command_queue_properties flags = profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
  if (api.CreateCommandQueueWithProperties) {
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, flags, 0};
    return api.CreateCommandQueueWithProperties(context, device, props, &err);
  }
  return api.CreateCommandQueue(context, device, flags, &err);
}

std::string build_log(const Api& api, cl_program program, cl_device_id device) {
  size_t size = 0;
  if (api.GetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) return "";
  std::string log(size, '\0');
  api.GetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace xferlab::cl
