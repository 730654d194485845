// Runs one OpenCL kernel through xferlab's run-time OpenCL loader (native/loaders/opencl_loader), so
// the tests of the runtime's OpenCL C operation sets (posit32, enc64) run wherever an ICD is
// installed (PoCL in CI), with no pyopencl. Built by tests/cl_kernel.py.
//
//   cl_kernel_driver SOURCE KERNEL GLOBAL ARG...
//     in:FILE         a read-only buffer holding FILE's bytes
//     out:BYTES:FILE  a write-only buffer of BYTES, written to FILE after the kernel
//     u32:N | i32:N   a scalar argument
// Prints "device: NAME" and "extensions: LIST" on stdout. Exit 0 when the kernel ran, 3 (with
// "no OpenCL: why" on stderr) when there is no OpenCL device, 1 on any other failure.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "opencl_loader.hpp"

using namespace xferlab::cl;

namespace {
// cl.h's cl_mem_flags and CL_DEVICE_EXTENSIONS (OpenCL 3.0), beyond the loader's subset.
constexpr cl_mem_flags WRITE_ONLY = 1 << 1, READ_ONLY = 1 << 2, COPY_HOST_PTR = 1 << 5;
constexpr cl_device_info DEVICE_EXTENSIONS = 0x1030;

[[noreturn]] void fail(const std::string& what, int code = 1) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(code);
}

void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) fail(std::string(what) + ": " + error_name(err));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Output {
  cl_mem mem;
  size_t bytes;
  std::string path;
};
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) fail("usage: cl_kernel_driver SOURCE KERNEL GLOBAL ARG...", 2);
  Api api{};
  std::string why = load(api);
  if (!why.empty()) fail("no OpenCL: " + why, 3);
  auto devices = all_devices(api, why);
  if (devices.empty()) fail("no OpenCL: " + why, 3);
  cl_device_id device = devices.front().second;
  std::printf("device: %s\nextensions: %s\n", device_text(api, device, CL_DEVICE_NAME).c_str(),
              device_text(api, device, DEVICE_EXTENSIONS).c_str());

  cl_int err = CL_SUCCESS;
  cl_context context = api.CreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  cl_command_queue queue = make_queue(api, context, device, false, err);
  check(err, "clCreateCommandQueue");
  std::string source = slurp(argv[1]);
  const char* text = source.c_str();
  size_t length = source.size();
  cl_program program = api.CreateProgramWithSource(context, 1, &text, &length, &err);
  check(err, "clCreateProgramWithSource");
  if (api.BuildProgram(program, 1, &device, "", nullptr, nullptr) != CL_SUCCESS) {
    fail("clBuildProgram failed:\n" + build_log(api, program, device));
  }
  cl_kernel kernel = api.CreateKernel(program, argv[2], &err);
  check(err, "clCreateKernel");

  std::vector<cl_mem> buffers;
  std::vector<Output> outputs;
  for (int i = 4; i < argc; ++i) {
    std::string arg = argv[i];
    cl_uint index = static_cast<cl_uint>(i - 4);
    if (arg.rfind("in:", 0) == 0) {
      std::string bytes = slurp(arg.substr(3));
      cl_mem mem = api.CreateBuffer(context, READ_ONLY | COPY_HOST_PTR, bytes.size(), bytes.data(), &err);
      check(err, "clCreateBuffer (in)");
      buffers.push_back(mem);
      check(api.SetKernelArg(kernel, index, sizeof mem, &mem), "clSetKernelArg");
    } else if (arg.rfind("out:", 0) == 0) {
      size_t colon = arg.find(':', 4);
      if (colon == std::string::npos) fail("out:BYTES:FILE expected, got " + arg, 2);
      size_t bytes = std::stoull(arg.substr(4, colon - 4));
      cl_mem mem = api.CreateBuffer(context, WRITE_ONLY, bytes, nullptr, &err);
      check(err, "clCreateBuffer (out)");
      buffers.push_back(mem);
      outputs.push_back({mem, bytes, arg.substr(colon + 1)});
      check(api.SetKernelArg(kernel, index, sizeof mem, &mem), "clSetKernelArg");
    } else if (arg.rfind("u32:", 0) == 0 || arg.rfind("i32:", 0) == 0) {
      int64_t value = std::stoll(arg.substr(4), nullptr, 0);
      uint32_t word = static_cast<uint32_t>(value);
      check(api.SetKernelArg(kernel, index, sizeof word, &word), "clSetKernelArg");
    } else {
      fail("unknown argument " + arg + " (in:FILE, out:BYTES:FILE, u32:N, i32:N)", 2);
    }
  }
  size_t global = std::stoull(argv[3]);
  check(api.EnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  for (const Output& out : outputs) {
    std::vector<char> data(out.bytes);
    check(api.EnqueueReadBuffer(queue, out.mem, CL_TRUE, 0, out.bytes, data.data(), 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
    std::ofstream file(out.path, std::ios::binary);
    file.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!file) fail("cannot write " + out.path);
  }
  check(api.Finish(queue), "clFinish");
  for (cl_mem mem : buffers) api.ReleaseMemObject(mem);
  api.ReleaseKernel(kernel);
  api.ReleaseProgram(program);
  api.ReleaseCommandQueue(queue);
  api.ReleaseContext(context);
  return 0;
}
