// How an OpenCL program is made, for the probe (native/probe/programs.hpp) and the offload runtime
// (native/runtime/opencl_backend.cpp) alike (issue 26): one make_program() builds a program from its
// OpenCL C source, or, with --program FILE|DIR, loads it from a binary (clCreateProgramWithBinary) or
// SPIR-V (clCreateProgramWithIL, where the device reports an IL version). A DIR is what `xferlab
// kernels build` (`xferlab-probe programs`) writes: one binary per program and build options, named by
// program_file(), and manifest.json naming the device they were built for. Each creation is counted
// (ProgramCount), so a run can say that it built nothing from source.
//
// What the user can fix (a missing path or binary, a binary for another device, a device that cannot
// build from source) throws ProgramRefused, a std::invalid_argument: the probe turns it into its
// BadArgument (one line, exit 2), the runtime's Python binding into ValueError (BadValue, exit 2).
#pragma once
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "../probe/json.hpp"
#include "opencl_loader.hpp"

namespace xferlab::cl {

struct ProgramRefused : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// How the programs of one run were made.
struct ProgramCount {
  int source = 0;  // clCreateProgramWithSource calls
  int binary = 0;  // clCreateProgramWithBinary calls
  int il = 0;      // clCreateProgramWithIL calls
  std::string first;
  // Called at each creation: `how` is "source", "binary" or "il".
  void add(const std::string& how) {
    if (how == "source") ++source;
    else if (how == "binary") ++binary;
    else ++il;
    if (first.empty()) first = how;
  }
  // "none" (no program), "source", "binary" or "il"; several kinds: the first made.
  std::string made() const { return first.empty() ? "none" : first; }
};

// Where a run's programs come from: --program's FILE or DIR, or "" (the sources).
struct ProgramPlan {
  std::string path;
  bool dir = false;
  bool checked = false;  // the manifest's device was compared with the device
};

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

// --program `path` ("" for none): it must exist, and a DIR must hold a manifest.json.
inline ProgramPlan program_plan_for(const std::string& path) {
  ProgramPlan plan;
  plan.path = path;
  if (path.empty()) return plan;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw ProgramRefused("--program '" + path + "' does not exist; " + kProgramAllowed);
  plan.dir = S_ISDIR(st.st_mode);
  std::string text;
  if (plan.dir && !read_file(manifest_of(plan), text))
    throw ProgramRefused("--program '" + path + "' has no manifest.json; " + kProgramAllowed);
  return plan;
}

// The file of program `name` built with `options` in a DIR: the name and the options' FNV-1a hash.
inline std::string program_file(const std::string& name, const std::string& options) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64: offset basis 0xcbf29ce484222325, prime 0x100000001b3
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
inline void check_manifest(const Api& api, cl_device_id device, ProgramPlan& plan) {
  if (plan.checked) return;
  plan.checked = true;
  std::string text;
  if (!read_file(manifest_of(plan), text)) return;  // a lone FILE: clCreateProgramWithBinary judges it
  for (auto [key, what] : {std::pair<const char*, cl_device_info>{"device_name", CL_DEVICE_NAME},
                           {"driver_version", CL_DRIVER_VERSION}}) {
    const std::string value = device_text(api, device, what);
    if (text.find(json_pair(key, value)) == std::string::npos)
      throw ProgramRefused("--program '" + plan.path + "' was built for another device: " + manifest_of(plan) +
                           " does not name this device's " + key + " '" + value +
                           "'; build them for it with `xferlab kernels build --device N --out DIR`");
  }
}

inline std::string no_compiler(const std::string& why) {
  return "the device cannot build OpenCL C from source (" + why +
         "): give --program FILE|DIR, binaries built offline (`xferlab kernels build` on a device that can, "
         "or the vendor's compiler: docs/device.md)";
}

// True when `bytes` start with SPIR-V's magic number (0x07230203, little-endian).
inline bool is_spirv(const std::string& bytes) {
  return bytes.size() >= 4 && static_cast<unsigned char>(bytes[0]) == 0x03 &&
         static_cast<unsigned char>(bytes[1]) == 0x02 && static_cast<unsigned char>(bytes[2]) == 0x23 &&
         static_cast<unsigned char>(bytes[3]) == 0x07;
}

// Creates and builds program `name` (its `source`) with `options`: from `plan`'s binary or IL when it
// names one, else from source; `count` counts the creation. A build that fails returns nullptr with
// `err` and `log` set (the caller may try other options); what the user can fix throws ProgramRefused:
// a missing binary, a binary for another device, a device without a compiler. `one_of_several`: the
// caller tries several option sets, and a DIR without this one's binary skips it (nullptr, `log` says
// why) as a failed build would.
inline cl_program make_program(const Api& api, cl_context context, cl_device_id device, ProgramPlan& plan,
                               ProgramCount& count, const std::string& name, const char* source,
                               const std::string& options, cl_int& err, std::string& log,
                               bool one_of_several = false) {
  cl_program program = nullptr;
  std::string file;
  err = CL_SUCCESS;
  if (!plan.path.empty()) {
    check_manifest(api, device, plan);
    file = plan.dir ? plan.path + "/" + program_file(name, options) : plan.path;
    std::string bytes;
    const bool found = read_file(file, bytes);
    if (!found && plan.dir && one_of_several) {
      err = CL_INVALID_BINARY;
      log = "no binary in --program " + plan.path;
      return nullptr;
    }
    if (!found)
      throw ProgramRefused("--program '" + plan.path + "' has no binary for the " + name + " kernels built with '" +
                           options + "' (" + file + "); `xferlab kernels build` writes every one");
    if (is_spirv(bytes)) {
      if (!api.CreateProgramWithIL || device_text(api, device, CL_DEVICE_IL_VERSION).empty())
        throw ProgramRefused("--program '" + file + "' is SPIR-V, and this device takes no intermediate language "
                             "(CL_DEVICE_IL_VERSION is empty); allowed: a binary built for it");
      program = api.CreateProgramWithIL(context, bytes.data(), bytes.size(), &err);
      count.add("il");
    } else {
      const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
      const size_t size = bytes.size();
      cl_int status = CL_SUCCESS;
      program = api.CreateProgramWithBinary(context, 1, &device, &size, &data, &status, &err);
      count.add("binary");
      if (err == CL_SUCCESS && status != CL_SUCCESS) err = status;
    }
    if (err != CL_SUCCESS) {
      if (program) api.ReleaseProgram(program);
      throw ProgramRefused("--program '" + file + "' is not a program for this device ('" +
                           device_text(api, device, CL_DEVICE_NAME) + "'): " + error_name(err) +
                           "; build them for it with `xferlab kernels build --device N --out DIR`");
    }
  } else {
    cl_bool compiler = CL_TRUE;
    api.GetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, nullptr);
    if (!compiler) throw ProgramRefused(no_compiler("CL_DEVICE_COMPILER_AVAILABLE is false"));
    program = api.CreateProgramWithSource(context, 1, &source, nullptr, &err);
    if (err != CL_SUCCESS) throw std::runtime_error("clCreateProgramWithSource: " + error_name(err));
    count.add("source");
  }
  err = api.BuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
  if (err == CL_SUCCESS) return program;
  log = build_log(api, program, device);
  api.ReleaseProgram(program);
  if (err == CL_COMPILER_NOT_AVAILABLE || err == CL_LINKER_NOT_AVAILABLE)
    throw ProgramRefused(no_compiler(error_name(err)));
  if (!file.empty())
    throw ProgramRefused("--program '" + file + "' does not build for this device: " + error_name(err) + " " +
                         log.substr(0, 200));
  return nullptr;
}

// The binary of a program built for one device (CL_PROGRAM_BINARIES).
inline std::string program_binary(const Api& api, cl_program program) {
  size_t size = 0;
  cl_int err = api.GetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
  if (err != CL_SUCCESS) throw std::runtime_error("clGetProgramInfo(CL_PROGRAM_BINARY_SIZES): " + error_name(err));
  std::string bytes(size, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(bytes.data());
  err = api.GetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr);
  if (err != CL_SUCCESS) throw std::runtime_error("clGetProgramInfo(CL_PROGRAM_BINARIES): " + error_name(err));
  return bytes;
}

}  // namespace xferlab::cl
