// The pieces of `xferlab-probe network` (network.cpp) that its timed loops share: the options, the
// message pattern every receiver checks, the buffers (host, or device memory staged or direct), the
// ranks' world, and the Runner, whose point-to-point tests are in network_p2p.cpp and collectives in
// network_collectives.cpp.
#pragma once
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../loaders/mpi_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "clock.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "region.hpp"

namespace xferlab::net {

namespace M = mpi;

inline const std::vector<std::string> kTests = {"latency",   "bw",        "bibw",    "mbw_mr", "multi_lat", "allreduce",
                                         "alltoall",  "bcast",     "allgather", "reduce", "barrier",
                                         "gather", "scatter", "reduce_scatter", "alltoallv", "allgatherv",
                                         "iallreduce", "ialltoall", "ibcast", "iallgather", "ireduce", "igather",
                                         "iscatter", "ibarrier",
                                         "put_latency", "get_latency", "put_bw", "get_bw", "put_bibw"};
// The non-blocking collectives (OSU's osu_iallreduce …: network_nbc.cpp), each timed as OSU does, with overlap.
inline const std::vector<std::string> kNonblocking = {"iallreduce", "ialltoall", "ibcast",   "iallgather",
                                                      "ireduce",    "igather",   "iscatter", "ibarrier"};
constexpr int kAckBytes = 4;  // osu_bw's acknowledgement
constexpr int kTagData = 100, kTagAck = 101;

inline bool collective(const std::string& t) {
  return t == "allreduce" || t == "alltoall" || t == "bcast" || t == "allgather" || t == "reduce" || t == "barrier" ||
         t == "gather" || t == "scatter" || t == "reduce_scatter" || t == "alltoallv" || t == "allgatherv" ||
         std::find(kNonblocking.begin(), kNonblocking.end(), t) != kNonblocking.end();
}
inline bool windowed(const std::string& t) { return t == "bw" || t == "bibw" || t == "mbw_mr"; }
// One-sided (network_rma.cpp): OSU's osu_put_latency, osu_get_latency, osu_put_bw, osu_get_bw, osu_put_bibw.
inline bool one_sided(const std::string& t) {
  return t == "put_latency" || t == "get_latency" || t == "put_bw" || t == "get_bw" || t == "put_bibw";
}
inline const std::vector<std::string> kRmaSyncs = {"lock", "flush", "flush_local", "lock_all", "fence", "pscw"};
inline const std::vector<std::string> kRmaWindows = {"allocate", "create"};

struct Options {
  std::vector<std::string> tests;
  std::vector<long long> sizes, collective_sizes;
  long long large_from = 8192;  // OSU's LARGE_MESSAGE_SIZE: sizes above it take the "large" counts
  int iterations = 10000, iterations_large = 1000, warmup = 100, warmup_large = 10;
  int bw_iterations = 100, bw_iterations_large = 20, bw_warmup = 10, bw_warmup_large = 2;
  int coll_iterations = 1000, coll_iterations_large = 100, coll_warmup = 100, coll_warmup_large = 10;
  int window = 64;
  std::vector<std::string> buffers = {"host"};
  std::string backend = "opencl", path = "auto", bind = "none";
  int device = 0, node = -1;
  double budget = 0.0;
  std::string inventory_file;
  bool corrupt = false;  // tests: rank 1 sees one wrong byte in what it received, so validation must fail
  std::string rma_sync;             // one-sided: OSU's -s; "" = OSU's default per test (flush; pscw for put_bibw)
  std::string rma_window = "allocate";  // one-sided: OSU's -w (allocate, create)
};

inline int iterations_for(const Options& o, const std::string& test, long long size, bool warm) {
  const bool large = size > o.large_from;
  if (windowed(test)) return warm ? (large ? o.bw_warmup_large : o.bw_warmup) : (large ? o.bw_iterations_large : o.bw_iterations);
  if (collective(test))
    return warm ? (large ? o.coll_warmup_large : o.coll_warmup) : (large ? o.coll_iterations_large : o.coll_iterations);
  return warm ? (large ? o.warmup_large : o.warmup) : (large ? o.iterations_large : o.iterations);
}

// The ping-pong tests (latency, multi_lat) time the loop the way OSU does, one clock read before a run of
// iterations and one after, not one per iteration: their `iterations` are split into `latency_batches(iters)`
// equal batches, the largest count up to kLatencyBatches that divides them, one sample each (a batch's time /
// its iterations / 2), so the samples' mean is OSU's timer / iterations / 2 to the nanosecond and the loop
// reads the clock once per batch.
constexpr int kLatencyBatches = 100;
inline int latency_batches(int iters) {
  for (int k = std::min(iters, kLatencyBatches); k > 1; --k)
    if (iters % k == 0) return k;
  return 1;
}
inline bool pingpong_test(const std::string& t) { return t == "latency" || t == "multi_lat"; }
inline int samples_for(const std::string& test, int iters) { return pingpong_test(test) ? latency_batches(iters) : iters; }

inline unsigned char pattern(int rank, long long size, size_t k) {
  return static_cast<unsigned char>(k * 131u + static_cast<unsigned>(rank) * 17u + static_cast<unsigned>(size) * 7u + 1u);
}

// MPI's counts are ints: every size must fit.
inline int count_of(long long bytes) {
  if (bytes > INT_MAX) throw BadArgument("a message of " + std::to_string(bytes) + " bytes is above MPI's int count");
  return static_cast<int>(bytes);
}

extern const mpi::Api* g;  // the MPI, loaded by run_network (network.cpp)
inline void ok(int code, const char* what) { mpi::check(code, what); }

// ---------------------------------------------------------------------------------------------
// A buffer MPI sends from or receives into: host memory, or device memory reached directly or
// through pinned staging slots (one per window message, so no pending send's buffer is rewritten).
class Buffer {
 public:
  Buffer(const Options& o, Backend* backend, const std::string& path, size_t bytes, int slots)
      : backend_(backend), path_(path), bytes_(std::max<size_t>(bytes, 1)) {
    if (!backend_) {
      RegionOptions r;
      r.bytes = bytes_;
      r.node = o.node;
      region_ = Region::map(r);
      std::memset(region_->data(), 0, bytes_);  // touched here, on the bound node, before any timing
      return;
    }
    device_ = backend_->allocate_device(bytes_);
    if (path_ == "staged")
      for (int s = 0; s < slots; ++s) stage_.push_back(backend_->allocate_host(HostKind::pinned, bytes_));
  }
  // The pointer MPI is given for window slot `s`.
  void* mpi(int s = 0) const {
    if (!backend_) return region_->data();
    if (path_ == "direct") return reinterpret_cast<void*>(device_->handle);
    return stage_[static_cast<size_t>(s) % stage_.size()]->host;
  }
  // Staged path: bring `n` bytes from the device before MPI reads slot s / after MPI wrote it.
  void before_send(size_t n, int s = 0) {
    if (backend_ && path_ == "staged" && n > 0) backend_->copy(*stage_[static_cast<size_t>(s) % stage_.size()], *device_, n);
  }
  void after_receive(size_t n, int s = 0) {
    if (backend_ && path_ == "staged" && n > 0) backend_->copy(*device_, *stage_[static_cast<size_t>(s) % stage_.size()], n);
  }
  // Untimed: the bytes of the buffer (for filling and checking), through a host copy for device memory.
  void write(const std::vector<unsigned char>& bytes) {
    if (!backend_) {
      std::memcpy(region_->data(), bytes.data(), bytes.size());
      return;
    }
    auto tmp = backend_->allocate_host(HostKind::pinned, std::max<size_t>(bytes.size(), 1));
    std::memcpy(tmp->host, bytes.data(), bytes.size());
    if (!bytes.empty()) backend_->copy(*device_, *tmp, bytes.size());
    for (auto& st : stage_) std::memset(st->host, 0xEE, bytes_);
  }
  std::vector<unsigned char> read(size_t n) {
    std::vector<unsigned char> out(n);
    if (!backend_) {
      std::memcpy(out.data(), region_->data(), n);
      return out;
    }
    auto tmp = backend_->allocate_host(HostKind::pinned, std::max<size_t>(n, 1));
    if (n) backend_->copy(*tmp, *device_, n);
    std::memcpy(out.data(), tmp->host, n);
    return out;
  }
  size_t bytes() const { return bytes_; }

