// `xferlab-probe network`'s blocking collectives (OSU's osu_allreduce, osu_reduce, osu_bcast,
// osu_alltoall, osu_allgather, osu_barrier, osu_gather, osu_scatter, osu_reduce_scatter,
// osu_alltoallv, osu_allgatherv): every rank times each call, a barrier between calls; inputs known
// to every rank, so that each checks what it holds after the last call. The Collective (one
// operation's buffers, inputs, call and check) serves the non-blocking tests too (network_nbc.cpp).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "network_coll.hpp"

namespace xferlab::net {

namespace {

bool spread(const std::string& op) { return op == "alltoall" || op == "alltoallv" || op == "scatter"; }

}  // namespace

Collective::Collective(const Options& o, const World& w, Backend* backend, const std::string& path, const std::string& op,
                       long long size)
    : op_(op), size_(size), n_(w.size), me_(w.rank) {
  floats_ = op == "allreduce" || op == "reduce" || op == "reduce_scatter";
  const size_t s = static_cast<size_t>(size), all = s * static_cast<size_t>(n_);
  if (op == "barrier") {
    in_bytes_ = out_bytes_ = 0;
  } else if (op == "reduce_scatter") {  // OSU's size is the whole vector; each rank gets an equal block of it
    block_ = count_of(size / 4 / n_);
    in_bytes_ = s;
    out_bytes_ = static_cast<size_t>(block_) * 4;
  } else {
    in_bytes_ = spread(op) ? all : s;
    out_bytes_ = op == "alltoall" || op == "alltoallv" || op == "allgather" || op == "allgatherv" || op == "gather" ? all : s;
  }
  if (op == "alltoallv" || op == "allgatherv") count_of(static_cast<long long>(all));  // the displacements are ints too
  c_ = op == "reduce_scatter" ? block_ : count_of(floats_ ? size / 4 : size);
  if (op == "alltoallv" || op == "allgatherv")
    for (int j = 0; j < n_; ++j) {
      counts_.push_back(c_);
      displs_.push_back(j * c_);
    }
  in_ = std::make_unique<Buffer>(o, backend, path, in_bytes_, 1);
  out_ = std::make_unique<Buffer>(o, backend, path, out_bytes_, 1);
  // Inputs: floats (r + 1) + i % 13 for the reductions; pattern bytes of the sender otherwise
  // (alltoall, scatter: block j of rank r carries pattern(r * n + j)).
  input_.assign(in_bytes_, 0);
  if (floats_) {
    for (size_t i = 0; i + 4 <= in_bytes_; i += 4) {
      const float v = static_cast<float>(me_ + 1 + (i / 4) % 13);
      std::memcpy(input_.data() + i, &v, 4);
    }
  } else {
    for (size_t k = 0; k < in_bytes_; ++k)
      input_[k] = spread(op) ? pattern(me_ * n_ + static_cast<int>(k / s), size, k % s) : pattern(me_, size, k);
  }
  reset();
}

void Collective::reset() {
  if (op_ == "bcast" && me_ != 0)
    in_->write(std::vector<unsigned char>(in_bytes_, 0xEE));
  else
    in_->write(input_);
  out_->write(std::vector<unsigned char>(out_bytes_, 0xEE));
}

void Collective::call() {
  if (op_ == "barrier") {
    ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
    return;
  }
  in_->before_send(in_bytes_);
  void *in = in_->mpi(), *out = out_->mpi();
  const auto W = M::COMM_WORLD;
  if (op_ == "allreduce")
    ok(g->Allreduce(in, out, c_, M::FLOAT, M::SUM, W), "MPI_Allreduce");
  else if (op_ == "reduce")
    ok(g->Reduce(in, out, c_, M::FLOAT, M::SUM, 0, W), "MPI_Reduce");
  else if (op_ == "reduce_scatter")
    ok(g->Reduce_scatter_block(in, out, c_, M::FLOAT, M::SUM, W), "MPI_Reduce_scatter_block");
  else if (op_ == "bcast")
    ok(g->Bcast(in, c_, M::CHAR, 0, W), "MPI_Bcast");
  else if (op_ == "alltoall")
    ok(g->Alltoall(in, c_, M::CHAR, out, c_, M::CHAR, W), "MPI_Alltoall");
  else if (op_ == "alltoallv")
    ok(g->Alltoallv(in, counts_.data(), displs_.data(), M::CHAR, out, counts_.data(), displs_.data(), M::CHAR, W),
       "MPI_Alltoallv");
  else if (op_ == "allgather")
    ok(g->Allgather(in, c_, M::CHAR, out, c_, M::CHAR, W), "MPI_Allgather");
  else if (op_ == "allgatherv")
    ok(g->Allgatherv(in, c_, M::CHAR, out, counts_.data(), displs_.data(), M::CHAR, W), "MPI_Allgatherv");
  else if (op_ == "gather")
    ok(g->Gather(in, c_, M::CHAR, out, c_, M::CHAR, 0, W), "MPI_Gather");
  else if (op_ == "scatter")
    ok(g->Scatter(in, c_, M::CHAR, out, c_, M::CHAR, 0, W), "MPI_Scatter");
  else
    throw std::logic_error("no blocking call for " + op_);
  finish();
}

void Collective::start(M::Request* r) {
  if (op_ == "barrier") {
    ok(g->Ibarrier(M::COMM_WORLD, r), "MPI_Ibarrier");
    return;
  }
  in_->before_send(in_bytes_);
  void *in = in_->mpi(), *out = out_->mpi();
  const auto W = M::COMM_WORLD;
  if (op_ == "allreduce")
    ok(g->Iallreduce(in, out, c_, M::FLOAT, M::SUM, W, r), "MPI_Iallreduce");
  else if (op_ == "reduce")
    ok(g->Ireduce(in, out, c_, M::FLOAT, M::SUM, 0, W, r), "MPI_Ireduce");
  else if (op_ == "bcast")
    ok(g->Ibcast(in, c_, M::CHAR, 0, W, r), "MPI_Ibcast");
  else if (op_ == "alltoall")
    ok(g->Ialltoall(in, c_, M::CHAR, out, c_, M::CHAR, W, r), "MPI_Ialltoall");
  else if (op_ == "allgather")
    ok(g->Iallgather(in, c_, M::CHAR, out, c_, M::CHAR, W, r), "MPI_Iallgather");
  else if (op_ == "gather")
    ok(g->Igather(in, c_, M::CHAR, out, c_, M::CHAR, 0, W, r), "MPI_Igather");
  else if (op_ == "scatter")
    ok(g->Iscatter(in, c_, M::CHAR, out, c_, M::CHAR, 0, W, r), "MPI_Iscatter");
  else
    throw std::logic_error("no non-blocking call for " + op_);
}

void Collective::finish() {
  if (op_ == "barrier") return;
  if (op_ == "bcast")
    in_->after_receive(in_bytes_);
  else
    out_->after_receive(out_bytes_);
}

long long Collective::check(bool corrupt) {
  if (op_ == "barrier" || ((op_ == "reduce" || op_ == "gather") && me_ != 0)) return -1;
  auto got = op_ == "bcast" ? in_->read(in_bytes_) : out_->read(out_bytes_);
  if (corrupt && me_ == 1 && !got.empty()) got[got.size() / 2] ^= 0x40;
  const size_t s = static_cast<size_t>(size_);
  for (size_t k = 0; k < got.size(); ++k) {
    if (floats_) {
      if (k % 4) continue;
      // reduce_scatter: this rank holds block `me` of the vector
      const long long i = static_cast<long long>(k / 4) + (op_ == "reduce_scatter" ? static_cast<long long>(me_) * block_ : 0);
      const float sum = static_cast<float>(n_ * (n_ + 1) / 2 + n_ * (i % 13));
      float v;
      std::memcpy(&v, got.data() + k, 4);
      if (v != sum) return static_cast<long long>(k);
      continue;
    }
    unsigned char expect;
    if (op_ == "bcast")
      expect = pattern(0, size_, k);
    else if (op_ == "allgather" || op_ == "allgatherv" || op_ == "gather")  // block r came from rank r
      expect = pattern(static_cast<int>(k / s), size_, k % s);
    else if (op_ == "scatter")  // the root's block `me`
      expect = pattern(me_, size_, k);
    else  // alltoall(v): block j came from rank j, its block `me`
      expect = pattern(static_cast<int>(k / s) * n_ + me_, size_, k % s);
    if (got[k] != expect) return static_cast<long long>(k);
  }
  return -1;
}

void Runner::run_collective(const std::string& test, long long size) {
  const int warm = iterations_for(o_, test, size, true), iters = iterations_for(o_, test, size, false);
  Collective c(o_, w_, backend_, path_, test, size);
  std::vector<double> seconds;
  seconds.reserve(static_cast<size_t>(iters));
  ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
  for (int i = 0; i < warm + iters; ++i) {
    const auto t0 = Clock::now();
    c.call();
    const auto t1 = Clock::now();
    if (i >= warm) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    ok(g->Barrier(M::COMM_WORLD), "MPI_Barrier");
  }
  report_collective(test, size, seconds, iters, warm, c.check(o_.corrupt));
}

void Runner::report_collective(const std::string& test, long long size, const std::vector<double>& seconds, int iters,
                               int warm, long long wrong,
                               const std::vector<std::pair<std::string, std::vector<double>>>& more) {
  const int n = w_.size;
  std::vector<double> all = gather(seconds);
  std::vector<std::vector<double>> all_more;
  for (const auto& m : more) all_more.push_back(gather(m.second));
  std::string pair = "intra-node";
  for (int r = 1; r < n; ++r)
    if (!w_.same_host(0, r)) pair = "inter-node";
  if (w_.rank == 0) {
    std::vector<int> everyone;
    for (int r = 0; r < n; ++r) everyone.push_back(r);
    auto of_rank = [&](const std::vector<double>& v, int r) {
      return std::vector<double>(v.begin() + static_cast<long>(r) * iters, v.begin() + static_cast<long>(r + 1) * iters);
    };
    for (int r = 0; r < n; ++r) {
      std::vector<std::pair<std::string, std::string>> fields;
      for (size_t m = 0; m < more.size(); ++m) fields.emplace_back(more[m].first, seconds_json(of_rank(all_more[m], r)));
      emit_samples(test, size, pair, everyone, of_rank(all, r), r, iters, warm, 0, fields);
    }
  }
  validate(test, size, pair, wrong);
}

}  // namespace xferlab::net
