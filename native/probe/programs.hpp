// How the OpenCL programs of one probe run are made (issue 26): the probe's side of
// native/loaders/opencl_programs.hpp, which the offload runtime shares. Every program comes from
// make_program(): from the embedded source (src/xferlab/kernels/*.cl, generated/probe_programs.inc),
// or, with --program FILE|DIR, from a binary or SPIR-V. One plan and one count per probe run: main.cpp
// prints one "program" record at the end of each command that may open an OpenCL device, so that a test
// can prove that copies build no program at all and that a precompiled program is used as given.
// "made": "none" (no program), "source", "binary" or "il"; several kinds: the first made.
#pragma once
#include <string>

#include "../loaders/opencl_programs.hpp"
#include "args.hpp"
#include "json.hpp"
#include "probe_programs.inc"

namespace xferlab {

using cl::kProgramAllowed;
using cl::no_compiler;
using cl::program_binary;
using cl::program_file;
using cl::ProgramCount;
using cl::ProgramPlan;

inline ProgramCount& program_count() {
  static ProgramCount count;
  return count;
}

inline void emit_program_record(const std::string& probe) {
  const ProgramCount& c = program_count();
  JsonLine()
      .str("probe", probe)
      .str("record", "program")
      .str("made", c.made())
      .integer("source_builds", c.source)
      .integer("binary_loads", c.binary)
      .integer("il_loads", c.il)
      .emit();
}

inline ProgramPlan& program_plan() {
  static ProgramPlan plan;
  return plan;
}

// Declares --program on a command that builds programs; checks that the path exists.
inline void read_program_option(Args& args) {
  if (!args.given("program")) {
    args.text("program", "");
    return;
  }
  try {
    program_plan() = cl::program_plan_for(args.text("program", ""));
  } catch (const cl::ProgramRefused& error) {
    throw BadArgument(error.what());
  }
  if (program_plan().path.empty())
    throw BadArgument(std::string("--program '' does not exist; ") + kProgramAllowed);
}

// cl::make_program with this run's plan and count; what the user can fix is a BadArgument (exit 2).
inline cl::cl_program make_program(const cl::Api& api, cl::cl_context context, cl::cl_device_id device,
                                   const std::string& name, const char* source, const std::string& options,
                                   cl::cl_int& err, std::string& log, bool one_of_several = false) {
  try {
    return cl::make_program(api, context, device, program_plan(), program_count(), name, source, options, err, log,
                            one_of_several);
  } catch (const cl::ProgramRefused& error) {
    throw BadArgument(error.what());
  }
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
