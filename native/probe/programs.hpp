// How the OpenCL programs of one probe run are made (issue 26). Every program comes from
// make_program(): from the embedded source (src/xferlab/kernels/*.cl, generated/probe_programs.inc),
// or, with --program FILE|DIR, from a binary (clCreateProgramWithBinary) or SPIR-V
// (clCreateProgramWithIL, where the device reports an IL version). A DIR is what `xferlab-probe
// programs` (`xferlab kernels build`) writes: one binary per program and build options, named by
// program_file(), and manifest.json naming the device they were built for. Each creation is counted,
// and main.cpp prints one "program" record at the end of each command that may open an OpenCL
// device, so that a test can prove that copies build no program at all and that a precompiled
// program is used as given. "made": "none" (no program), "source", "binary" or "il"; several kinds:
// the first made.
#pragma once
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "../loaders/opencl_loader.hpp"
#include "args.hpp"
#include "json.hpp"
#include "probe_programs.inc"

namespace xferlab {

struct ProgramCount {
  int source = 0;  // clCreateProgramWithSource calls
  int binary = 0;  // clCreateProgramWithBinary calls
  int il = 0;      // clCreateProgramWithIL calls
  std::string first;
};

inline ProgramCount& program_count() {
  static ProgramCount count;
  return count;
}

// Called at each creation: `how` is "source", "binary" or "il".
inline void count_program(const char* how) {
  ProgramCount& c = program_count();
  if (std::string(how) == "source") ++c.source;
  else if (std::string(how) == "binary") ++c.binary;
  else ++c.il;
  if (c.first.empty()) c.first = how;
}

inline void emit_program_record(const std::string& probe) {
  const ProgramCount& c = program_count();
  JsonLine()
      .str("probe", probe)
      .str("record", "program")
      .str("made", c.first.empty() ? "none" : c.first)
      .integer("source_builds", c.source)
      .integer("binary_loads", c.binary)
      .integer("il_loads", c.il)
      .emit();
}

// Where this run's programs come from: --program's FILE or DIR, or "" (the embedded sources).
struct ProgramPlan {
  std::string path;
  bool dir = false;
  bool checked = false;  // the manifest's device was compared with the device
};

inline ProgramPlan& program_plan() {
  static ProgramPlan plan;
  return plan;
}

inline bool read_file(const std::string& path, std::string& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream all;
  all << in.rdbuf();
  bytes = all.str();
  return true;
}

inline std::string manifest_of(const ProgramPlan& plan) {
  if (plan.dir) return plan.path + "/manifest.json";
  const auto slash = plan.path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : plan.path.substr(0, slash)) + "/manifest.json";
}

constexpr const char* kProgramAllowed =
    "allowed: a DIR written by `xferlab kernels build --device N --out DIR`, or one program binary FILE";

// Declares --program on a command that builds programs; checks that the path exists.
inline void read_program_option(Args& args) {
  if (!args.given("program")) {
    args.text("program", "");
    return;
  }
  ProgramPlan& plan = program_plan();
  plan.path = args.text("program", "");
  struct stat st {};
  if (plan.path.empty() || stat(plan.path.c_str(), &st) != 0)
    throw BadArgument("--program '" + plan.path + "' does not exist; " + kProgramAllowed);
  plan.dir = S_ISDIR(st.st_mode);
  std::string text;
  if (plan.dir && !read_file(manifest_of(plan), text))
    throw BadArgument("--program '" + plan.path + "' has no manifest.json; " + kProgramAllowed);
}

// The file of program `name` built with `options` in a DIR: the name and the options' FNV-1a hash.
inline std::string program_file(const std::string& name, const std::string& options) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : options) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return name + "-" + hex + ".bin";
}

// One "key":"value" pair as the manifest writes it (JsonLine's escaping).
inline std::string json_pair(const char* key, const std::string& value) {
  const std::string line = JsonLine().str(key, value).text();
  return line.substr(1, line.size() - 2);
}

// The manifest beside the binaries names the device they were built for: its name and driver
// version must be this device's (a binary for another device is refused in one line).
inline void check_manifest(const cl::Api& api, cl::cl_device_id device) {
  ProgramPlan& plan = program_plan();
  if (plan.checked) return;
  plan.checked = true;
  std::string text;
  if (!read_file(manifest_of(plan), text)) return;  // a lone FILE: clCreateProgramWithBinary judges it
  for (auto [key, what] : {std::pair<const char*, cl::cl_device_info>{"device_name", cl::CL_DEVICE_NAME},
                           {"driver_version", cl::CL_DRIVER_VERSION}}) {
    const std::string value = cl::device_text(api, device, what);
    if (text.find(json_pair(key, value)) == std::string::npos)
      throw BadArgument("--program '" + plan.path + "' was built for another device: " + manifest_of(plan) +
                        " does not name this device's " + key + " '" + value +
                        "'; build them for it with `xferlab kernels build --device N --out DIR`");
  }
}

inline std::string no_compiler(const std::string& why) {
  return "the device cannot build OpenCL C from source (" + why +
         "): give --program FILE|DIR, binaries built offline (`xferlab kernels build` on a device that can, "
         "or the vendor's compiler: docs/device.md)";
}