 private:
  Backend* backend_;
  std::string path_;
  size_t bytes_;
  std::unique_ptr<Region> region_;
  std::unique_ptr<Memory> device_;
  std::vector<std::unique_ptr<Memory>> stage_;
};

// ---------------------------------------------------------------------------------------------
struct World {
  int rank = 0, size = 1, local_rank = 0;
  std::vector<std::string> hosts;  // per rank (every rank knows them)
  bool same_host(int a, int b) const { return hosts[a] == hosts[b]; }
  std::string pair_kind(int a, int b) const { return same_host(a, b) ? "intra-node" : "inter-node"; }
};

inline std::string cpu_list() {
  std::string out;
  for (int c : allowed_cpus()) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

// Every rank's `mine` at every rank (Allgather of lengths, then of the padded text).
inline std::vector<std::string> all_strings(const World& w, const std::string& mine) {
  int length = static_cast<int>(mine.size()), longest = 0;
  ok(g->Allreduce(&length, &longest, 1, M::INT, M::MAX, M::COMM_WORLD), "MPI_Allreduce");
  std::vector<char> padded(static_cast<size_t>(longest) + 1, '\0'), all((static_cast<size_t>(longest) + 1) * w.size);
  std::memcpy(padded.data(), mine.data(), mine.size());
  ok(g->Allgather(padded.data(), longest + 1, M::CHAR, all.data(), longest + 1, M::CHAR, M::COMM_WORLD),
     "MPI_Allgather");
  std::vector<std::string> out;
  for (int r = 0; r < w.size; ++r) out.emplace_back(all.data() + static_cast<size_t>(r) * (longest + 1));
  return out;
}

inline std::string json_text(const std::string& s) {
  JsonLine j;
  j.str("v", s);
  const std::string t = j.text();  // {"v":"..."}
  return t.substr(5, t.size() - 6);
}

inline std::string seconds_json(const std::vector<double>& v) {
  std::string out = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.9g", v[i]);
    out += (i ? "," : "") + std::string(buf);
  }
  return out + "]";
}

class Runner {
 public:
  Runner(const Options& o, const World& w, Backend* backend, const std::string& path)
      : o_(o), w_(w), backend_(backend), path_(path) {}

