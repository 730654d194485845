// `xferlab-probe network`'s point-to-point tests (OSU's osu_latency, osu_bw, osu_bibw, osu_multi_lat,
// osu_mbw_mr) and what every test ends with: gathering the samples on rank 0, printing them, and the
// validation record. Where each is timed: pingpong() one clock read per batch of iterations (as OSU, which
// reads it once around the loop), window() one per window (a read is ~25 ns, a window tens of µs).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "network.hpp"

namespace xferlab::net {

// One (test, size, pair): the timed loop, then validation; rank 0 prints the records.
void Runner::run(const std::string& test, long long size, int a, int b) {
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
void Runner::run_pairs(const std::string& test, long long size) {
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
  const int n = samples_for(test, iters);  // samples per pair: one per batch (multi_lat) or per window (mbw_mr)
  mine.resize(static_cast<size_t>(n), 0.0);
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
  std::vector<double> seconds(static_cast<size_t>(n), 0.0);
  if (w_.rank == 0) {
    if (test == "multi_lat") {  // one record per pair
      for (int r = 0; r < half; ++r) {
        std::vector<double> s(all.begin() + static_cast<long>(r) * n, all.begin() + static_cast<long>(r + 1) * n);
        emit_samples(test, size, w_.pair_kind(r, r + half), {r, r + half}, s, r, iters, warm, half);
      }
    } else {  // the slowest pair's window, iteration by iteration
      for (int r = 0; r < half; ++r)
        for (int i = 0; i < n; ++i)
          seconds[i] = std::max(seconds[i], all[static_cast<size_t>(r) * n + i]);
      emit_samples(test, size, pair, pairs_ranks, seconds, -1, iters, warm, half);
    }
  }
  validate(test, size, pair, wrong);
}

// Rank a times; a sends first. Returns the one-way samples at a (one per batch of iterations), empty elsewhere.
// The loop is OSU's: no clock read, store or branch between a batch's iterations beyond the staging calls
// (inline no-ops for host memory) and each call's return code.
std::vector<double> Runner::pingpong(long long size, int a, int b, int warm, int iters, long long& wrong) {
  const int me = w_.rank;
  if (me != a && me != b) return {};
  const size_t n = static_cast<size_t>(size);
  Backend* mine = side_backend(a);
  Buffer send(o_, mine, path_, n, 1), recv(o_, mine, path_, n, 1);
  fill(send, me, size, n);
  recv.write(std::vector<unsigned char>(n, 0xEE));
  const int other = me == a ? b : a, c = count_of(size);
  void *sbuf = send.mpi(), *rbuf = recv.mpi();
  auto round_trips = [&](int count) {
    if (me == a) {
      for (int i = 0; i < count; ++i) {
        send.before_send(n);
        ok(g->Send(sbuf, c, M::CHAR, other, kTagData, M::COMM_WORLD), "MPI_Send");
        ok(g->Recv(rbuf, c, M::CHAR, other, kTagData, M::COMM_WORLD, M::STATUS_IGNORE), "MPI_Recv");
        recv.after_receive(n);
      }
    } else {
      for (int i = 0; i < count; ++i) {
        ok(g->Recv(rbuf, c, M::CHAR, other, kTagData, M::COMM_WORLD, M::STATUS_IGNORE), "MPI_Recv");
        recv.after_receive(n);
        send.before_send(n);
        ok(g->Send(sbuf, c, M::CHAR, other, kTagData, M::COMM_WORLD), "MPI_Send");
      }
    }
  };
  round_trips(warm);
  const int batches = latency_batches(iters), per = iters / batches;
  std::vector<Clock::time_point> t(static_cast<size_t>(batches) + 1);
  t[0] = Clock::now();
  for (int k = 0; k < batches; ++k) {
    round_trips(per);
    t[static_cast<size_t>(k) + 1] = Clock::now();
  }
  wrong = check(recv, other, size, n);
  if (me != a) return {};
  std::vector<double> out(static_cast<size_t>(batches));
  for (int k = 0; k < batches; ++k) out[k] = std::chrono::duration<double>(t[k + 1] - t[k]).count() / (2.0 * per);
  return out;
}

// bw (a sends windows to b, b acks each) or bibw (both send a window to each other). Samples at a.
std::vector<double> Runner::window(long long size, int a, int b, int warm, int iters, long long& wrong, bool both) {
  const int me = w_.rank;
  if (me != a && me != b) return {};
  const size_t n = static_cast<size_t>(size);
  const int win = o_.window, c = count_of(size), other = me == a ? b : a;
  Backend* mine = side_backend(a);
  Buffer send(o_, mine, path_, n, win), recv(o_, mine, path_, n, win);
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

void Runner::fill(Buffer& b, int rank, long long size, size_t n) {
  std::vector<unsigned char> bytes(n);
  for (size_t k = 0; k < n; ++k) bytes[k] = pattern(rank, size, k);
  b.write(bytes);
}

long long Runner::check(Buffer& b, int from, long long size, size_t n) {
  auto got = b.read(n);
  if (o_.corrupt && w_.rank == 1 && n > 0) got[n / 2] ^= 0x40;
  for (size_t k = 0; k < n; ++k)
    if (got[k] != pattern(from, size, k)) return static_cast<long long>(k);
  return -1;
}

// Every rank's `mine` (all of one length) at rank 0, rank after rank.
std::vector<double> Runner::gather(const std::vector<double>& mine) {
  std::vector<double> all(w_.rank == 0 ? mine.size() * w_.size : 0);
  ok(g->Gather(mine.data(), static_cast<int>(mine.size()), M::DOUBLE, all.data(), static_cast<int>(mine.size()),
               M::DOUBLE, 0, M::COMM_WORLD),
     "MPI_Gather");
  return all;
}

void Runner::report(const std::string& test, long long size, const std::string& pair, const std::vector<int>& ranks,
            const std::vector<double>& seconds, int timer, int iters, int warm, long long wrong) {
  // The timing rank's samples reach rank 0 (when rank 0 is not the timer).
  std::vector<double> s = seconds;
  const int n = samples_for(test, iters);
  if (timer != 0) {
    if (w_.rank == timer) ok(g->Send(s.data(), n, M::DOUBLE, 0, kTagAck, M::COMM_WORLD), "MPI_Send");
    if (w_.rank == 0) {
      s.resize(static_cast<size_t>(n));
      ok(g->Recv(s.data(), n, M::DOUBLE, timer, kTagAck, M::COMM_WORLD, M::STATUS_IGNORE), "MPI_Recv");
    }
  }
  if (w_.rank == 0) emit_samples(test, size, pair, ranks, s, timer, iters, warm, 1);
  validate(test, size, pair, wrong);
}

void Runner::emit_samples(const std::string& test, long long size, const std::string& pair, const std::vector<int>& ranks,
                  const std::vector<double>& seconds, int rank, int iters, int warm, int pairs,
                          const std::vector<std::pair<std::string, std::string>>& more) {
  std::string r = "[";
  for (size_t i = 0; i < ranks.size(); ++i) r += (i ? "," : "") + std::to_string(ranks[i]);
  JsonLine line;
  line.str("record", "samples").str("test", test).integer("size_bytes", size).str("pair", pair).raw("ranks", r + "]");
  if (rank >= 0) line.integer("rank", rank);
  // buffer: host or device when every rank's buffers are of that kind, "mixed" when not; buffers: OSU's
  // notation, the sender's kind first (a collective's: one kind).
  const std::string kinds = buffers_of(test);
  const std::string buffer = kinds == "H H" || kinds == "H" ? "host" : kinds == "D D" || kinds == "D" ? "device" : "mixed";
  line.str("buffer", buffer).str("buffers", kinds).str("path", path_).integer("iterations", iters).integer("warmup", warm);
  if (pingpong_test(test)) line.integer("per_sample", iters / latency_batches(iters));
  if (windowed(test)) line.integer("window", o_.window);
  if (pairs > 0) line.integer("pairs", pairs);
  line.raw("seconds", seconds_json(seconds));
  for (const auto& [key, json] : more) line.raw(key.c_str(), json);
  line.emit();
}

// Rank 0 learns every rank's first wrong byte and prints the point's validation record.
void Runner::validate(const std::string& test, long long size, const std::string& pair, long long wrong) {
  int mine[2] = {wrong >= 0 ? 0 : 1, static_cast<int>(std::min<long long>(wrong, INT_MAX))};
  std::vector<int> all(w_.rank == 0 ? 2 * w_.size : 0);
  ok(g->Gather(mine, 2, M::INT, all.data(), 2, M::INT, 0, M::COMM_WORLD), "MPI_Gather");
  if (w_.rank != 0) {
    // The point ends for every rank once rank 0 has printed its validation: a rank that dies after its
    // N-th point (an injected fault, or a real one) cannot take that line with it.
    ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
    fault::count_sample();
    return;
  }
  int bad_rank = -1;
  for (int r = 0; r < w_.size && bad_rank < 0; ++r)
    if (!all[2 * r]) bad_rank = r;
  JsonLine line;
  line.str("record", "validation").str("test", test).integer("size_bytes", size).str("pair", pair).str("path", path_);
  line.str("buffers", buffers_of(test));
  line.boolean("ok", bad_rank < 0);
  if (bad_rank >= 0)
    line.str("what", "rank " + std::to_string(bad_rank) + " received a wrong byte at offset " +
                         std::to_string(all[2 * bad_rank + 1]));
  else
    line.str("what", test == "barrier" || test == "ibarrier" ? "no data to check" : "every receiver holds the bytes sent");
  line.emit();
  ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
}

}  // namespace xferlab::net