// Creates and builds program `name` (its embedded `source`) with `options`: from --program's binary
// or IL when given, else from source. A build that fails returns nullptr with `err` and `log` set
// (the caller may try other options); what the user can fix throws BadArgument (exit 2): a missing
// binary, a binary for another device, a device without a compiler. `one_of_several`: the caller
// tries several option sets (collab), and a DIR without this one's binary skips it (nullptr, `log`
// says why) as a failed build would.
inline cl::cl_program make_program(const cl::Api& api, cl::cl_context context, cl::cl_device_id device,
                                   const std::string& name, const char* source, const std::string& options,
                                   cl::cl_int& err, std::string& log, bool one_of_several = false) {
  using namespace cl;
  const ProgramPlan& plan = program_plan();
  cl_program program = nullptr;
  std::string file;
  err = CL_SUCCESS;
  if (!plan.path.empty()) {
    check_manifest(api, device);
    file = plan.dir ? plan.path + "/" + program_file(name, options) : plan.path;
    std::string bytes;
    const bool found = read_file(file, bytes);
    if (!found && plan.dir && one_of_several) {
      err = CL_INVALID_BINARY;
      log = "no binary in --program " + plan.path;
      return nullptr;
    }
    if (!found)
      throw BadArgument("--program '" + plan.path + "' has no binary for the " + name + " kernels built with '" +
                        options + "' (" + file + "); `xferlab kernels build` writes every one");
    const bool il = bytes.size() >= 4 && static_cast<unsigned char>(bytes[0]) == 0x03 &&
                    static_cast<unsigned char>(bytes[1]) == 0x02 && static_cast<unsigned char>(bytes[2]) == 0x23 &&
                    static_cast<unsigned char>(bytes[3]) == 0x07;  // SPIR-V's magic number, little-endian
    if (il) {
      if (!api.CreateProgramWithIL || device_text(api, device, CL_DEVICE_IL_VERSION).empty())
        throw BadArgument("--program '" + file + "' is SPIR-V, and this device takes no intermediate language "
                          "(CL_DEVICE_IL_VERSION is empty); allowed: a binary built for it");
      program = api.CreateProgramWithIL(context, bytes.data(), bytes.size(), &err);
      count_program("il");
    } else {
      const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
      const size_t size = bytes.size();
      cl_int status = CL_SUCCESS;
      program = api.CreateProgramWithBinary(context, 1, &device, &size, &data, &status, &err);
      count_program("binary");
      if (err == CL_SUCCESS && status != CL_SUCCESS) err = status;
    }
    if (err != CL_SUCCESS) {
      if (program) api.ReleaseProgram(program);
      throw BadArgument("--program '" + file + "' is not a program for this device ('" +
                        device_text(api, device, CL_DEVICE_NAME) + "'): " + error_name(err) +
                        "; build them for it with `xferlab kernels build --device N --out DIR`");
    }
  } else {
    cl_bool compiler = CL_TRUE;
    api.GetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, nullptr);
    if (!compiler) throw BadArgument(no_compiler("CL_DEVICE_COMPILER_AVAILABLE is false"));
    program = api.CreateProgramWithSource(context, 1, &source, nullptr, &err);
    if (err != CL_SUCCESS) throw std::runtime_error("clCreateProgramWithSource: " + error_name(err));
    count_program("source");
  }
  err = api.BuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
  if (err == CL_SUCCESS) return program;
  log = build_log(api, program, device);
  api.ReleaseProgram(program);
  if (err == CL_COMPILER_NOT_AVAILABLE || err == CL_LINKER_NOT_AVAILABLE) throw BadArgument(no_compiler(error_name(err)));
  if (!file.empty())
    throw BadArgument("--program '" + file + "' does not build for this device: " + error_name(err) + " " +
                      log.substr(0, 200));
  return nullptr;
}

// The binary of a program built for one device (CL_PROGRAM_BINARIES).
inline std::string program_binary(const cl::Api& api, cl::cl_program program) {
  size_t size = 0;
  cl::cl_int err = api.GetProgramInfo(program, cl::CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
  if (err != cl::CL_SUCCESS) throw std::runtime_error("clGetProgramInfo(CL_PROGRAM_BINARY_SIZES): " + cl::error_name(err));
  std::string bytes(size, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(bytes.data());
  err = api.GetProgramInfo(program, cl::CL_PROGRAM_BINARIES, sizeof data, &data, nullptr);
  if (err != cl::CL_SUCCESS) throw std::runtime_error("clGetProgramInfo(CL_PROGRAM_BINARIES): " + cl::error_name(err));
  return bytes;
}

// A kernel taken from a program: with --program, a FILE that lacks the kernel (another program's
// binary) is the user's input, refused in one line naming --program (found on NVIDIA's OpenCL, where it
// surfaced as clCreateKernel's CL_INVALID_KERNEL_NAME, exit 1).
inline cl::cl_kernel make_kernel(const cl::Api& api, cl::cl_program program, const std::string& kernel) {
  cl::cl_int err = cl::CL_SUCCESS;
  cl::cl_kernel k = api.CreateKernel(program, kernel.c_str(), &err);
  if (err == cl::CL_INVALID_KERNEL_NAME && !program_plan().path.empty())
    throw BadArgument("--program '" + program_plan().path + "' holds no kernel '" + kernel +
                      "': give the DIR that `xferlab kernels build` wrote, or the FILE of this command's program");
  if (err != cl::CL_SUCCESS) throw std::runtime_error("clCreateKernel: " + cl::error_name(err));
  return k;
}

int run_programs(Args& args);  // programs.cpp: `xferlab-probe programs --device N --out DIR`

}  // namespace xferlab
