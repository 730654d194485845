// `xferlab-probe collab --pattern bs`: CHAI's BS (Bézier surface; Gómez-Luna et al., "Chai:
// Collaborative Heterogeneous Applications for Integrated-architecture", ISPASS 2017, after Paul
// Bourke's Bézier surface), data partitioning over tiles of the output. A surface of degree 3 (4 x 4
// control points, x y z floats: CHAI's default -m 3) is evaluated at resolution x resolution points
// (CHAI's -n, default 300); the output is cut into tiles of tile x tile points (CHAI's -i, the
// work-group's side, default 16), numbered row by row: the tasks. Kernel: bs_tiles in collab.cl.
//   D: static split: the device takes tiles [0, k), k = round(tiles * device-share); the control
//      points are copied in, the device's tiles computed in a device buffer holding the output rows
//      they span, read back and merged tile by tile into the host's output (CHAI's "copy back and
//      merge", in the copy phase), while host threads compute tiles [k, tiles) in place.
//   U: control points, output and one tile counter in fine-grained SVM; device work-groups and host
//      threads take tiles from the same counter (SVM atomics) until none are left.
// Point (r, c): mu_i = r * step, mu_j = c * step (step = 1 / (resolution - 1), computed here once and
// passed to the kernel), Bernstein weights b_k(mu) = C(3, k) mu^k (1 - mu)^(3 - k) by repeated
// multiplication, and the point the sum over (ki, kj) of P[ki][kj] * b_ki(mu_i) * b_kj(mu_j). CHAI
// divides (r / (resolution - 1), the binomial by divisions) and calls pow(); OpenCL allows division
// 2.5 ulp and pow 16 ulp, while +, - and * are correctly rounded. With only those, in the same order
// here and in the kernel, FP_CONTRACT OFF in the kernel (collab.cl's prelude) and -ffp-contract=off
// for this file (CMakeLists.txt), the device's result is bit for bit the host's: validation is exact
// (CHAI's own check is an L1 relative error below 1e-6).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "collab.hpp"

