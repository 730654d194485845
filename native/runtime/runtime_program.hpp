// The offload runtime's OpenCL program (issue 26): its source, the four op headers as CMakeLists.txt
// embeds them (kKernelSource, kernel xf_window), and the build options the OpenCL backend tries in turn.
// Shared by the backend (opencl_backend.cpp) and `xferlab-probe programs` (`xferlab kernels build`),
// which writes the binary of the first option set that builds as DIR/runtime-<hash>.bin.
#pragma once

#include "kernel_source.inc"  // kKernelSource

namespace xferlab::runtime {

// OpenCL C 1.2 (what ops/xf_portable.h is written for); a compiler that refuses the option: none.
inline constexpr const char* kRuntimeOptions[] = {"-cl-std=CL1.2", ""};

}  // namespace xferlab::runtime
