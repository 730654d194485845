// `xferlab-probe network`'s one-sided tests, with the definitions of the OSU Micro-Benchmarks 7
// (osu_put_latency, osu_get_latency, osu_put_bw, osu_get_bw, osu_put_bibw; mpi/one-sided/ and
// osu_util.h of OMB 7.4): rank a (the origin, rank 0) puts into or gets from the window of rank b
// (the target) in a communicator of the pair, so that the other ranks of a bigger job take no part.
//
// The window is OSU's -w: `allocate` (MPI_Win_allocate: memory MPI chose, OSU's default) or `create`
// (MPI_Win_create over the probe's page-aligned host buffer, bound to --node). The synchronization is
// OSU's -s, one sample per iteration (one clock read per iteration on the origin, as the other tests):
//   lock         MPI_Win_lock(shared) / the op(s) / MPI_Win_unlock, every iteration
//   flush        one MPI_Win_lock(shared) around the loop; the op(s) + MPI_Win_flush (OSU's default)
//   flush_local  as flush with MPI_Win_flush_local: the origin's buffer is reusable, the data may be in flight
//   lock_all     MPI_Win_lock_all / the op(s) / MPI_Win_unlock_all, every iteration
//   fence        MPI_Win_fence before and after; the latency tests are a ping-pong (the target puts or
//                gets back in its own epoch), sample = the round / 2, as OSU's
//   pscw         MPI_Win_post/start/complete/wait; the latency tests a ping-pong as with fence
// The latency tests do one op of `size` bytes per iteration; the bandwidth tests `window` ops of
// `size` bytes at consecutive offsets (OSU's window of 64); put_bibw both ranks at once (fence or pscw,
// as OSU's osu_put_bibw). Iteration counts are the latency and bandwidth tests' (OSU 7 takes the same).
//
// Validation: the origin's buffer holds its pattern (put) and the target's window the target's (get);
// the other side starts with other bytes. After the point, every rank that received data (the target
// of puts, the origin of gets, both in a ping-pong or put_bibw) checks all `window` x `size` bytes.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "network.hpp"
#include "probe.hpp"

namespace xferlab::net {

namespace {

std::string sync_of(const Options& o, const std::string& test) {
  if (!o.rma_sync.empty()) return o.rma_sync;
  return test == "put_bibw" ? "pscw" : "flush";  // OSU's defaults
}

// A window of the pair's communicator: MPI's memory (allocate) or the probe's host buffer (create).
class Window {
 public:
  Window(const Options& o, M::Comm comm, size_t bytes, const std::vector<unsigned char>& initial)
      : bytes_(bytes) {
    if (o.rma_window == "create") {
      memory_ = std::make_unique<Buffer>(o, nullptr, "host", bytes, 1);
      memory_->write(initial);
      base_ = memory_->mpi();
      ok(g->Win_create(base_, static_cast<M::Aint>(bytes), 1, M::INFO_NULL, comm, &win_), "MPI_Win_create");
    } else {
      ok(g->Win_allocate(static_cast<M::Aint>(bytes), 1, M::INFO_NULL, comm, &base_, &win_), "MPI_Win_allocate");
      if (bytes) std::memcpy(base_, initial.data(), bytes);
    }
    ok(g->Win_set_errhandler(win_, M::ERRORS_RETURN), "MPI_Win_set_errhandler");
  }
  ~Window() {
    if (win_ != M::WIN_NULL) g->Win_free(&win_);
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  M::Win handle() const { return win_; }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> out(bytes_);
    if (bytes_) std::memcpy(out.data(), base_, bytes_);
    return out;
  }

