// xferlab measure launch (native/probe/opencl_backend.cpp; sycl_backend.cpp builds the same source through
// the SYCL runtime): empty kernels with 0 to 8 buffer arguments, launched and waited for. Built with no options.
// Embedded in the probe at build time (CMakeLists.txt) and shipped in the wheel.
__kernel void xferlab_empty0() {}
__kernel void xferlab_empty1(__global char* a0) {}
__kernel void xferlab_empty2(__global char* a0, __global char* a1) {}
__kernel void xferlab_empty3(__global char* a0, __global char* a1, __global char* a2) {}
__kernel void xferlab_empty4(__global char* a0, __global char* a1, __global char* a2, __global char* a3) {}
__kernel void xferlab_empty5(__global char* a0, __global char* a1, __global char* a2, __global char* a3, __global char* a4) {}
__kernel void xferlab_empty6(__global char* a0, __global char* a1, __global char* a2, __global char* a3, __global char* a4, __global char* a5) {}
__kernel void xferlab_empty7(__global char* a0, __global char* a1, __global char* a2, __global char* a3, __global char* a4, __global char* a5, __global char* a6) {}
__kernel void xferlab_empty8(__global char* a0, __global char* a1, __global char* a2, __global char* a3, __global char* a4, __global char* a5, __global char* a6, __global char* a7) {}