  // One (test, size, pair): the timed loop, then validation; rank 0 prints the records.
  void run(const std::string& test, long long size, int a, int b);
  // multi_lat and mbw_mr: pairs (r, r + ranks/2) at once.
  void run_pairs(const std::string& test, long long size);
  void run_collective(const std::string& test, long long size);
  // One-sided put/get between a (origin, timing) and b (target), in a window of the pair (network_rma.cpp).
  void run_rma(const std::string& test, long long size, int a, int b);
  // iallreduce …: pure communication, then with a compute phase between start and wait (network_nbc.cpp).
  void run_nbc(const std::string& test, long long size);
  // Buffers per side (OSU's `H D`, `D H`): on a device path, which of the pair's ranks (a: the sender of
  // the ping-pong or the window, b: its partner) keep host memory instead. Both false: both on the path's kind.
  void sides(bool a_host, bool b_host) {
    a_host_ = a_host;
    b_host_ = b_host;
  }
  // OSU's notation of the buffers of the pair (sender first): "H H", "H D", "D H", "D D".
  std::string sides_text() const {
    const char* a = backend_ && !a_host_ ? "D" : "H";
    const char* b = backend_ && !b_host_ ? "D" : "H";
    return std::string(a) + " " + b;
  }
  // What a record of `test` names: the pair's sides, or a collective's one kind ("H" or "D").
  std::string buffers_of(const std::string& test) const { return collective(test) ? (backend_ ? "D" : "H") : sides_text(); }

 private:
  // The backend of this rank's buffers in the pair (a, b): nullptr for host memory.
  Backend* side_backend(int a) const { return (w_.rank == a ? a_host_ : b_host_) ? nullptr : backend_; }
  // Rank a times; a sends first. Returns the one-way samples at a, empty elsewhere.
  std::vector<double> pingpong(long long size, int a, int b, int warm, int iters, long long& wrong);
  // bw (a sends windows to b, b acks each) or bibw (both send a window to each other). Samples at a.
  std::vector<double> window(long long size, int a, int b, int warm, int iters, long long& wrong, bool both);
  void fill(Buffer& b, int rank, long long size, size_t n);
  long long check(Buffer& b, int from, long long size, size_t n);
  // Every rank's `mine` (all of one length) at rank 0, rank after rank.
  std::vector<double> gather(const std::vector<double>& mine);
  void report(const std::string& test, long long size, const std::string& pair, const std::vector<int>& ranks,
              const std::vector<double>& seconds, int timer, int iters, int warm, long long wrong);
  void emit_samples(const std::string& test, long long size, const std::string& pair, const std::vector<int>& ranks,
                    const std::vector<double>& seconds, int rank, int iters, int warm, int pairs,
                    const std::vector<std::pair<std::string, std::string>>& more = {});  // more: (key, JSON) fields
  // A collective's ending: every rank's samples (and `more` series of each, by name) printed by rank 0, then
  // validate() (network_collectives.cpp).
  void report_collective(const std::string& test, long long size, const std::vector<double>& seconds, int iters, int warm,
                         long long wrong, const std::vector<std::pair<std::string, std::vector<double>>>& more = {});
  // Rank 0 learns every rank's first wrong byte and prints the point's validation record.
  void validate(const std::string& test, long long size, const std::string& pair, long long wrong);

  const Options& o_;
  const World& w_;
  Backend* backend_;
  std::string path_;
  bool a_host_ = false, b_host_ = false;
};

}  // namespace xferlab::net
