// `xferlab-probe network`: MPI point-to-point and collective benchmarks with the definitions of the
// OSU Micro-Benchmarks (osu_latency, osu_bw, osu_bibw, osu_mbw_mr, osu_multi_lat, osu_allreduce …),
// so that the figures compare with OSU's one to one. Every rank runs this; rank 0 prints.
//
// Where each test is timed (std::chrono::steady_clock, as every loop of the probe; one read per
// iteration on the timing rank, so every iteration is a sample and their sum is OSU's timer):
//   latency    ping-pong between rank 0 and a partner; sample = round trip / 2 (one-way)
//   bw         the sender posts `window` non-blocking sends, waits for all, then takes a 4-byte ack
//              from the receiver; sample = the time of one window (bytes = size x window)
//   bibw       both sides post `window` receives and `window` sends, then wait for all 2 x window
//   multi_lat  every pair (r, r + ranks/2) ping-pongs at once; a sample per iteration per pair
//   mbw_mr     every pair runs bw's window at once; sample = the slowest pair's window time
//   allreduce, reduce (MPI_FLOAT sum), bcast, alltoall, allgather (MPI_CHAR), barrier: every rank
//              times each call alone, with a barrier between calls (as OSU); samples of every rank
//
// Buffers: host memory (page-aligned, bound to --node), or device memory of an OpenCL/CUDA backend
// (backend.hpp), given to MPI directly where the MPI moves device memory itself (CUDA-aware MPI,
// path "direct"), else staged through pinned host memory (path "staged": a device-to-host copy
// before each send and a host-to-device copy after each receive, inside the timed loop).
// Validation: the timed loop moves known bytes (a pattern of the sender's rank and the size); after
// it, every receiver checks what arrived, and rank 0 prints one validation record per point.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "args.hpp"
#include "backend.hpp"
#include "json.hpp"
#include "../loaders/mpi_loader.hpp"
#include "placement.hpp"
#include "probe.hpp"
#include "region.hpp"

