// One collective call of `xferlab-probe network` with its buffers, its inputs and its check, shared by
// the blocking collectives (network_collectives.cpp) and the non-blocking ones (network_nbc.cpp, which
// start the same operation and wait for it). Message sizes are OSU's: per rank for every collective
// but reduce_scatter, whose size is the whole vector each rank contributes (osu_reduce_scatter);
// the v-variants take OSU's equal counts (every block `size` bytes).
#pragma once
#include <string>
#include <vector>

#include "network.hpp"

namespace xferlab::net {

inline bool nonblocking(const std::string& t) {
  return std::find(kNonblocking.begin(), kNonblocking.end(), t) != kNonblocking.end();
}
// The operation a test times: "iallreduce" -> "allreduce"; a blocking collective is its own.
inline std::string operation_of(const std::string& t) { return nonblocking(t) ? t.substr(1) : t; }
inline bool moves_no_data(const std::string& t) { return operation_of(t) == "barrier"; }

// Whether a collective runs at `size` bytes on `ranks` ranks: a reduction needs one float, and
// reduce_scatter one float for each rank's block.
inline bool takes(const std::string& test, long long size, int ranks) {
  const std::string op = operation_of(test);
  if (op == "reduce_scatter") return size >= 4LL * ranks;
  if (op == "allreduce" || op == "reduce") return size >= 4;
  return true;
}

class Collective {
 public:
  Collective(const Options& o, const World& w, Backend* backend, const std::string& path, const std::string& op,
             long long size);
  // Untimed: the inputs written, every output set to bytes no collective writes.
  void reset();
  // The blocking call, with the staged path's copies around it (timed with it).
  void call();
  // The non-blocking call (the staged copy before it) and what follows its wait (the copy after).
  void start(M::Request* request);
  void finish();
  // After the last call: the first wrong byte this rank holds, or -1 (also where it holds nothing to check).
  long long check(bool corrupt);

 private:
  const std::string op_;
  const long long size_;
  const int n_, me_;
  bool floats_;
  int c_ = 0, block_ = 0;  // MPI's count per rank; reduce_scatter's block (floats) per rank
  size_t in_bytes_ = 0, out_bytes_ = 0;
  std::vector<int> counts_, displs_;  // the v-variants' equal counts
  std::vector<unsigned char> input_;
  std::unique_ptr<Buffer> in_, out_;
};

}  // namespace xferlab::net
