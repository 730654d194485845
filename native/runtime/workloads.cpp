// The offload runtime's workloads (issue 7); see workloads.hpp for the list and the sources.
//
// Every kernel is written once, as a template over a "machine": the device machine issues requests
// through the runtime's handles (Posit, Enc), the host machine does the same arithmetic directly
// (p32_* from posit32.h, or plain int64). The offloaded run must give the host run's bits; each
// workload also checks its answer in a way that does not share the kernel's code (a sort, std::gcd,
// prefix sums, a double-precision residual).
//
// What the host reads is what the real program reads: CG reads the residual norm once per iteration
// (its convergence test), NPB's explicit residual norm after the loop, and the solution; the VIP
// kernels read only their final answers (never a comparison: they are data-oblivious).
#include "workloads.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <stdexcept>

#include "xf_portable.h"
#include "posit32.h"
#include "enc64.h"
#include "interp.h"

namespace xf {
namespace {

// ---------------------------------------------------------------------------------------------------
// The table. Default sizes give ~5,000-9,000 requests each (counts in the comments), about
// 0.05-0.5 s in sync mode on the emulated 1 us bus; the bounds keep indices in 32 bits and runs finite.

struct Spec {
    const char* name;
    const char* opset;
    uint64_t default_size;
    uint64_t min_size;
    uint64_t max_size;
};

const Spec kSpecs[] = {
    {"cg", "posit32", 32, 3, 1u << 16},        // 32 rows: 7,953 requests at seed 1 (21 iterations)
    {"bubble", "enc64", 48, 2, 1u << 12},      // 3 (n-1)^2 = 6,627 requests
    {"gcd", "enc64", 16, 2, 1u << 16},         // (n-1) x 63 steps x 6 = 5,670 requests
    {"kadane", "enc64", 1024, 1, 1u << 22},    // 5 n = 5,120 requests
};

const Spec& spec(const std::string& name) {
    for (const Spec& s : kSpecs)
        if (name == s.name) return s;
    std::string choices;
    for (const Spec& s : kSpecs) choices += std::string(choices.empty() ? "" : ", ") + s.name;
    throw std::invalid_argument("unknown workload '" + name + "' (choose from " + choices + ")");
}

double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
    return buf;
}

// NPB's random number generator randlc (Bailey et al., RNR-94-007, and the NPB sources):
// x_{k+1} = 5^13 x_k mod 2^46, returned as x_{k+1} / 2^46 in (0, 1). The product is taken modulo
// 2^64 by unsigned arithmetic, whose low 46 bits are the product's modulo 2^46. NPB starts CG at
// x_0 = 314159265; seed s starts at 314159265 + 2s (odd, so the sequence never reaches 0).
class Randlc {
public:
    explicit Randlc(uint64_t seed) : x_(((314159265u + 2 * seed) & kMask) | 1u) {}
    double next() {
        x_ = (x_ * 1220703125u) & kMask;
        return (double)x_ * (1.0 / 70368744177664.0);  // 2^-46
    }
    int64_t between(int64_t lo, int64_t hi) { return lo + (int64_t)(next() * (double)(hi - lo + 1)); }

private:
    static constexpr uint64_t kMask = (uint64_t(1) << 46) - 1;
    uint64_t x_;
};

// ---------------------------------------------------------------------------------------------------
// posit32 machines. Method names differ from the handles' friend functions (fma, sqrt) so that the
// calls below find those by argument-dependent lookup.

struct PositDevice {
    using V = Posit;
    Runtime& rt;
    V constant(uint32_t bits) const { return Posit::from_bits(rt, bits); }
    V mul(const V& a, const V& b) const { return a * b; }
    V sub(const V& a, const V& b) const { return a - b; }
    V divide(const V& a, const V& b) const { return a / b; }
    V negate(const V& a) const { return -a; }
    V fmadd(const V& a, const V& b, const V& c) const { return fma(a, b, c); }
    V root(const V& a) const { return sqrt(a); }
    uint32_t read(const V& a) const { return a.bits(); }
};

struct PositHost {
    using V = uint32_t;
    V constant(uint32_t bits) const { return bits; }
    V mul(V a, V b) const { return p32_mul(a, b); }
    V sub(V a, V b) const { return p32_sub(a, b); }
    V divide(V a, V b) const { return p32_div(a, b); }
    V negate(V a) const { return p32_neg(a); }
    V fmadd(V a, V b, V c) const { return p32_fma(a, b, c); }
    V root(V a) const { return p32_sqrt(a); }
    uint32_t read(V a) const { return a; }
};

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

WorkloadResult run_cg(Runtime& rt, uint32_t n, uint64_t seed) {
    WorkloadResult res;
    Csr a = make_matrix(n, seed);
    auto t0 = std::chrono::steady_clock::now();
    CgRun dev = conj_grad(PositDevice{rt}, a);
    res.seconds = since(t0);
    t0 = std::chrono::steady_clock::now();
    CgRun host = conj_grad(PositHost{}, a);
    res.host_seconds = since(t0);

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
    res.detail = format("%.0f iterations of cgitmax 25, %.0f nonzeros; ", dev.iterations, (double)a.col.size()) +
                 format("||r|| %.3g -> %.3g; ||b-Az||/||b|| %.3g (posit), %.3g (double), ", first, last, relative,
                        relative_f64) +
                 format("CG bound %.3g; ", bound) +
                 (same ? "residuals and x bit-identical to host p32" : "DIFFERS from host p32") +
                 (fell ? "" : "; residual did not fall") + (within ? "" : "; residual above the CG bound");
    return res;
}

// ---------------------------------------------------------------------------------------------------
// enc64 machines: the VIP kernels on encrypted handles, and on plain int64 (wrapping like enc64).

// A 64-bit word as int64, two's complement (written out as enc64.h does: C++17 leaves the plain
// conversion implementation-defined above INT64_MAX).
int64_t wrap(uint64_t u) { return (u >> 63) ? -(int64_t)(~u) - 1 : (int64_t)u; }

struct EncDevice {
    using V = Enc;
    Runtime& rt;
    V constant(int64_t v) const { return Enc::encrypt(rt, v); }
    V add(const V& a, const V& b) const { return a + b; }
    V sub(const V& a, const V& b) const { return a - b; }
    V less(const V& a, const V& b) const { return a.lt(b); }
    V pick(const V& c, const V& a, const V& b) const { return select(c, a, b); }
    V larger(const V& a, const V& b) const { return max(a, b); }
    // Every decryption is issued before the first is read, as a futures API allows (Enc::decrypt
    // would wait for each in turn).
    std::vector<int64_t> reveal(const std::vector<V>& values) const {
        std::vector<CellRef> plain;
        for (const V& v : values) plain.push_back(rt.submit(XF_OP_E_DECRYPT, Operand(v.cell())));
        std::vector<int64_t> out;
        for (const CellRef& c : plain) out.push_back(wrap(rt.read(c)));
        return out;
    }
};

struct EncHost {
    using V = int64_t;
    V constant(int64_t v) const { return v; }
    V add(V a, V b) const { return wrap((uint64_t)a + (uint64_t)b); }
    V sub(V a, V b) const { return wrap((uint64_t)a - (uint64_t)b); }
    V less(V a, V b) const { return a < b ? 1 : 0; }
    V pick(V c, V a, V b) const { return c != 0 ? a : b; }
    V larger(V a, V b) const { return a < b ? b : a; }
    std::vector<int64_t> reveal(const std::vector<V>& values) const { return values; }
};

// VIP-Bench bubble-sort in its data-oblivious mode: size - 1 passes over every adjacent pair (no early
// exit, no shrinking), each compared with lt and swapped with two selects: 3 (n-1)^2 requests.
template <class M>
std::vector<int64_t> bubble_sort(const M& m, std::vector<typename M::V> d) {
    for (size_t pass = 0; pass + 1 < d.size(); pass++) {
        for (size_t j = 0; j + 1 < d.size(); j++) {
            auto swap = m.less(d[j + 1], d[j]);
            auto low = m.pick(swap, d[j + 1], d[j]);
            auto high = m.pick(swap, d[j], d[j + 1]);
            d[j] = low;
            d[j + 1] = high;
        }
    }
    return m.reveal(d);
}

// VIP-Bench gcd-list: the gcd of a list, folded pair by pair. VIP-Bench divides; enc64 has no division,
// so each pair runs Euclid by subtraction (docs/enc64.md): the larger of a, b becomes the difference.
// For 0 < a, b <= vmax, max(a, b) - 1 <= vmax - 1 steps make both equal to the gcd, and further steps
// change nothing, so every pair takes the public bound vmax - 1 steps: 6 requests a step.
const int64_t kGcdMax = 64;

template <class M>
std::vector<int64_t> gcd_list(const M& m, const std::vector<typename M::V>& v) {
    auto a = v[0];  // the gcd so far
    for (size_t i = 1; i < v.size(); i++) {
        auto b = v[i];
        for (int64_t step = 0; step < kGcdMax - 1; step++) {
            auto a_larger = m.less(b, a);
            auto b_larger = m.less(a, b);
            auto a_next = m.pick(a_larger, m.sub(a, b), a);
            auto b_next = m.pick(b_larger, m.sub(b, a), b);
            a = a_next;
            b = b_next;
        }
    }
    return m.reveal({a});
}

// VIP-Bench kadane in its data-oblivious mode: the largest sum of a contiguous subarray (0 for the
// empty one) and the index where it ends (-1 if empty): here = max(here + a_i, 0); if best < here,
// best = here and ends = i, with the condition as an encrypted 0/1 and two selects: 5 requests an element.
template <class M>
std::vector<int64_t> kadane(const M& m, const std::vector<typename M::V>& v) {
    const auto zero = m.constant(0);
    auto here = zero, best = zero, ends = m.constant(-1);
    for (size_t i = 0; i < v.size(); i++) {
        here = m.larger(m.add(here, v[i]), zero);
        auto better = m.less(best, here);
        ends = m.pick(better, m.constant((int64_t)i), ends);
        best = m.pick(better, here, best);
    }
    return m.reveal({best, ends});
}

std::vector<int64_t> vip_inputs(const std::string& name, uint64_t n, uint64_t seed) {
    Randlc rng(seed);
    std::vector<int64_t> v;
    if (name == "gcd") {
        // A common factor, so that the answer is not almost always 1.
        int64_t factor = rng.between(1, 8);
        for (uint64_t i = 0; i < n; i++) v.push_back(factor * rng.between(1, kGcdMax / factor));
    } else if (name == "kadane") {
        for (uint64_t i = 0; i < n; i++) v.push_back(rng.between(-30000, 30000));  // VIP-Bench's range
    } else {
        for (uint64_t i = 0; i < n; i++) v.push_back(rng.between(-2147483648LL, 2147483647LL));
    }
    return v;
}

template <class M>
std::vector<int64_t> vip_kernel(const std::string& name, const M& m, const std::vector<typename M::V>& v) {
    if (name == "bubble") return bubble_sort(m, v);
    if (name == "gcd") return gcd_list(m, v);
    return kadane(m, v);
}

// The answer computed another way, sharing no code with the kernels.
std::vector<int64_t> vip_check(const std::string& name, std::vector<int64_t> v) {
    if (name == "bubble") {
        std::sort(v.begin(), v.end());
        return v;
    }
    if (name == "gcd") {
        int64_t g = 0;
        for (int64_t x : v) g = std::gcd(g, x);
        return {g};
    }
    // Kadane from prefix sums: the best subarray ending at e is P[e+1] - min_{s <= e+1} P[s] (0 when
    // empty); the end is the first e reaching the best, or -1 if the best is 0.
    int64_t prefix = 0, low = 0, best = 0, ends = -1;
    for (size_t e = 0; e < v.size(); e++) {
        prefix += v[e];
        if (prefix - low > best) {
            best = prefix - low;
            ends = (int64_t)e;
        }
        low = std::min(low, prefix);
    }
    return {best, ends};
}

std::string join(const std::vector<int64_t>& v, size_t most = 4) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < most; i++) s += (i ? " " : "") + std::to_string(v[i]);
    return s + (v.size() > most ? " ..." : "");
}

