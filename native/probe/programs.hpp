// How the OpenCL programs of one probe run were made (issue 26): every clCreateProgramWithSource
// (and, later, clCreateProgramWithBinary / clCreateProgramWithIL) is counted here, and main.cpp
// prints one "program" record at the end of each command that may open an OpenCL device, so that
// a test can prove that copies build no program at all and that a precompiled program is used as
// given. "made": "none" (no program), "source", "binary" or "il"; several kinds: the first made.
#pragma once
#include <string>

#include "json.hpp"

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

}  // namespace xferlab
