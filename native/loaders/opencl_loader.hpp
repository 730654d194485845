// The OpenCL API, resolved at run time from the ICD loader (libOpenCL.so.1) with dlopen, in the
// manner of Blender Cycles' CLEW: no OpenCL headers or SDK are needed to build xferlab. The types,
// constants and prototypes below are the subset xferlab uses, written from the Khronos OpenCL 3.0
// API specification (values as in its cl.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xferlab::cl {

using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_ulong = uint64_t;
using cl_bool = cl_uint;
using cl_bitfield = cl_ulong;
using cl_device_type = cl_bitfield;
using cl_mem_flags = cl_bitfield;
using cl_svm_mem_flags = cl_bitfield;
using cl_map_flags = cl_bitfield;
using cl_command_queue_properties = cl_bitfield;
using cl_device_svm_capabilities = cl_bitfield;
using cl_queue_properties = cl_bitfield;
using cl_context_properties = intptr_t;
using cl_platform_info = cl_uint;
using cl_device_info = cl_uint;
using cl_profiling_info = cl_uint;
using cl_program_build_info = cl_uint;
using cl_platform_id = struct _cl_platform_id*;
using cl_device_id = struct _cl_device_id*;
using cl_context = struct _cl_context*;
using cl_command_queue = struct _cl_command_queue*;
using cl_mem = struct _cl_mem*;
using cl_program = struct _cl_program*;
using cl_kernel = struct _cl_kernel*;
using cl_event = struct _cl_event*;

constexpr cl_int CL_SUCCESS = 0;
constexpr cl_bool CL_FALSE = 0, CL_TRUE = 1;
constexpr cl_device_type CL_DEVICE_TYPE_ALL = 0xFFFFFFFF;
constexpr cl_device_type CL_DEVICE_TYPE_CPU = 1 << 1, CL_DEVICE_TYPE_GPU = 1 << 2, CL_DEVICE_TYPE_ACCELERATOR = 1 << 3;
constexpr cl_platform_info CL_PLATFORM_VERSION = 0x0901, CL_PLATFORM_NAME = 0x0902, CL_PLATFORM_VENDOR = 0x0903;
constexpr cl_device_info CL_DEVICE_TYPE = 0x1000, CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002,
                         CL_DEVICE_MAX_MEM_ALLOC_SIZE = 0x1010, CL_DEVICE_MEM_BASE_ADDR_ALIGN = 0x1019,
                         CL_DEVICE_GLOBAL_MEM_SIZE = 0x101F, CL_DEVICE_PROFILING_TIMER_RESOLUTION = 0x1025,
                         CL_DEVICE_GLOBAL_MEM_CACHE_SIZE = 0x101E,
                         CL_DEVICE_QUEUE_PROPERTIES = 0x102A, CL_DEVICE_NAME = 0x102B, CL_DEVICE_VENDOR = 0x102C,
                         CL_DRIVER_VERSION = 0x102D, CL_DEVICE_VERSION = 0x102F,
                         CL_DEVICE_HOST_UNIFIED_MEMORY = 0x1035, CL_DEVICE_OPENCL_C_VERSION = 0x103D,
                         CL_DEVICE_SVM_CAPABILITIES = 0x1053, CL_DEVICE_DOUBLE_FP_CONFIG = 0x1032,
                         CL_DEVICE_EXTENSIONS = 0x1030;
// cl_khr_pci_bus_info (Khronos OpenCL Extension Specification, cl_ext.h): the device's PCI address
constexpr cl_device_info CL_DEVICE_PCI_BUS_INFO_KHR = 0x410F;
struct cl_device_pci_bus_info_khr {
  cl_uint pci_domain, pci_bus, pci_device, pci_function;
};
// OpenCL 3.0 (cl.h: CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES and the
// cl_device_atomic_capabilities bits); a 2.x device answers the atomic query with an error.
using cl_device_atomic_capabilities = cl_bitfield;
constexpr cl_device_info CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004, CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES = 0x1063;
constexpr cl_device_atomic_capabilities CL_DEVICE_ATOMIC_ORDER_RELAXED = 1 << 0, CL_DEVICE_ATOMIC_ORDER_ACQ_REL = 1 << 1,
                                        CL_DEVICE_ATOMIC_ORDER_SEQ_CST = 1 << 2, CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM = 1 << 3,
                                        CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP = 1 << 4, CL_DEVICE_ATOMIC_SCOPE_DEVICE = 1 << 5,
                                        CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES = 1 << 6;
