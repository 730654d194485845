// See cuda_ptx.hpp. The PTX below follows NVIDIA's "Parallel Thread Execution ISA" reference
// (https://docs.nvidia.com/cuda/parallel-thread-execution/): module directives .version, .target and
// .address_size; kernel entries declared with .entry and .param state-space parameters; `ret`.
// Also `xferlab-probe cuda-ptx`, which checks the embedded text and reports it as one JSON line.
#include "cuda_ptx.hpp"

#include <algorithm>
#include <string>

#include "args.hpp"
#include "json.hpp"
#include "probe.hpp"

namespace xferlab {

namespace {

constexpr int kMaxArgs = 8;

// One entry per argument count, so that every launch passes exactly the parameters its kernel
// declares (cuLaunchKernel reads as many kernelParams as the entry has).
const char* const kPtx = R"PTX(//
// xferlab: empty kernels for launch-overhead measurements (hand-written PTX).
// xferlab_emptyN takes N pointer parameters and returns at once.
//
.version 6.0
.target sm_50
.address_size 64

.visible .entry xferlab_empty0()
{
  ret;
}

.visible .entry xferlab_empty1(
  .param .u64 xferlab_empty1_p0
)
{
  ret;
}

.visible .entry xferlab_empty2(
  .param .u64 xferlab_empty2_p0,
  .param .u64 xferlab_empty2_p1
)
{
  ret;
}

.visible .entry xferlab_empty3(
  .param .u64 xferlab_empty3_p0,
  .param .u64 xferlab_empty3_p1,
  .param .u64 xferlab_empty3_p2
)
{
  ret;
}

.visible .entry xferlab_empty4(
  .param .u64 xferlab_empty4_p0,
  .param .u64 xferlab_empty4_p1,
  .param .u64 xferlab_empty4_p2,
  .param .u64 xferlab_empty4_p3
)
{
  ret;
}

.visible .entry xferlab_empty5(
  .param .u64 xferlab_empty5_p0,
  .param .u64 xferlab_empty5_p1,
  .param .u64 xferlab_empty5_p2,
  .param .u64 xferlab_empty5_p3,
  .param .u64 xferlab_empty5_p4
)
{
  ret;
}

.visible .entry xferlab_empty6(
  .param .u64 xferlab_empty6_p0,
  .param .u64 xferlab_empty6_p1,
  .param .u64 xferlab_empty6_p2,
  .param .u64 xferlab_empty6_p3,
  .param .u64 xferlab_empty6_p4,
  .param .u64 xferlab_empty6_p5
)
{
  ret;
}

.visible .entry xferlab_empty7(
  .param .u64 xferlab_empty7_p0,
  .param .u64 xferlab_empty7_p1,
  .param .u64 xferlab_empty7_p2,
  .param .u64 xferlab_empty7_p3,
  .param .u64 xferlab_empty7_p4,
  .param .u64 xferlab_empty7_p5,
  .param .u64 xferlab_empty7_p6
)
{
  ret;
}

.visible .entry xferlab_empty8(
  .param .u64 xferlab_empty8_p0,
  .param .u64 xferlab_empty8_p1,
  .param .u64 xferlab_empty8_p2,
  .param .u64 xferlab_empty8_p3,
  .param .u64 xferlab_empty8_p4,
  .param .u64 xferlab_empty8_p5,
  .param .u64 xferlab_empty8_p6,
  .param .u64 xferlab_empty8_p7
)
{
  ret;
}
)PTX";

size_t count(const std::string& text, const std::string& what, size_t from = 0, size_t to = std::string::npos) {
  size_t n = 0;
  to = std::min(to, text.size());
  for (size_t at = text.find(what, from); at != std::string::npos && at + what.size() <= to;
       at = text.find(what, at + what.size()))
    ++n;
  return n;
}

}  // namespace

std::string cuda_empty_kernel_ptx() { return kPtx; }

int cuda_empty_kernel_max_args() { return kMaxArgs; }

std::string cuda_empty_kernel_name(int args) { return "xferlab_empty" + std::to_string(args); }

std::vector<std::string> cuda_empty_kernel_names() {
  std::vector<std::string> names;
  for (int n = 0; n <= kMaxArgs; ++n) names.push_back(cuda_empty_kernel_name(n));
  return names;
}

std::string cuda_ptx_problem(const std::string& ptx) {
  for (const char* directive : {"\n.version ", "\n.target ", "\n.address_size 64"})
    if (ptx.find(directive) == std::string::npos)
      return std::string("no '") + (directive + 1) + "' directive at the start of a line";
  int depth = 0;
  for (char c : ptx) {
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (depth < 0) return "a '}' closes no '{'";
  }
  if (depth != 0) return std::to_string(depth) + " '{' never closed";
  const size_t entries = count(ptx, ".entry ");
  if (entries != static_cast<size_t>(kMaxArgs + 1))
    return std::to_string(entries) + " .entry directives, expected " + std::to_string(kMaxArgs + 1);
  for (int n = 0; n <= kMaxArgs; ++n) {
    const std::string head = ".entry " + cuda_empty_kernel_name(n) + "(";
    const size_t at = ptx.find(head);
    if (at == std::string::npos) return "no entry '" + cuda_empty_kernel_name(n) + "'";
    const size_t close = ptx.find(')', at);
    const size_t body = ptx.find('{', at);
    if (close == std::string::npos || body == std::string::npos || body < close)
      return "entry '" + cuda_empty_kernel_name(n) + "' has no parameter list followed by a body";
    const size_t params = count(ptx, ".param .u64 ", at, close);
    if (params != static_cast<size_t>(n) || count(ptx, ".param", at, close) != params)
      return "entry '" + cuda_empty_kernel_name(n) + "' declares " + std::to_string(params) +
             " .u64 parameters, expected " + std::to_string(n);
    const size_t end = ptx.find('}', body);
    if (ptx.find("ret;", body) > end) return "entry '" + cuda_empty_kernel_name(n) + "' does not end with ret;";
  }
  return "";
}

int run_cuda_ptx(Args& args) {
  args.finish();
  const std::string ptx = cuda_empty_kernel_ptx();
  const std::string problem = cuda_ptx_problem(ptx);
  std::string names;
  for (const auto& name : cuda_empty_kernel_names()) names += (names.empty() ? "[\"" : ",\"") + name + "\"";
  names += "]";
  JsonLine line;
  line.str("probe", "cuda-ptx")
      .integer("max_args", cuda_empty_kernel_max_args())
      .raw("entries", names)
      .integer("ptx_bytes", static_cast<long long>(ptx.size()))
      .boolean("valid", problem.empty());
  if (!problem.empty()) line.str("problem", problem);
  line.emit();
  return problem.empty() ? 0 : 1;
}

}  // namespace xferlab