namespace xferlab::collab {

using namespace cl;

namespace {

constexpr size_t kPoints = (kBsDegree + 1) * (kBsDegree + 1);

// b[k] = C(3, k) mu^k (1 - mu)^(3 - k), as the kernel's bs_blend computes it.
void blend(float mu, float* b) {
  const float binomial[kBsDegree + 1] = {1.0f, 3.0f, 3.0f, 1.0f};
  for (int k = 0; k <= kBsDegree; ++k) {
    float v = binomial[k];
    for (int i = 0; i < k; ++i) v *= mu;
    for (int i = 0; i < kBsDegree - k; ++i) v *= 1.0f - mu;
    b[k] = v;
  }
}

// One point of the surface into out[0..2], as the kernel's bs_point computes it.
void point(const float* cp, float mui, float muj, float* out) {
  float bi[kBsDegree + 1], bj[kBsDegree + 1];
  blend(mui, bi);
  blend(muj, bj);
  float x = 0.0f, y = 0.0f, z = 0.0f;
  for (int ki = 0; ki <= kBsDegree; ++ki)
    for (int kj = 0; kj <= kBsDegree; ++kj) {
      const float* p = cp + (ki * (kBsDegree + 1) + kj) * 3;
      x += p[0] * bi[ki] * bj[kj];
      y += p[1] * bi[ki] * bj[kj];
      z += p[2] * bi[ki] * bj[kj];
    }
  out[0] = x;
  out[1] = y;
  out[2] = z;
}

}  // namespace

Bs::Bs(Options& opts, ClDevice& d) : o(opts), dev(d) {
  k = dev.kernel("bs_tiles");
  tiles_j = (o.resolution + o.tile - 1) / o.tile;
  tasks = tiles_j * tiles_j;
  step = 1.0f / static_cast<float>(o.resolution - 1);
  control.resize(kPoints * 3);
  for (size_t i = 0; i < control.size(); ++i) control[i] = float_at(i, o.seed) - 0.5f;  // in [-0.5, 0.5)
  reference.resize(o.resolution * o.resolution * 3);
  for (size_t r = 0; r < o.resolution; ++r)  // point by point, the obvious way
    for (size_t c = 0; c < o.resolution; ++c)
      point(control.data(), static_cast<float>(r) * step, static_cast<float>(c) * step, &reference[(r * o.resolution + c) * 3]);
}

// The points of tile t (row-major tiles of tile x tile points) into out (resolution columns).
void Bs::tile(const float* cp, float* out, size_t t) const {
  const size_t r0 = t / tiles_j * o.tile, c0 = t % tiles_j * o.tile;
  for (size_t r = r0; r < std::min(o.resolution, r0 + o.tile); ++r)
    for (size_t c = c0; c < std::min(o.resolution, c0 + o.tile); ++c)
      point(cp, static_cast<float>(r) * step, static_cast<float>(c) * step, out + (r * o.resolution + c) * 3);
}

// Host threads take tiles lo + t, t from `next` (shared with the device in U), until t reaches hi - lo.
long long Bs::host_tiles(const float* cp, float* out, int* next, size_t lo, size_t hi) const {
  std::atomic<long long> done{0};
  parallel(o.host_threads, o.host_threads, [&](int, size_t, size_t) {
    long long mine = 0;
    for (;;) {
      const int t = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
      if (t < 0 || static_cast<size_t>(t) >= hi - lo) break;
      tile(cp, out, lo + static_cast<size_t>(t));
      ++mine;
    }
    done += mine;
  });
  return done.load();
}

Outcome Bs::run() {
  Outcome out;
  const size_t n = o.resolution, floats = n * n * 3, cp_bytes = kPoints * 3 * sizeof(float);
  const float* result = nullptr;
  std::unique_ptr<float, void (*)(void*)> host_out(nullptr, std::free);
  float* svm_cp = nullptr;
  float* svm_out = nullptr;
  int* svm_next = nullptr;
  auto set_args = [&](cl_uint count) {
    dev.arg(k, 2, static_cast<cl_uint>(n));
    dev.arg(k, 3, step);
    dev.arg(k, 4, static_cast<cl_uint>(o.tile));
    dev.arg(k, 5, count);
  };
  auto t0 = Clock::now();
  if (o.version == "D") {
    const size_t kd = std::min(tasks, static_cast<size_t>(std::llround(tasks * o.share)));
    // the output rows the device's tiles span: tile rows [0, ceil(kd / tiles_j))
    const size_t span = std::min(n, (kd + tiles_j - 1) / tiles_j * o.tile);
    float* data = static_cast<float*>(std::aligned_alloc(4096, (floats * 4 + 4095) / 4096 * 4096));
    if (!data) throw std::runtime_error("out of host memory for BS's surface");
    host_out.reset(data);
    std::vector<float> cp(control), staging(span * n * 3);
    int host_next = 0;
    auto dcp = dev.buffer(cp_bytes);
    auto dout = dev.buffer(span * n * 3 * 4);
    auto dnext = dev.buffer(4);
    const int zero = 0;
    out.allocation = since(t0);
    auto t1 = Clock::now();
    dev.write(dcp, cp.data(), cp_bytes);
    dev.write(dnext, &zero, 4);
    out.copy = since(t1);
    auto t2 = Clock::now();
    if (kd) {
      dev.arg(k, 0, dcp);
      dev.arg(k, 1, dout);
      set_args(static_cast<cl_uint>(kd));
      dev.arg(k, 6, dnext);
      dev.launch(k, std::max<cl_uint>(1, std::min<size_t>(dev.units, kd)), kLocal);
    }
    out.host_tasks = host_tiles(cp.data(), data, &host_next, kd, tasks);
    dev.finish();
    out.kernel = since(t2);
    auto t3 = Clock::now();
    if (kd) {
      dev.read(dout, staging.data(), span * n * 3 * 4);
      for (size_t t = 0; t < kd; ++t) {  // merge the device's tiles
        const size_t r0 = t / tiles_j * o.tile, c0 = t % tiles_j * o.tile, w = std::min(n, c0 + o.tile) - c0;
        for (size_t r = r0; r < std::min(n, r0 + o.tile); ++r)
          std::memcpy(data + (r * n + c0) * 3, staging.data() + (r * n + c0) * 3, w * 3 * sizeof(float));
      }
    }
    out.copy += since(t3);
    out.total = since(t0);
    out.copied_bytes = cp_bytes + (kd ? span * n * 3 * 4 : 0);
    out.device_tasks = static_cast<long long>(kd);
    result = data;
  } else {
    try {
      svm_cp = static_cast<float*>(dev.svm(cp_bytes, false));
      svm_out = static_cast<float*>(dev.svm(floats * 4, false));
      svm_next = static_cast<int*>(dev.svm(sizeof(int), true));
      std::memcpy(svm_cp, control.data(), cp_bytes);
      *svm_next = 0;
      out.allocation = since(t0);
      auto t2 = Clock::now();
      if (o.share > 0) {  // --device-share 0: the host alone
        dev.svm_arg(k, 0, svm_cp);
        dev.svm_arg(k, 1, svm_out);
        set_args(static_cast<cl_uint>(tasks));
        dev.svm_arg(k, 6, svm_next);
        dev.launch(k, std::max<cl_uint>(1, std::min<size_t>(dev.units, tasks)), kLocal);
      }
      out.host_tasks = o.share < 1 ? host_tiles(svm_cp, svm_out, svm_next, 0, tasks) : 0;
      dev.finish();
      out.kernel = since(t2);
      out.total = since(t0);
      out.device_tasks = static_cast<long long>(tasks) - out.host_tasks;
      result = svm_out;
    } catch (...) {
      dev.svm_free(svm_next);
      dev.svm_free(svm_out);
      dev.svm_free(svm_cp);
      throw;
    }
  }
  out.device_share = tasks ? static_cast<double>(out.device_tasks) / tasks : 0.0;
  if (o.corrupt) const_cast<float*>(result)[(n / 2) * n * 3] += 1.0f;  // test hook: validation must catch it
  compare_exactly(result, reference.data(), 0, floats, out);  // validation: every coordinate, exactly (see the top of this file)
  if (!out.ok) {
    std::ostringstream msg;
    msg.precision(9);
    const long long p = out.first_wrong / 3;
    msg << out.wrong << " of " << floats << " coordinates differ; first at row " << p / static_cast<long long>(n) << ", column "
        << p % static_cast<long long>(n) << " (" << "xyz"[out.first_wrong % 3] << "): expected " << out.expected << ", got "
        << out.got;
    out.what = msg.str();
  }
  dev.svm_free(svm_next);
  dev.svm_free(svm_out);
  dev.svm_free(svm_cp);
  return out;
}

}  // namespace xferlab::collab