 private:
  size_t bytes_;
  std::unique_ptr<Buffer> memory_;
  void* base_ = nullptr;
  M::Win win_ = M::WIN_NULL;
};

struct Point {
  const Options& o;
  std::string test, sync;
  long long size;
  int me, other;  // world ranks
  bool origin;
};

// The timed loop of one point at a rank of the pair; the samples at the origin, and the first wrong byte
// this rank received (-1 if none, or if it received nothing).
std::vector<double> timed(const Point& p, M::Comm pair, int warm, int iters, long long& wrong) {
  const bool bw = p.test != "put_latency" && p.test != "get_latency", put = p.test.rfind("put", 0) == 0;
  const bool both = p.test == "put_bibw", active = p.sync == "fence" || p.sync == "pscw";
  const bool pingpong = active && !bw;  // the target answers in its own epoch (OSU's fence and pscw latency)
  const int ops = bw ? p.o.window : 1, c = count_of(p.size), peer = p.origin ? 1 : 0;  // ranks of `pair`
  const size_t n = static_cast<size_t>(p.size), span = n * static_cast<size_t>(ops);
  std::vector<unsigned char> mine(span), blank(span, 0xEE);
  for (size_t k = 0; k < span; ++k) mine[k] = pattern(p.me, p.size, k);
  Buffer local(p.o, nullptr, "host", span, 1);  // put: the source; get: the destination
  local.write(put ? mine : blank);
  Window window(p.o, pair, span, put ? blank : mine);
  const M::Win w = window.handle();
  M::Group others = M::GROUP_NULL;
  if (p.sync == "pscw") {
    M::Group all = M::GROUP_NULL;
    ok(g->Comm_group(pair, &all), "MPI_Comm_group");
    ok(g->Group_incl(all, 1, &peer, &others), "MPI_Group_incl");
    g->Group_free(&all);
  }
  auto* bytes = static_cast<unsigned char*>(local.mpi());
  auto access = [&]() {  // this rank's ops of one iteration
    for (int j = 0; j < ops; ++j) {
      const size_t at = static_cast<size_t>(j) * n;
      if (put)
        ok(g->Put(bytes + at, c, M::CHAR, peer, static_cast<M::Aint>(at), c, M::CHAR, w), "MPI_Put");
      else
        ok(g->Get(bytes + at, c, M::CHAR, peer, static_cast<M::Aint>(at), c, M::CHAR, w), "MPI_Get");
    }
  };
  auto fence = [&]() { ok(g->Win_fence(0, w), "MPI_Win_fence"); };
  auto start = [&]() { ok(g->Win_start(others, 0, w), "MPI_Win_start"); };
  auto complete = [&]() { ok(g->Win_complete(w), "MPI_Win_complete"); };
  auto post = [&]() { ok(g->Win_post(others, 0, w), "MPI_Win_post"); };
  auto wait = [&]() { ok(g->Win_wait(w), "MPI_Win_wait"); };
  const bool held = p.origin && (p.sync == "flush" || p.sync == "flush_local");
  ok(g->Barrier(pair), "MPI_Barrier");  // every window is filled before any access
  if (held) ok(g->Win_lock(M::LOCK_SHARED, peer, 0, w), "MPI_Win_lock");
  std::vector<Clock::time_point> t(static_cast<size_t>(iters) + 1);
  for (int i = 0; i < warm + iters; ++i) {
    if (p.origin && i >= warm) t[static_cast<size_t>(i - warm)] = Clock::now();
    if (p.sync == "lock") {
      if (!p.origin) continue;
      ok(g->Win_lock(M::LOCK_SHARED, peer, 0, w), "MPI_Win_lock");
      access();
      ok(g->Win_unlock(peer, w), "MPI_Win_unlock");
    } else if (p.sync == "flush" || p.sync == "flush_local") {
      if (!p.origin) continue;
      access();
      if (p.sync == "flush")
        ok(g->Win_flush(peer, w), "MPI_Win_flush");
      else
        ok(g->Win_flush_local(peer, w), "MPI_Win_flush_local");
    } else if (p.sync == "lock_all") {
      if (!p.origin) continue;
      ok(g->Win_lock_all(0, w), "MPI_Win_lock_all");
      access();
      ok(g->Win_unlock_all(w), "MPI_Win_unlock_all");
    } else if (p.sync == "fence") {
      fence();
      if (p.origin || both) access();
      fence();
      if (pingpong) {
        if (!p.origin) access();
        fence();
      }
    } else if (both) {  // pscw, both ranks expose and access at once (osu_put_bibw)
      post();
      start();
      access();
      complete();
      wait();
    } else if (p.origin) {  // pscw
      start();
      access();
      complete();
      if (pingpong) {
        post();
        wait();
      }
    } else {
      post();
      wait();
      if (pingpong) {
        start();
        access();
        complete();
      }
    }
  }
  t[static_cast<size_t>(iters)] = Clock::now();
  if (held) ok(g->Win_unlock(peer, w), "MPI_Win_unlock");
  ok(g->Barrier(pair), "MPI_Barrier");  // every access is complete at the target
  if (others != M::GROUP_NULL) g->Group_free(&others);
  const bool received = put ? (!p.origin || both || pingpong) : (p.origin || pingpong);
  if (received) {
    auto got = put ? window.read() : local.read(span);
    if (p.o.corrupt && span > 0) got[span / 2] ^= 0x40;  // tests: a receiver sees one wrong byte
    for (size_t k = 0; k < span && wrong < 0; ++k)
      if (got[k] != pattern(p.other, p.size, k)) wrong = static_cast<long long>(k);
  }
  if (!p.origin) return {};
  std::vector<double> out(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i)
    out[static_cast<size_t>(i)] = std::chrono::duration<double>(t[i + 1] - t[i]).count() / (pingpong ? 2 : 1);
  return out;
}

}  // namespace

// One (one-sided test, size, pair): every rank splits off the pair's communicator (the others a
// communicator of their own, freed at once), the pair runs the point, rank 0 prints the records.
void Runner::run_rma(const std::string& test, long long size, int a, int b) {
  const bool bw = test != "put_latency" && test != "get_latency";
  const std::string counts = bw ? "bw" : "latency";  // OSU 7's one-sided counts are its latency and bw counts
  const int warm = iterations_for(o_, counts, size, true), iters = iterations_for(o_, counts, size, false);
  const std::string sync = sync_of(o_, test);
  const int me = w_.rank;
  const bool in = me == a || me == b;
  M::Comm pair = M::COMM_NULL;
  ok(g->Comm_split(M::COMM_WORLD, in ? 0 : 1, me == a ? 0 : 1, &pair), "MPI_Comm_split");
  std::vector<double> seconds;
  long long wrong = -1;
  if (in) seconds = timed(Point{o_, test, sync, size, me, me == a ? b : a, me == a}, pair, warm, iters, wrong);
  g->Comm_free(&pair);
  const std::string pair_kind = w_.pair_kind(a, b);
  if (me == a) {  // rank 0 (run_network passes a = 0)
    JsonLine line;
    line.str("record", "samples").str("test", test).integer("size_bytes", size).str("pair", pair_kind);
    line.raw("ranks", "[" + std::to_string(a) + "," + std::to_string(b) + "]").integer("rank", a);
    line.str("buffer", "host").str("buffers", buffers_of(test)).str("path", path_).integer("iterations", iters);
    line.integer("warmup", warm);
    if (bw) line.integer("window", o_.window);
    line.str("rma_sync", sync).str("rma_window", o_.rma_window).raw("seconds", seconds_json(seconds)).emit();
  }
  validate(test, size, pair_kind, wrong);
}

}  // namespace xferlab::net