constexpr cl_device_svm_capabilities CL_DEVICE_SVM_COARSE_GRAIN_BUFFER = 1 << 0,
                                     CL_DEVICE_SVM_FINE_GRAIN_BUFFER = 1 << 1,
                                     CL_DEVICE_SVM_FINE_GRAIN_SYSTEM = 1 << 2, CL_DEVICE_SVM_ATOMICS = 1 << 3;
constexpr cl_mem_flags CL_MEM_READ_WRITE = 1 << 0, CL_MEM_USE_HOST_PTR = 1 << 3, CL_MEM_ALLOC_HOST_PTR = 1 << 4,
                       CL_MEM_SVM_FINE_GRAIN_BUFFER = 1 << 10, CL_MEM_SVM_ATOMICS = 1 << 11;
constexpr cl_map_flags CL_MAP_READ = 1 << 0, CL_MAP_WRITE = 1 << 1, CL_MAP_WRITE_INVALIDATE_REGION = 1 << 2;
constexpr cl_command_queue_properties CL_QUEUE_PROFILING_ENABLE = 1 << 1;
constexpr cl_queue_properties CL_QUEUE_PROPERTIES = 0x1093;
constexpr cl_profiling_info CL_PROFILING_COMMAND_START = 0x1282, CL_PROFILING_COMMAND_END = 0x1283;
constexpr cl_program_build_info CL_PROGRAM_BUILD_LOG = 0x1183;
// Programs from binaries and intermediate language (issue 26): clGetProgramInfo's binaries (OpenCL
// 1.0), whether a device has a compiler, and the IL it takes (OpenCL 2.1: clCreateProgramWithIL).
using cl_program_info = cl_uint;
constexpr cl_program_info CL_PROGRAM_BINARY_SIZES = 0x1165, CL_PROGRAM_BINARIES = 0x1166;
constexpr cl_device_info CL_DEVICE_COMPILER_AVAILABLE = 0x1028, CL_DEVICE_IL_VERSION = 0x105B;
constexpr cl_int CL_COMPILER_NOT_AVAILABLE = -3, CL_BUILD_PROGRAM_FAILURE = -11, CL_LINKER_NOT_AVAILABLE = -16,
                 CL_INVALID_BINARY = -42, CL_INVALID_KERNEL_NAME = -46;
// The work-group limits of a kernel and a device (cl.h: cl_kernel_work_group_info, clGetKernelWorkGroupInfo
// of OpenCL 1.0; CL_DEVICE_MAX_WORK_ITEM_SIZES is a size_t per dimension).
using cl_kernel_work_group_info = cl_uint;
constexpr cl_kernel_work_group_info CL_KERNEL_WORK_GROUP_SIZE = 0x11B0;
constexpr cl_device_info CL_DEVICE_MAX_WORK_ITEM_SIZES = 0x1005;

