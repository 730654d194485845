// The posit32 workload cg (issue 7; list and sources in workloads.hpp): NPB CG done op by op on Posit
// handles, and the same kernel on the host with p32_* (the offloaded run must give the host run's
// bits). The host reads what the real program reads: the residual norm once per iteration (its
// convergence test), NPB's explicit residual norm after the loop, and the solution. The posit machines
// are in workloads_common.hpp; mg is in workloads_posit_mg.cpp.
#include "workloads_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>

namespace xferlab::runtime {
namespace workloads_detail {
namespace {

// A sparse matrix in compressed rows, its values as posit bits.
struct Csr {
  uint32_t n = 0;
  std::vector<uint32_t> start, col, val;
};

// NPB CG's makea (Bailey et al., RNR-94-007, section on CG; NPB's cg.f, makea and sprnvc): A is a sum
// of n outer products w_i v_i v_i^T, where v_i has nonzer = 2 nonzeros at random places with random
// values in (0, 1) and element i set to 0.5, and w_i = rcond^(i/n) with rcond = 0.1 (NPB: size *= ratio,
// ratio = rcond^(1/n)). That sum is positive semi-definite; NPB then adds rcond - shift to the diagonal
// for its eigenvalue estimate, where we add +rcond so that A is positive definite (eigenvalues >= 0.1;
// about 20 for the condition number at the default size). About 7 nonzeros a row. Values are rounded to
// posits once, here: the system both runs solve is the rounded one.
const double kRcond = 0.1;

Csr make_matrix(uint32_t n, uint64_t seed) {
  const int nonzer = 2;
  Randlc rng(seed);
  std::vector<std::map<uint32_t, double>> rows(n);
  double size = 1.0;
  const double ratio = std::pow(kRcond, 1.0 / n);
  for (uint32_t i = 0; i < n; i++) {
    std::map<uint32_t, double> v;
    while ((int)v.size() < nonzer) {
      double value = rng.next();
      uint32_t at = (uint32_t)rng.between(0, n - 1);
      v.emplace(at, value);  // a place drawn twice keeps its first value (NPB skips it)
    }
    v[i] = 0.5;
    for (const auto& [r, vr] : v)
      for (const auto& [c, vc] : v) rows[r][c] += size * vr * vc;
    size *= ratio;
  }
  Csr a;
  a.n = n;
  for (uint32_t i = 0; i < n; i++) {
    rows[i][i] += kRcond;
    a.start.push_back((uint32_t)a.col.size());
    for (const auto& [c, value] : rows[i]) {
      a.col.push_back(c);
      a.val.push_back(p32_from_f64(value));
    }
  }
  a.start.push_back((uint32_t)a.col.size());
  return a;
}

// NPB CG's inner loop runs cgitmax = 25 iterations (RNR-94-007; cg.f). A solver also stops when the
// residual is small: here when ||r|| <= 1e-6 ||r_0||, the relative-residual stopping test of Barrett
// et al., "Templates for the Solution of Linear Systems" (SIAM 1994), which is why the host reads ||r||
// every iteration. NPB's right-hand side is x = (1, ..., 1).
const int kCgItMax = 25;
const double kCgTolerance = 1e-6;

struct CgRun {
  std::vector<uint32_t> norms;  // ||r|| before the first iteration and after each one, as read
  uint32_t explicit_norm = 0;   // ||b - A z|| after the loop (NPB computes it the same way)
  std::vector<uint32_t> x;      // the solution z
  int iterations = 0;
};

// Conjugate gradients for A z = b, z_0 = 0, in NPB's order of operations (cg.f, conj_grad): q = A p,
// alpha = rho / (p.q), z += alpha p, r -= alpha q, rho = r.r, beta = rho / rho0, p = r + beta p. Sums
// are left to right, each term one fused multiply-add (one rounding, the kernel's fma).
template <class M>
CgRun conj_grad(const M& m, const Csr& a) {
  using V = typename M::V;
  const uint32_t n = a.n;
  std::vector<V> values;
  values.reserve(a.val.size());
  for (uint32_t bits : a.val) values.push_back(m.constant(bits));
  auto matvec = [&](const std::vector<V>& p) {
    std::vector<V> q;
    q.reserve(n);
    for (uint32_t i = 0; i < n; i++) {
      uint32_t k = a.start[i];
      V s = m.mul(values[k], p[a.col[k]]);
      for (k++; k < a.start[i + 1]; k++) s = m.fmadd(values[k], p[a.col[k]], s);
      q.push_back(s);
    }
    return q;
  };
  auto dot = [&](const std::vector<V>& u, const std::vector<V>& v) {
    V s = m.mul(u[0], v[0]);
    for (uint32_t j = 1; j < n; j++) s = m.fmadd(u[j], v[j], s);
    return s;
  };

  CgRun out;
  const std::vector<V> b(n, m.constant(P32_ONE));
  std::vector<V> z(n, m.constant(P32_ZERO)), r = b, p = b;
  V rho = dot(r, r);
  out.norms.push_back(m.read(m.root(rho)));
  const double stop = kCgTolerance * p32_to_f64(out.norms[0]);
  for (int it = 0; it < kCgItMax; it++) {
    std::vector<V> q = matvec(p);
    V alpha = m.divide(rho, dot(p, q));
    V minus_alpha = m.negate(alpha);
    for (uint32_t j = 0; j < n; j++) z[j] = m.fmadd(alpha, p[j], z[j]);
    for (uint32_t j = 0; j < n; j++) r[j] = m.fmadd(minus_alpha, q[j], r[j]);
    V rho0 = rho;
    rho = dot(r, r);
    out.norms.push_back(m.read(m.root(rho)));
    out.iterations = it + 1;
    if (p32_to_f64(out.norms.back()) <= stop) break;
    V beta = m.divide(rho, rho0);
    for (uint32_t j = 0; j < n; j++) p[j] = m.fmadd(beta, p[j], r[j]);
  }
  std::vector<V> az = matvec(z);
  V d = m.sub(b[0], az[0]);
  V s = m.mul(d, d);
  for (uint32_t j = 1; j < n; j++) {
    d = m.sub(b[j], az[j]);
    s = m.fmadd(d, d, s);
  }
  out.explicit_norm = m.read(m.root(s));
  for (const V& v : z) out.x.push_back(m.read(v));
  return out;
}

// ||b - A x|| / ||b|| in double, for the posit matrix and solution (every posit32 is a double).
double residual_f64(const Csr& a, const std::vector<uint32_t>& x) {
  double sum = 0;
  for (uint32_t i = 0; i < a.n; i++) {
    double ax = 0;
    for (uint32_t k = a.start[i]; k < a.start[i + 1]; k++) ax += p32_to_f64(a.val[k]) * p32_to_f64(x[a.col[k]]);
    sum += (1.0 - ax) * (1.0 - ax);
  }
  return std::sqrt(sum / a.n);
}

// Gershgorin: every eigenvalue of A is at most its largest absolute row sum.
double max_row_sum(const Csr& a) {
  double most = 0;
  for (uint32_t i = 0; i < a.n; i++) {
    double sum = 0;
    for (uint32_t k = a.start[i]; k < a.start[i + 1]; k++) sum += std::fabs(p32_to_f64(a.val[k]));
    most = std::max(most, sum);
  }
  return most;
}

}  // namespace

WorkloadResult run_cg(Runtime& rt, const std::string&, uint64_t size, uint64_t seed) {
  const uint32_t n = (uint32_t)size;
  WorkloadResult res;
  Csr a = make_matrix(n, seed);
  const auto [dev, host] =
      timed_pair(res, [&] { return conj_grad(PositDevice{rt}, a); }, [&] { return conj_grad(PositHost{rt.options().work}, a); });

  const bool same = dev.norms == host.norms && dev.x == host.x && dev.explicit_norm == host.explicit_norm;
  const double first = p32_to_f64(host.norms.front()), last = p32_to_f64(host.norms.back());
  const double relative = p32_to_f64(host.explicit_norm) / std::sqrt((double)n);  // ||b|| = sqrt(n)
  const double relative_f64 = residual_f64(a, host.x);
  // Sanity, independent of the posit code: the residual read by the host fell, and the residual of
  // the solution computed in double obeys CG's classical convergence bound (Barrett et al., Templates,
  // CG's convergence; Golub and Van Loan, "Matrix Computations"): ||e_k||_A <= 2 q^k ||e_0||_A with
  // q = (sqrt(kappa) - 1) / (sqrt(kappa) + 1), hence ||r_k|| <= 2 sqrt(kappa) q^k ||b|| from z_0 = 0;
  // kappa is bounded by Gershgorin's largest row sum over rcond (A's smallest eigenvalue is at least
  // rcond). Posit32 rounding (2^-27 relative near 1) keeps the residual from going below about n
  // rounding steps: n 2^-24 is added for it.
  const double kappa = max_row_sum(a) / kRcond;
  const double q = (std::sqrt(kappa) - 1) / (std::sqrt(kappa) + 1);
  const double bound = 2 * std::sqrt(kappa) * std::pow(q, dev.iterations) + n * std::ldexp(1.0, -24);
  const bool fell = last < first;
  const bool within = relative_f64 <= bound;
  res.ok = same && fell && within;
  res.detail =
      format("%.0f iterations of cgitmax 25, %.0f nonzeros; ", dev.iterations, (double)a.col.size()) +
      format("||r|| %.3g -> %.3g; ||b-Az||/||b|| %.3g (posit), %.3g (double), ", first, last, relative, relative_f64) +
      format("CG bound %.3g; ", bound) +
      (same ? "residuals and x bit-identical to host p32" : "DIFFERS from host p32") +
      (fell ? "" : "; residual did not fall") + (within ? "" : "; residual above the CG bound");
  return res;
}

}  // namespace workloads_detail
}  // namespace xferlab::runtime
