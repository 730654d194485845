// `xferlab-probe network`'s collectives (OSU's osu_allreduce, osu_reduce, osu_bcast, osu_alltoall,
// osu_allgather, osu_barrier): every rank times each call, a barrier between calls; inputs known to
// every rank, so that each checks what it holds after the last call.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "network.hpp"

namespace xferlab::net {

void Runner::run_collective(const std::string& test, long long size) {
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

}  // namespace xferlab::net
