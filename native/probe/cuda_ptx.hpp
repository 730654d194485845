// The empty kernels the CUDA backend launches, as PTX text embedded in the probe and JIT-compiled
// by the driver (cuModuleLoadData): xferlab_empty0 .. xferlab_empty8, where xferlab_emptyN takes N
// pointer (.u64) parameters and returns at once. Written by hand for PTX ISA 6.0 (CUDA 9.0 and
// later drivers) and target sm_50, which every driver since CUDA 9 can compile for its GPUs.
#pragma once
#include <string>
#include <vector>

namespace xferlab {

std::string cuda_empty_kernel_ptx();
int cuda_empty_kernel_max_args();                   // 8
std::string cuda_empty_kernel_name(int args);       // "xferlab_empty<args>"
std::vector<std::string> cuda_empty_kernel_names(); // the entries, 0 .. max args

// Checks the text without a GPU: .version/.target/.address_size directives, balanced braces,
// exactly the expected entries, each with its number of .u64 parameters. "" when it is sound,
// else what is wrong.
std::string cuda_ptx_problem(const std::string& ptx);

}  // namespace xferlab