WorkloadResult run_vip(Runtime& rt, const std::string& name, uint64_t n, uint64_t seed) {
    WorkloadResult res;
    const std::vector<int64_t> plain = vip_inputs(name, n, seed);
    std::vector<Enc> cipher;  // the data owner encrypts before the run (not timed, as in VIP-Bench)
    for (int64_t x : plain) cipher.push_back(Enc::encrypt(rt, x));
    auto t0 = std::chrono::steady_clock::now();
    const std::vector<int64_t> dev = vip_kernel(name, EncDevice{rt}, cipher);
    res.seconds = since(t0);
    t0 = std::chrono::steady_clock::now();
    const std::vector<int64_t> host = vip_kernel(name, EncHost{}, plain);
    res.host_seconds = since(t0);
    const std::vector<int64_t> check = vip_check(name, plain);
    res.ok = dev == host && host == check;
    res.detail = "decrypted " + join(dev) + (dev == host ? "; equals" : "; DIFFERS from") + " the int64 run" +
                 (host == check ? "; equals" : "; DIFFERS from") + " the independent check (" +
                 (name == "bubble" ? "std::sort" : name == "gcd" ? "std::gcd" : "prefix sums") + ")";
    return res;
}

}  // namespace

std::vector<std::string> workload_names() {
    std::vector<std::string> names;
    for (const Spec& s : kSpecs) names.push_back(s.name);
    return names;
}

const char* workload_opset(const std::string& name) { return spec(name).opset; }

uint64_t default_size(const std::string& name) { return spec(name).default_size; }

WorkloadResult run_workload(Runtime& rt, const std::string& name, uint64_t size, uint64_t seed) {
    const Spec& s = spec(name);
    if (size == 0) size = s.default_size;
    if (size < s.min_size || size > s.max_size)
        throw std::invalid_argument("size " + std::to_string(size) + " for workload '" + name + "' is out of range (" +
                                    std::to_string(s.min_size) + ".." + std::to_string(s.max_size) + ")");
    WorkloadResult res = name == "cg" ? run_cg(rt, (uint32_t)size, seed) : run_vip(rt, name, size, seed);
    res.name = s.name;
    res.opset = s.opset;
    res.size = size;
    return res;
}

}  // namespace xf