namespace xferlab {
namespace {

using Clock = std::chrono::steady_clock;
namespace M = mpi;

const std::vector<std::string> kTests = {"latency",   "bw",        "bibw",    "mbw_mr", "multi_lat", "allreduce",
                                         "alltoall",  "bcast",     "allgather", "reduce", "barrier"};
constexpr int kAckBytes = 4;  // osu_bw's acknowledgement
constexpr int kTagData = 100, kTagAck = 101;

bool collective(const std::string& t) {
  return t == "allreduce" || t == "alltoall" || t == "bcast" || t == "allgather" || t == "reduce" || t == "barrier";
}
bool windowed(const std::string& t) { return t == "bw" || t == "bibw" || t == "mbw_mr"; }

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
};

int iterations_for(const Options& o, const std::string& test, long long size, bool warm) {
  const bool large = size > o.large_from;
  if (windowed(test)) return warm ? (large ? o.bw_warmup_large : o.bw_warmup) : (large ? o.bw_iterations_large : o.bw_iterations);
  if (collective(test))
    return warm ? (large ? o.coll_warmup_large : o.coll_warmup) : (large ? o.coll_iterations_large : o.coll_iterations);
  return warm ? (large ? o.warmup_large : o.warmup) : (large ? o.iterations_large : o.iterations);
}

unsigned char pattern(int rank, long long size, size_t k) {
  return static_cast<unsigned char>(k * 131u + static_cast<unsigned>(rank) * 17u + static_cast<unsigned>(size) * 7u + 1u);
}

// MPI's counts are ints: every size must fit.
int count_of(long long bytes) {
  if (bytes > INT_MAX) throw BadArgument("a message of " + std::to_string(bytes) + " bytes is above MPI's int count");
  return static_cast<int>(bytes);
}

const M::Api* g = nullptr;
void ok(int code, const char* what) { M::check(code, what); }

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

std::string cpu_list() {
  std::string out;
  for (int c : allowed_cpus()) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

// Every rank's `mine` at every rank (Allgather of lengths, then of the padded text).
std::vector<std::string> all_strings(const World& w, const std::string& mine) {
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

std::string json_text(const std::string& s) {
  JsonLine j;
  j.str("v", s);
  const std::string t = j.text();  // {"v":"..."}
  return t.substr(5, t.size() - 6);
}

std::string seconds_json(const std::vector<double>& v) {
  std::string out = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.9g", v[i]);
    out += (i ? "," : "") + std::string(buf);
  }
  return out + "]";
}

// ---------------------------------------------------------------------------------------------
struct Point {
  std::string test, pair;
  long long size = 0;
  std::vector<int> ranks;  // the pair, or every rank
};

class Runner {
 public:
  Runner(const Options& o, const World& w, Backend* backend, const std::string& path)
      : o_(o), w_(w), backend_(backend), path_(path) {}

  // One (test, size, pair): the timed loop, then validation; rank 0 prints the records.
  void run(const std::string& test, long long size, int a, int b) {
    const int warm = iterations_for(o_, test, size, true), iters = iterations_for(o_, test, size, false);
    std::vector<double> seconds;
    long long wrong = -1;  // first wrong byte at this rank, -1 if none
    if (test == "latency") {
      seconds = pingpong(size, a, b, warm, iters, wrong);
    } else if (test == "bw") {
      seconds = window(size, a, b, warm, iters, wrong, false);
    } else if (test == "bibw") {
      seconds = window(size, a, b, warm, iters, wrong, true);
    }
    const std::string pair = w_.pair_kind(a, b);
    report(test, size, pair, {a, b}, seconds, a, iters, warm, wrong);
  }

  // multi_lat and mbw_mr: pairs (r, r + ranks/2) at once.
  void run_pairs(const std::string& test, long long size) {
    const int warm = iterations_for(o_, test, size, true), iters = iterations_for(o_, test, size, false);
    const int half = w_.size / 2;
    const bool sender = w_.rank < half;
    const int partner = sender ? w_.rank + half : w_.rank - half;
    std::vector<double> mine;
    long long wrong = -1;
    ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
    if (w_.rank < 2 * half) {
      const int a = sender ? w_.rank : partner, b = sender ? partner : w_.rank;
      mine = test == "multi_lat" ? pingpong(size, a, b, warm, iters, wrong) : window(size, a, b, warm, iters, wrong, false);
    }
    mine.resize(static_cast<size_t>(iters), 0.0);
    std::vector<double> all = gather(mine);
    std::vector<int> pairs_ranks;
    std::string kinds;
    for (int r = 0; r < half; ++r) {
      pairs_ranks.push_back(r);
      pairs_ranks.push_back(r + half);
    }
    bool all_intra = true, all_inter = true;
    for (int r = 0; r < half; ++r) (w_.same_host(r, r + half) ? all_inter : all_intra) = false;
    const std::string pair = all_intra ? "intra-node" : all_inter ? "inter-node" : "mixed";
    std::vector<double> seconds(static_cast<size_t>(iters), 0.0);
    if (w_.rank == 0) {
      if (test == "multi_lat") {  // one record per pair
        for (int r = 0; r < half; ++r) {
          std::vector<double> s(all.begin() + static_cast<long>(r) * iters, all.begin() + static_cast<long>(r + 1) * iters);
          emit_samples(test, size, w_.pair_kind(r, r + half), {r, r + half}, s, r, iters, warm, half);
        }
      } else {  // the slowest pair's window, iteration by iteration
        for (int r = 0; r < half; ++r)
          for (int i = 0; i < iters; ++i)
            seconds[i] = std::max(seconds[i], all[static_cast<size_t>(r) * iters + i]);
        emit_samples(test, size, pair, pairs_ranks, seconds, -1, iters, warm, half);
      }
    }
    validate(test, size, pair, wrong);
  }

  void run_collective(const std::string& test, long long size) {
    const int warm = iterations_for(o_, test, size, true), iters = iterations_for(o_, test, size, false);
    const int n = w_.size, me = w_.rank;
    const bool floats = test == "allreduce" || test == "reduce";
    const long long count = floats ? size / 4 : size;
    const size_t in_bytes = static_cast<size_t>(test == "alltoall" ? size * n : size);
    const size_t out_bytes = static_cast<size_t>(test == "alltoall" || test == "allgather" ? size * n : size);
    Buffer in(o_, backend_, path_, in_bytes, 1), out(o_, backend_, path_, out_bytes, 1);
    // Inputs: floats (r + 1) + i % 13 for the reductions; pattern bytes of the sender otherwise
    // (alltoall: block j of rank r carries pattern(r * n + j)).
    std::vector<unsigned char> input(in_bytes);
    if (floats) {
      for (long long i = 0; i < count; ++i) {
        const float v = static_cast<float>(me + 1 + i % 13);
        std::memcpy(input.data() + i * 4, &v, 4);
      }
    } else {
      for (size_t k = 0; k < in_bytes; ++k)
        input[k] = test == "alltoall" ? pattern(me * n + static_cast<int>(k / size), size, k % size) : pattern(me, size, k);
    }
    in.write(input);
    out.write(std::vector<unsigned char>(out_bytes, 0xEE));
    if (test == "bcast" && me != 0) in.write(std::vector<unsigned char>(in_bytes, 0xEE));
    const int c = count_of(count);
    std::vector<double> seconds;
    seconds.reserve(static_cast<size_t>(iters));
    ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
    for (int i = 0; i < warm + iters; ++i) {
      const auto t0 = Clock::now();
      if (test == "barrier") {
        ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
      } else {
        in.before_send(in_bytes);
        if (test == "allreduce")
          ok(g->Allreduce(in.mpi(), out.mpi(), c, M::FLOAT, M::SUM, M::COMM_WORLD), "MPI_Allreduce");
        else if (test == "reduce")
          ok(g->Reduce(in.mpi(), out.mpi(), c, M::FLOAT, M::SUM, 0, M::COMM_WORLD), "MPI_Reduce");
        else if (test == "bcast")
          ok(g->Bcast(in.mpi(), c, M::CHAR, 0, M::COMM_WORLD), "MPI_Bcast");
        else if (test == "alltoall")
          ok(g->Alltoall(in.mpi(), c, M::CHAR, out.mpi(), c, M::CHAR, M::COMM_WORLD), "MPI_Alltoall");
        else
          ok(g->Allgather(in.mpi(), c, M::CHAR, out.mpi(), c, M::CHAR, M::COMM_WORLD), "MPI_Allgather");
        if (test == "bcast")
          in.after_receive(in_bytes);
        else
          out.after_receive(out_bytes);
      }
      const auto t1 = Clock::now();
      if (i >= warm) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
      ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
    }
    // What this rank must hold now.
    long long wrong = -1;
    if (test != "barrier" && !(test == "reduce" && me != 0)) {
      auto got = test == "bcast" ? in.read(in_bytes) : out.read(out_bytes);
      if (o_.corrupt && me == 1 && !got.empty()) got[got.size() / 2] ^= 0x40;
      for (size_t k = 0; k < got.size() && wrong < 0; ++k) {
        unsigned char expect;
        if (floats) {
          if (k % 4) continue;
          const long long i = static_cast<long long>(k / 4);
          const float sum = static_cast<float>(n * (n + 1) / 2 + n * (i % 13));
          float v;
          std::memcpy(&v, got.data() + k, 4);
          if (v != sum) wrong = static_cast<long long>(k);
          continue;
        }
        if (test == "bcast")
          expect = pattern(0, size, k);
        else if (test == "allgather")
          expect = pattern(static_cast<int>(k / size), size, k % size);
        else  // alltoall: block j came from rank j, its block `me`
          expect = pattern(static_cast<int>(k / size) * n + me, size, k % size);
        if (got[k] != expect) wrong = static_cast<long long>(k);
      }
    }
    std::vector<double> all = gather(seconds);
    std::string pair = "intra-node";
    for (int r = 1; r < n; ++r)
      if (!w_.same_host(0, r)) pair = "inter-node";
    if (me == 0) {
      std::vector<int> everyone;
      for (int r = 0; r < n; ++r) everyone.push_back(r);
      for (int r = 0; r < n; ++r) {
        std::vector<double> s(all.begin() + static_cast<long>(r) * iters, all.begin() + static_cast<long>(r + 1) * iters);
        emit_samples(test, size, pair, everyone, s, r, iters, warm, 0);
      }
    }
    validate(test, size, pair, wrong);
  }

 private:
  // Rank a times; a sends first. Returns the one-way samples at a, empty elsewhere.
  std::vector<double> pingpong(long long size, int a, int b, int warm, int iters, long long& wrong) {
    const int me = w_.rank;
    if (me != a && me != b) return {};
    const size_t n = static_cast<size_t>(size);
    Buffer send(o_, backend_, path_, n, 1), recv(o_, backend_, path_, n, 1);
    fill(send, me, size, n);
    recv.write(std::vector<unsigned char>(n, 0xEE));
    const int other = me == a ? b : a, c = count_of(size);
    std::vector<Clock::time_point> t(static_cast<size_t>(iters) + 1);
    for (int i = 0; i < warm + iters; ++i) {
      if (me == a) {
        if (i >= warm) t[static_cast<size_t>(i - warm)] = Clock::now();
        send.before_send(n);
        ok(g->Send(send.mpi(), c, M::CHAR, other, kTagData, M::COMM_WORLD), "MPI_Send");
        ok(g->Recv(recv.mpi(), c, M::CHAR, other, kTagData, M::COMM_WORLD, M::STATUS_IGNORE), "MPI_Recv");
        recv.after_receive(n);
      } else {
        ok(g->Recv(recv.mpi(), c, M::CHAR, other, kTagData, M::COMM_WORLD, M::STATUS_IGNORE), "MPI_Recv");
        recv.after_receive(n);
        send.before_send(n);
        ok(g->Send(send.mpi(), c, M::CHAR, other, kTagData, M::COMM_WORLD), "MPI_Send");
      }
    }
    t[static_cast<size_t>(iters)] = Clock::now();
    wrong = check(recv, other, size, n);
    if (me != a) return {};
    std::vector<double> out(static_cast<size_t>(iters));
    for (int i = 0; i < iters; ++i) out[i] = std::chrono::duration<double>(t[i + 1] - t[i]).count() / 2;
    return out;
  }

  // bw (a sends windows to b, b acks each) or bibw (both send a window to each other). Samples at a.
  std::vector<double> window(long long size, int a, int b, int warm, int iters, long long& wrong, bool both) {
    const int me = w_.rank;
    if (me != a && me != b) return {};
    const size_t n = static_cast<size_t>(size);
    const int win = o_.window, c = count_of(size), other = me == a ? b : a;
    Buffer send(o_, backend_, path_, n, win), recv(o_, backend_, path_, n, win);
    fill(send, me, size, n);
    recv.write(std::vector<unsigned char>(n, 0xEE));
    std::vector<M::Request> requests(static_cast<size_t>(2 * win));
    char ack[kAckBytes] = {0};
    std::vector<Clock::time_point> t(static_cast<size_t>(iters) + 1);
    const bool sends = both || me == a, receives = both || me == b;
    for (int i = 0; i < warm + iters; ++i) {
      if (me == a && i >= warm) t[static_cast<size_t>(i - warm)] = Clock::now();
      int k = 0;
      if (receives)
        for (int s = 0; s < win; ++s)
          ok(g->Irecv(recv.mpi(s), c, M::CHAR, other, kTagData, M::COMM_WORLD, &requests[k++]), "MPI_Irecv");
      if (sends)
        for (int s = 0; s < win; ++s) {
          send.before_send(n, s);
          ok(g->Isend(send.mpi(s), c, M::CHAR, other, kTagData, M::COMM_WORLD, &requests[k++]), "MPI_Isend");
        }
      ok(g->Waitall(k, requests.data(), M::STATUS_IGNORE), "MPI_Waitall");
      if (receives)
        for (int s = 0; s < win; ++s) recv.after_receive(n, s);
      if (!both) {
        if (me == a)
          ok(g->Recv(ack, kAckBytes, M::CHAR, other, kTagAck, M::COMM_WORLD, M::STATUS_IGNORE), "MPI_Recv");
        else
          ok(g->Send(ack, kAckBytes, M::CHAR, other, kTagAck, M::COMM_WORLD), "MPI_Send");
      }
    }
    t[static_cast<size_t>(iters)] = Clock::now();
    if (receives) wrong = check(recv, other, size, n);
    if (me != a) return {};
    std::vector<double> out(static_cast<size_t>(iters));
    for (int i = 0; i < iters; ++i) out[i] = std::chrono::duration<double>(t[i + 1] - t[i]).count();
    return out;
  }

  void fill(Buffer& b, int rank, long long size, size_t n) {
    std::vector<unsigned char> bytes(n);
    for (size_t k = 0; k < n; ++k) bytes[k] = pattern(rank, size, k);
    b.write(bytes);
  }
  long long check(Buffer& b, int from, long long size, size_t n) {
    auto got = b.read(n);
    if (o_.corrupt && w_.rank == 1 && n > 0) got[n / 2] ^= 0x40;
    for (size_t k = 0; k < n; ++k)
      if (got[k] != pattern(from, size, k)) return static_cast<long long>(k);
    return -1;
  }

  // Every rank's `mine` (all of one length) at rank 0, rank after rank.
  std::vector<double> gather(const std::vector<double>& mine) {
    std::vector<double> all(w_.rank == 0 ? mine.size() * w_.size : 0);
    ok(g->Gather(mine.data(), static_cast<int>(mine.size()), M::DOUBLE, all.data(), static_cast<int>(mine.size()),
                 M::DOUBLE, 0, M::COMM_WORLD),
       "MPI_Gather");
    return all;
  }

  void report(const std::string& test, long long size, const std::string& pair, const std::vector<int>& ranks,
              const std::vector<double>& seconds, int timer, int iters, int warm, long long wrong) {
    // The timing rank's samples reach rank 0 (when rank 0 is not the timer).
    std::vector<double> s = seconds;
    if (timer != 0) {
      if (w_.rank == timer) ok(g->Send(s.data(), iters, M::DOUBLE, 0, kTagAck, M::COMM_WORLD), "MPI_Send");
      if (w_.rank == 0) {
        s.resize(static_cast<size_t>(iters));
        ok(g->Recv(s.data(), iters, M::DOUBLE, timer, kTagAck, M::COMM_WORLD, M::STATUS_IGNORE), "MPI_Recv");
      }
    }
    if (w_.rank == 0) emit_samples(test, size, pair, ranks, s, timer, iters, warm, 1);
    validate(test, size, pair, wrong);
  }

  void emit_samples(const std::string& test, long long size, const std::string& pair, const std::vector<int>& ranks,
                    const std::vector<double>& seconds, int rank, int iters, int warm, int pairs) {
    std::string r = "[";
    for (size_t i = 0; i < ranks.size(); ++i) r += (i ? "," : "") + std::to_string(ranks[i]);
    JsonLine line;
    line.str("record", "samples").str("test", test).integer("size_bytes", size).str("pair", pair).raw("ranks", r + "]");
    if (rank >= 0) line.integer("rank", rank);
    line.str("buffer", backend_ ? "device" : "host").str("path", path_).integer("iterations", iters).integer("warmup", warm);
    if (windowed(test)) line.integer("window", o_.window);
    if (pairs > 0) line.integer("pairs", pairs);
    line.raw("seconds", seconds_json(seconds)).emit();
  }

  // Rank 0 learns every rank's first wrong byte and prints the point's validation record.
  void validate(const std::string& test, long long size, const std::string& pair, long long wrong) {
    int mine[2] = {wrong >= 0 ? 0 : 1, static_cast<int>(std::min<long long>(wrong, INT_MAX))};
    std::vector<int> all(w_.rank == 0 ? 2 * w_.size : 0);
    ok(g->Gather(mine, 2, M::INT, all.data(), 2, M::INT, 0, M::COMM_WORLD), "MPI_Gather");
    if (w_.rank != 0) {
      fault::count_sample();
      return;
    }
    int bad_rank = -1;
    for (int r = 0; r < w_.size && bad_rank < 0; ++r)
      if (!all[2 * r]) bad_rank = r;
    JsonLine line;
    line.str("record", "validation").str("test", test).integer("size_bytes", size).str("pair", pair).str("path", path_);
    line.boolean("ok", bad_rank < 0);
    if (bad_rank >= 0)
      line.str("what", "rank " + std::to_string(bad_rank) + " received a wrong byte at offset " +
                           std::to_string(all[2 * bad_rank + 1]));
    else
      line.str("what", test == "barrier" ? "no data to check" : "every receiver holds the bytes sent");
    line.emit();
  }

  const Options& o_;
  const World& w_;
  Backend* backend_;
  std::string path_;
};

Options parse(Args& args) {
  Options o;
  o.tests = args.words("tests", "latency,bw,bibw,mbw_mr,allreduce", kTests);
  o.sizes = args.integers("sizes", "0,1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144,"
                                   "524288,1048576,2097152,4194304", 0, INT_MAX);
  o.collective_sizes =
      args.integers("collective-sizes", "4,16,64,256,1024,4096,16384,65536,262144,1048576", 0, INT_MAX);
  o.large_from = args.integer("large-from", 8192, 0, INT_MAX);
  o.iterations = static_cast<int>(args.integer("iterations", 10000, 1, 100000000));
  o.iterations_large = static_cast<int>(args.integer("iterations-large", 1000, 1, 100000000));
  o.warmup = static_cast<int>(args.integer("warmup", 100, 0, 100000000));
  o.warmup_large = static_cast<int>(args.integer("warmup-large", 10, 0, 100000000));
  o.bw_iterations = static_cast<int>(args.integer("bw-iterations", 100, 1, 100000000));
  o.bw_iterations_large = static_cast<int>(args.integer("bw-iterations-large", 20, 1, 100000000));
  o.bw_warmup = static_cast<int>(args.integer("bw-warmup", 10, 0, 100000000));
  o.bw_warmup_large = static_cast<int>(args.integer("bw-warmup-large", 2, 0, 100000000));
  o.coll_iterations = static_cast<int>(args.integer("collective-iterations", 1000, 1, 100000000));
  o.coll_iterations_large = static_cast<int>(args.integer("collective-iterations-large", 100, 1, 100000000));
  o.coll_warmup = static_cast<int>(args.integer("collective-warmup", 100, 0, 100000000));
  o.coll_warmup_large = static_cast<int>(args.integer("collective-warmup-large", 10, 0, 100000000));
  o.window = static_cast<int>(args.integer("window", 64, 1, 4096));
  o.buffers = args.words("buffers", "host", {"host", "device"});
  o.backend = args.words("backend", "opencl", {"opencl", "cuda"}).front();
  o.device = static_cast<int>(args.integer("device", 0, 0, 1023));
  o.path = args.words("path", "auto", {"auto", "staged", "direct"}).front();
  o.node = static_cast<int>(args.integer("node", -1, -1, 4095));
  o.bind = args.words("bind", "none", {"none", "core"}).front();
  o.budget = args.real("budget", 0.0, 0.0, 1e7);
  o.inventory_file = args.text("inventory", "");
  o.corrupt = args.flag("corrupt");
  args.finish();
  if (o.node >= 0) check_node(o.node);
  return o;
}

std::string read_file(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path);
  if (!in) throw BadArgument("--inventory '" + path + "' cannot be read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int run_network(Args& args) {
  const Options o = parse(args);
  const std::string inventory = read_file(o.inventory_file);
  std::string why;
  g = M::load(why);
  if (!g) throw NotAvailable("MPI: " + why + " (set XFERLAB_MPI_LIB to an MPI standard-ABI library, libmpi_abi.so)");
  int argc = 0;
  char** argv = nullptr;
  ok(g->Init(&argc, &argv), "MPI_Init");
  ok(g->Comm_set_errhandler(M::COMM_WORLD, M::ERRORS_RETURN), "MPI_Comm_set_errhandler");
  World w;
  try {
    ok(g->Comm_rank(M::COMM_WORLD, &w.rank), "MPI_Comm_rank");
    ok(g->Comm_size(M::COMM_WORLD, &w.size), "MPI_Comm_size");
    if (std::getenv("XFERLAB_PROBE_FAULT_RANK") ? std::atoi(std::getenv("XFERLAB_PROBE_FAULT_RANK")) == w.rank
                                                : w.rank == 0)
      fault::arm();
    M::Comm local = M::COMM_NULL;
    ok(g->Comm_split_type(M::COMM_WORLD, M::COMM_TYPE_SHARED, 0, M::INFO_NULL, &local), "MPI_Comm_split_type");
    ok(g->Comm_rank(local, &w.local_rank), "MPI_Comm_rank");
    g->Comm_free(&local);
    std::string bound = "";
    if (o.bind == "core") {
      const auto cpus = allowed_cpus();
      if (!cpus.empty() && !pin_to_cpu(cpus[static_cast<size_t>(w.local_rank) % cpus.size()])) bound = "refused";
    }
    char name[M::MAX_PROCESSOR_NAME] = {0};
    int length = 0;
    ok(g->Get_processor_name(name, &length), "MPI_Get_processor_name");
    w.hosts = all_strings(w, std::string(name, static_cast<size_t>(length)));
    const auto cpus = all_strings(w, cpu_list() + (bound.empty() ? "" : " (binding refused)"));
    const auto inventories = all_strings(w, inventory);

    // The memory kinds this MPI says it can move (MPI 4.1's "mpi_memory_alloc_kinds" info key of
    // MPI_COMM_WORLD, e.g. "mpi,system,cuda:device"): the standard way to ask for GPU support.
    std::string alloc_kinds = "";
    {
      M::Info info = M::INFO_NULL;
      if (g->Comm_get_info(M::COMM_WORLD, &info) == M::SUCCESS) {
        char value[M::MAX_INFO_VAL + 1] = {0};
        int length = M::MAX_INFO_VAL, flag = 0;
        if (g->Info_get_string(info, "mpi_memory_alloc_kinds", &length, value, &flag) == M::SUCCESS && flag)
          alloc_kinds = value;
        g->Info_free(&info);
      }
    }
    // Device memory: every rank opens its backend; the paths it can take.
    std::unique_ptr<Backend> backend;
    std::vector<std::string> paths;
    if (std::find(o.buffers.begin(), o.buffers.end(), "host") != o.buffers.end()) paths.push_back("host");
    std::string device_json = "null", gpu_aware = "no";
    if (std::find(o.buffers.begin(), o.buffers.end(), "device") != o.buffers.end()) {
      backend = make_backend(o.backend);
      if (backend->device_count() <= o.device)
        throw BadArgument("--device " + std::to_string(o.device) + ": the " + o.backend + " backend has " +
                          std::to_string(backend->device_count()) + " device(s)");
      backend->open(o.device);
      device_json = backend->describe(o.device);
      const bool kinds_say = alloc_kinds.find("cuda") != std::string::npos;
      const bool query_says = g->Query_cuda_support && g->Query_cuda_support() == 1;
      const bool aware = o.backend == "cuda" && (kinds_say || query_says);
      gpu_aware = o.backend == "opencl" ? "no (no MPI moves OpenCL buffers itself)"
                  : kinds_say           ? "yes (mpi_memory_alloc_kinds lists cuda)"
                  : query_says          ? "yes (MPIX_Query_cuda_support)"
                                        : "no (mpi_memory_alloc_kinds '" + alloc_kinds + "' lists no cuda kind)";
      if (o.path == "direct" && !aware) throw BadArgument("--path direct: this MPI does not move device memory itself (" + gpu_aware + ")");
      if (o.path != "direct") paths.push_back("staged");
      if (o.path == "direct" || (o.path == "auto" && aware)) paths.push_back("direct");
    }
    // Where host buffers bound to --node land: a probe buffer like theirs, touched, its pages located.
    std::string node_pages = "null", node_binding = "";
    if (o.node >= 0) {
      RegionOptions r;
      r.bytes = 1 << 20;
      r.node = o.node;
      auto region = Region::map(r);
      std::memset(region->data(), 1, r.bytes);
      node_binding = region->binding();
      node_pages = page_nodes_json(page_nodes(region->data(), r.bytes));
    }
    if (w.rank == 0) {
      char library[M::MAX_LIBRARY_VERSION_STRING] = {0};
      int lib_length = 0, major = 0, minor = 0, abi_major = 0, abi_minor = 0;
      ok(g->Get_library_version(library, &lib_length), "MPI_Get_library_version");
      ok(g->Get_version(&major, &minor), "MPI_Get_version");
      ok(g->Abi_get_version(&abi_major, &abi_minor), "MPI_Abi_get_version");
      std::string first_line(library, static_cast<size_t>(std::max(lib_length, 0)));
      first_line = first_line.substr(0, first_line.find('\n'));
      std::string hosts = "[";
      for (int r = 0; r < w.size; ++r) {
        JsonLine h;
        h.integer("rank", r).str("host", w.hosts[r]).str("cpus", cpus[r]);
        if (!inventories[r].empty()) h.raw("inventory", inventories[r]);
        hosts += (r ? "," : "") + h.text();
      }
      std::string path_list = "[";
      for (size_t i = 0; i < paths.size(); ++i) path_list += (i ? "," : "") + json_text(paths[i]);
      JsonLine()
          .str("record", "setup")
          .integer("ranks", w.size)
          .str("library", first_line)
          .str("library_path", M::library())
          .str("mpi_version", std::to_string(major) + "." + std::to_string(minor))
          .str("abi_version", std::to_string(abi_major) + "." + std::to_string(abi_minor))
          .str("clock", "std::chrono::steady_clock")
          .integer("node", o.node)
          .raw("node_pages", node_pages)
          .str("node_binding_error", node_binding)
          .str("bind", o.bind)
          .raw("paths", path_list + "]")
          .str("gpu_aware", gpu_aware)
          .str("memory_alloc_kinds", alloc_kinds)
          .raw("device", device_json)
          .raw("hosts", hosts + "]")
          .emit();
    }
    // Point-to-point partners of rank 0: the first other rank on its host, the first on another.
    std::vector<int> partners;
    for (int r = 1; r < w.size; ++r)
      if (w.same_host(0, r)) {
        partners.push_back(r);
        break;
      }
    for (int r = 1; r < w.size; ++r)
      if (!w.same_host(0, r)) {
        partners.push_back(r);
        break;
      }
    const auto start = Clock::now();
    long long skipped = 0;
    bool stopped = false;
    auto go = [&]() {  // rank 0 decides whether the next point starts (the budget), every rank follows
      int flag = stopped ? 0 : 1;
      if (w.rank == 0 && o.budget > 0 && std::chrono::duration<double>(Clock::now() - start).count() >= o.budget) flag = 0;
      ok(g->Bcast(&flag, 1, M::INT, 0, M::COMM_WORLD), "MPI_Bcast");
      stopped = !flag;
      skipped += stopped;
      return flag == 1;
    };
    for (const std::string& path : paths) {
      Runner runner(o, w, path == "host" ? nullptr : backend.get(), path);
      for (const std::string& test : o.tests) {
        if (!collective(test) && w.size < 2) continue;
        if (test == "barrier" && path != "host") continue;  // no buffer: the host path's figure is the one
        const auto& sizes = collective(test) ? o.collective_sizes : o.sizes;
        for (long long size : test == "barrier" ? std::vector<long long>{0} : sizes) {
          if ((test == "bw" || test == "bibw" || test == "mbw_mr") && size == 0) continue;  // OSU starts these at 1 B
          if ((test == "allreduce" || test == "reduce") && size < 4) continue;             // below one float
          if (test == "latency" || test == "bw" || test == "bibw") {
            for (int b : partners)
              if (go()) runner.run(test, size, 0, b);
          } else if (test == "multi_lat" || test == "mbw_mr") {
            if (go()) runner.run_pairs(test, size);
          } else if (go()) {
            runner.run_collective(test, size);
          }
        }
      }
    }
    if (w.rank == 0 && skipped)
      JsonLine().str("record", "stopped").str("reason", "the budget was used up").integer("points_skipped", skipped).emit();
  } catch (const BadArgument& error) {
    std::fprintf(stderr, "xferlab-probe: network: %s\n", error.what());
    std::fflush(stderr);
    g->Abort(M::COMM_WORLD, 2);
    return 2;
  } catch (const NotAvailable& error) {
    std::fprintf(stderr, "xferlab-probe: network: not available: %s\n", error.what());
    std::fflush(stderr);
    g->Abort(M::COMM_WORLD, 3);
    return 3;
  } catch (const std::exception& error) {
    // Another rank may be waiting in a call with this one: end them all rather than hang.
    std::fprintf(stderr, "xferlab-probe: network: rank %d: %s\n", w.rank, error.what());
    std::fflush(stderr);
    g->Abort(M::COMM_WORLD, 1);
    return 1;
  }
  g->Finalize();
  return 0;
}

}  // namespace xferlab