// Every entry point xferlab calls; null until load() succeeds.
struct Api {
  cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id*, cl_uint*);
  cl_int (*GetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void*, size_t*);
  cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id*, cl_uint*);
  cl_int (*GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void*, size_t*);
  cl_context (*CreateContext)(const cl_context_properties*, cl_uint, const cl_device_id*,
                              void (*)(const char*, const void*, size_t, void*), void*, cl_int*);
  cl_int (*ReleaseContext)(cl_context);
  cl_command_queue (*CreateCommandQueueWithProperties)(cl_context, cl_device_id, const cl_queue_properties*, cl_int*);
  cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties, cl_int*);
  cl_int (*ReleaseCommandQueue)(cl_command_queue);
  cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void*, cl_int*);
  cl_int (*ReleaseMemObject)(cl_mem);
  cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*, cl_uint,
                               const cl_event*, cl_event*);
  cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint, const cl_event*,
                              cl_event*);
  cl_int (*EnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event*,
                              cl_event*);
  void* (*EnqueueMapBuffer)(cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t, cl_uint,
                            const cl_event*, cl_event*, cl_int*);
  cl_int (*EnqueueUnmapMemObject)(cl_command_queue, cl_mem, void*, cl_uint, const cl_event*, cl_event*);
  cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char**, const size_t*, cl_int*);
  cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id*, const char*, void (*)(cl_program, void*), void*);
  cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t, void*, size_t*);
  cl_int (*ReleaseProgram)(cl_program);
  cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id*, const size_t*, const unsigned char**,
                                        cl_int*, cl_int*);
  cl_int (*GetProgramInfo)(cl_program, cl_program_info, size_t, void*, size_t*);
  cl_program (*CreateProgramWithIL)(cl_context, const void*, size_t, cl_int*);  // OpenCL 2.1: may be null
  cl_kernel (*CreateKernel)(cl_program, const char*, cl_int*);
  cl_int (*ReleaseKernel)(cl_kernel);
  cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void*);
  cl_int (*GetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void*, size_t*);
  cl_int (*SetKernelArgSVMPointer)(cl_kernel, cl_uint, const void*);
  cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*,
                                 cl_uint, const cl_event*, cl_event*);
  cl_int (*Flush)(cl_command_queue);
  cl_int (*Finish)(cl_command_queue);
  cl_int (*WaitForEvents)(cl_uint, const cl_event*);
  cl_int (*GetEventProfilingInfo)(cl_event, cl_profiling_info, size_t, void*, size_t*);
  cl_int (*ReleaseEvent)(cl_event);
  void* (*SVMAlloc)(cl_context, cl_svm_mem_flags, size_t, cl_uint);
  void (*SVMFree)(cl_context, void*);
  cl_int (*EnqueueSVMMemcpy)(cl_command_queue, cl_bool, void*, const void*, size_t, cl_uint, const cl_event*,
                             cl_event*);
  cl_int (*EnqueueSVMMap)(cl_command_queue, cl_bool, cl_map_flags, void*, size_t, cl_uint, const cl_event*,
                          cl_event*);
  cl_int (*EnqueueSVMUnmap)(cl_command_queue, void*, cl_uint, const cl_event*, cl_event*);
};

// Loads the library (XFERLAB_OPENCL_LIBRARY, else libOpenCL.so.1) once. Returns "" on success or
// why it failed. Entry points of OpenCL 2.0 (SVM, queues with properties) may stay null on 1.x
// loaders; callers check.
std::string load(Api& api);

// A readable name for an error code: "CL_OUT_OF_RESOURCES (-5)".
std::string error_name(cl_int code);

// Every device of every platform, in the order `xferlab-probe devices` numbers them. Empty, with
// `why` set, when there is no platform or no device.
std::vector<std::pair<cl_platform_id, cl_device_id>> all_devices(const Api& api, std::string& why);

// An in-order command queue on `device`, with profiling if asked: clCreateCommandQueueWithProperties
// where the library has it (OpenCL 2.0), else clCreateCommandQueue. `err` gets the call's result.
cl_command_queue make_queue(const Api& api, cl_context context, cl_device_id device, bool profiling, cl_int& err);

// The build log of `program` on `device`, without trailing NULs and newlines (the same text the
// probe and the runtime show when a kernel does not build).
std::string build_log(const Api& api, cl_program program, cl_device_id device);

// A string-valued query of a device or a platform, without the trailing NUL.
std::string device_text(const Api& api, cl_device_id device, cl_device_info what);
std::string platform_text(const Api& api, cl_platform_id platform, cl_platform_info what);

}  // namespace xferlab::cl
