// What the CUDA patterns of `xferlab-probe collab --backend cuda` share: run_collab_cuda
// (collab_cuda.cpp) opens the driver, the device, a context, the pattern's PTX module and a stream,
// then runs the histogram itself or hands the session to PAD (collab_cuda_pad.cpp).
#pragma once

#include <string>

#include "../loaders/cuda_loader.hpp"
#include "collab.hpp"

namespace xferlab::collab {

#define XF_CU(d, fn, ...) cuda::cuda_check((d).fn(__VA_ARGS__), #fn)

struct CudaSession {
  const cuda::Driver& d;
  cuda::CUdevice dev = 0;
  cuda::CUmodule module = nullptr;
  cuda::CUstream stream = nullptr;
  int units = 1;       // multiprocessors: the persistent blocks a kernel is launched with
  std::string name;    // the device's name
};

// PAD on CUDA, D and U (collab_cuda_pad.cpp): its PTX module, the advice --advise names (checked
// before the context exists: "" or why the driver cannot give it) and its repeats.
std::string cuda_pad_ptx();
std::string pad_advice_unavailable(const Options& o, const cuda::Driver& d);
int run_pad_cuda(Options& o, CudaSession& s);

}  // namespace xferlab::collab
