// The probe's subcommands. Each prints JSON lines on stdout and returns an exit code:
// 0 success, 2 bad arguments, 1 anything else (as the xferlab CLI does).
#pragma once
#include <memory>
#include <string>

namespace xferlab {

class Args;
class Backend;

int run_clock(int samples);
int run_stream(Args& args);   // stream.cpp
int run_latency(Args& args);  // latency.cpp
int run_loaded(Args& args);   // loaded.cpp: the chase under traffic, per read/write mix
int run_devices(Args& args);   // device.cpp
// device.cpp: the backend --backend names, and the --device it asks for
std::unique_ptr<Backend> open_backend(Args& args, int& device);
int run_transfer(Args& args);  // device.cpp
int run_launch(Args& args);    // launch.cpp
int run_chunks(Args& args);    // device.cpp
int run_cuda_ptx(Args& args);  // cuda_ptx.cpp: checks the embedded CUDA PTX (no GPU needed)
int run_collab(Args& args);    // collab.cpp: CHAI-style CPU-device collaboration, D and U versions
int run_kernels(Args& args);   // kernels.cpp: device STREAM, scaling, kernels on host memory, faults, alignment, SpMV
int run_network(Args& args);   // network.cpp: MPI point-to-point and collectives (OSU definitions), run by every rank
int run_deceval(Args& args);   // deceval.cpp: seed 000's DecEval for real: zlib decompression feeding pi on OpenCL
// deceval.cpp: the build options of its kernel (a CPU device's blocked loop; K evaluations per element)
std::string deceval_options(bool blocked, int evaluations);

}  // namespace xferlab
