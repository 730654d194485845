// Host <-> accelerator measurements, written once over the Backend interface (backend.hpp):
//
//   devices   the devices a backend sees, with their inventory
//   transfer  H2D, D2H, D2D and bidirectional copies over a size sweep, per host memory kind
//   launch    empty-kernel launch latency (launch.cpp)
//   chunks    one total moved as many small or few large transfers (seed 004's granularity study)
//
// Method: warm-up copies are run and not reported; each timed copy reports the host steady clock
// around submit + wait and the device's own timestamps; the copied data is checked outside the
// timed region after each (kind, direction, size). How often a point repeats: a fixed count (and
// --min-time), or with --precision until its median's 95 % interval is that narrow (precision.hpp);
// a "point" record after each point says how it ended. --order interleaved times the points of a
// host memory kind in rounds of short batches instead of one after the other, so that the machine's
// changes of speed (load, warm-up) fall on every size alike. Every host buffer is at least 64-byte aligned
// (pageable ones page-aligned): seed 004's FPGA DMA needs 64-byte-aligned arrays. (Its kernel panic
// came with posix_memalign'ed, i.e. application-allocated, memory during a D2H DMA, cause unconfirmed;
// kernels.cpp's align mode copies from runtime- and application-allocated memory at offsets.)
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "args.hpp"
#include "backend.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "precision.hpp"
#include "probe.hpp"
#include "programs.hpp"

namespace xferlab {

namespace {

const char* kKindNames[kHostKinds] = {"pageable", "pinned",  "svm-coarse", "svm-fine",
                                      "managed",  "managed-prefetch", "usm-host", "usm-shared"};
const std::vector<std::string> kAllKinds(kKindNames, kKindNames + kHostKinds);

// A byte pattern that differs for every position and every `seed`.
inline unsigned char pattern(size_t i, unsigned seed) {
  return static_cast<unsigned char>((i * 2654435761u + seed * 40503u) >> 13);
}

void fill(void* p, size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = pattern(i, seed);
}

// Index of the first byte that differs from the pattern, or -1.
long long first_wrong(const void* p, size_t n, unsigned seed) {
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != pattern(i, seed)) return static_cast<long long>(i);
  return -1;
}

std::vector<long long> default_sizes(size_t limit) {
  std::vector<long long> sizes;
  for (long long s = 1; s <= static_cast<long long>(limit); s *= 2) sizes.push_back(s);
  return sizes;
}

}  // namespace

std::unique_ptr<Backend> open_backend(Args& args, int& device) {
  auto backend = make_backend(args.text("backend", "opencl"));
  device = static_cast<int>(args.integer("device", 0, 0, 4096));
  return backend;
}

const char* host_kind_name(HostKind kind) { return kKindNames[static_cast<int>(kind)]; }

bool parse_host_kind(const std::string& name, HostKind& kind) {
  for (int i = 0; i < kHostKinds; ++i)
    if (name == kKindNames[i]) {
      kind = static_cast<HostKind>(i);
      return true;
    }
  return false;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "opencl") return make_opencl_backend();
  if (name == "cuda") return make_cuda_backend();
  if (name == "sycl") return make_sycl_backend();
  throw BadArgument("--backend '" + name + "' is not allowed; allowed: opencl, cuda, sycl");
}

int run_devices(Args& args) {
  auto backend = make_backend(args.text("backend", "opencl"));
  args.finish();
  int count = backend->device_count();
  for (int i = 0; i < count; ++i) JsonLine().str("probe", "device").raw("device", backend->describe(i)).emit();
  return 0;
}

// Interleaved transfers: a point's batch in one round is at least max(1, --iterations / 4) copies and
// goes on until about this much copying (or kBatchCopies copies).
constexpr double kBatchSeconds = 1e-3;
constexpr long long kBatchCopies = 1000;

int run_transfer(Args& args) {
  int device = 0;
  auto backend = open_backend(args, device);
  const auto kind_names = args.words("kinds", "pageable,pinned", kAllKinds);
  const std::string sizes_text = args.text("sizes", "");
  const auto directions = args.words("directions", "h2d,d2h,d2d,bidir", {"h2d", "d2h", "d2d", "bidir"});
  const int min_iterations = static_cast<int>(args.integer("iterations", 5, 1, 1000000));
  const int max_iterations = static_cast<int>(args.integer("max-iterations", 1000, 1, 10000000));
  const double min_time = args.real("min-time", 0.02, 0.0, 3600.0);
  const int warmup = static_cast<int>(args.integer("warmup", 2, 0, 1000));
  const int node = static_cast<int>(args.integer("node", -1, 0, 1023));
  const bool corrupt = args.flag("corrupt-copy");  // test hook: damage one copy, which must be caught
  const std::string order = args.text("order", "sequential");
  if (order != "sequential" && order != "interleaved")
    throw BadArgument("--order '" + order + "' is not allowed; allowed: sequential, interleaved");
  const bool interleaved = order == "interleaved";
  const std::vector<int> cpus = args.given("cpus") ? parse_cpu_list(args.text("cpus", ""), "--cpus") : std::vector<int>{};
  precision::Policy policy;
  policy.min_iterations = min_iterations;
  policy.max_iterations = max_iterations;
  policy.min_time = min_time;
  precision::read_options(args, policy);
  args.finish();
  if (node >= 0) check_node(node);
  if (!cpus.empty()) check_cpus(cpus);

  backend->open(device);
  // the host thread placed once the runtime's threads exist (see place_on_cpus)
  if (!cpus.empty() && !place_on_cpus(cpus)) throw std::runtime_error("could not place the host thread on --cpus");
  const size_t limit = std::min<size_t>(backend->max_allocation(), 1ull << 30);
  std::vector<long long> sizes;
  if (sizes_text.empty()) {
    sizes = default_sizes(limit);
  } else {
    size_t start = 0;
    while (start <= sizes_text.size()) {
      size_t comma = sizes_text.find(',', start);
      std::string item = sizes_text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      char* end = nullptr;
      long long v = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end || v < 1) throw BadArgument("--sizes item '" + item + "' is not a positive byte count");
      sizes.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  const size_t largest = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end()));
  if (largest > backend->max_allocation())
    throw BadArgument("size " + std::to_string(largest) + " exceeds the device's largest allocation of " +
                      std::to_string(backend->max_allocation()) + " bytes");
  std::vector<HostKind> kinds;
  for (auto& n : kind_names) {
    HostKind k = HostKind::pageable;
    parse_host_kind(n, k);
    if (!backend->supports(k)) throw BadArgument("host memory kind '" + n + "' is not supported by this device/backend");
    kinds.push_back(k);
  }

  JsonLine()
      .str("probe", "transfer")
      .str("record", "setup")
      .str("backend", backend->name())
      .raw("device", backend->describe(device))
      .integer("node", node)
      .str("host_cpus", cpus.empty() ? "" : cpu_list_text(allowed_cpus()))
      .integer("warmup", warmup)
      .integer("min_iterations", min_iterations)
      .number("min_time_seconds", min_time)
      .number("precision", policy.adaptive() ? policy.precision : NAN)
      .number("max_time_seconds", policy.max_time)
      .str("order", order)
      .str("clock", "std::chrono::steady_clock around submit+wait; device: profiling events")
      .str("alignment", "host buffers page-aligned (pageable) or runtime-aligned to at least 64 bytes")
      .emit();

  auto dev_a = backend->allocate_device(largest);
  auto dev_b = backend->allocate_device(largest);
  bool all_ok = true;
  for (HostKind kind : kinds) {
    auto host_src = backend->allocate_host(kind, largest);
    auto host_dst = backend->allocate_host(kind, largest);
    auto check_buf = backend->allocate_host(HostKind::pageable, largest);  // read-backs for validation
    std::string placed = "{}";
    if (node >= 0) {
      for (Memory* m : {host_src.get(), host_dst.get()}) {
        auto page = reinterpret_cast<uintptr_t>(m->host) & ~uintptr_t(4095);
        std::string why = bind_to_node(reinterpret_cast<void*>(page), largest + 4096, node);
        if (!why.empty()) throw BadArgument("memory node " + std::to_string(node) + ": " + why);
      }
    }
    fill(host_src->host, largest, 1);
    std::memset(host_dst->host, 0, largest);
    if (node >= 0) placed = page_nodes_json(page_nodes(host_src->host, largest));
    JsonLine().str("probe", "transfer").str("record", "kind").str("kind", host_kind_name(kind)).raw("page_nodes", placed).emit();
    backend->copy(*dev_a, *host_src, largest);  // the device holds the pattern for D2H and D2D
    struct Point {
      size_t size;
      std::string dir;
      precision::Repeat repeat;
      long long taken = 0;  // timed copies so far (the sample records' iteration)
      long long rounds = 0;
      bool going = true;
    };
    std::vector<Point> points;
    for (long long size_ll : sizes)
      for (auto& dir : directions) points.push_back(Point{static_cast<size_t>(size_ll), dir, precision::Repeat(policy)});
    auto once = [&](const Point& p) -> Timing {
      if (p.dir == "h2d") return backend->copy(*dev_b, *host_src, p.size);
      if (p.dir == "d2h") return backend->copy(*host_dst, *dev_a, p.size);
      if (p.dir == "d2d") return backend->copy(*dev_b, *dev_a, p.size);
      return backend->copy_both(*dev_b, *host_src, *host_dst, *dev_a, p.size);
    };
    auto start = [&](const Point& p) {  // warm-ups, then clear what the timed copies must write
      for (int w = 0; w < warmup; ++w) once(p);
      std::memset(host_dst->host, 0, p.size);
    };
    auto timed = [&](Point& p) {  // one timed copy and its record; its seconds (p.going: the point wants more)
      Timing t = once(p);
      JsonLine()
          .str("probe", "transfer")
          .str("record", "sample")
          .str("kind", host_kind_name(kind))
          .str("direction", p.dir)
          .integer("size_bytes", static_cast<long long>(p.size))
          .integer("iteration", p.taken++)
          .number("host_seconds", t.host_seconds)
          .number("device_seconds", t.device_seconds)
          .emit();
      p.going = p.repeat.more(t.host_seconds);
      return t.host_seconds;
    };
    auto finish = [&](const Point& p) {  // right after the point's last copy
      const size_t size = p.size;
      const std::string& dir = p.dir;
      JsonLine point;
      point.str("probe", "transfer").str("record", "point").str("kind", host_kind_name(kind)).str("direction", dir)
          .integer("size_bytes", static_cast<long long>(size));
      if (interleaved) point.integer("rounds", p.rounds);
      p.repeat.describe(point).emit();
      // Validation, outside the timed region: read back what the copy wrote. Interleaved, the other
      // points' copies write the same pattern into the same buffers, so the first `size` bytes still
      // say whether this point's copies were right.
      if (corrupt && size > 0) {
        if (dir == "d2h" || dir == "bidir") static_cast<unsigned char*>(host_dst->host)[size / 2] ^= 0x5A;
        else {
          fill(check_buf->host, size, 1);
          static_cast<unsigned char*>(check_buf->host)[size / 2] ^= 0x5A;
          backend->copy(*dev_b, *check_buf, size);
        }
      }
      long long wrong = -1;
      if (dir == "d2h" || dir == "bidir") wrong = first_wrong(host_dst->host, size, 1);
      if (wrong < 0 && dir != "d2h") {
        std::memset(check_buf->host, 0, size);
        backend->copy(*check_buf, *dev_b, size);
        wrong = first_wrong(check_buf->host, size, 1);
      }
      all_ok = all_ok && wrong < 0;
      JsonLine()
          .str("probe", "transfer")
          .str("record", "validation")
          .str("kind", host_kind_name(kind))
          .str("direction", dir)
          .integer("size_bytes", static_cast<long long>(size))
          .boolean("ok", wrong < 0)
          .integer("first_wrong_byte", wrong)
          .emit();
    };
    if (!interleaved) {
      for (Point& p : points) {  // each point whole, one after the other
        start(p);
        while (p.going) timed(p);
        finish(p);
      }
      continue;
    }
    // Interleaved: rounds over the points still going, a short batch each (at least
    // max(1, min_iterations / 4) copies and about kBatchSeconds of copying), so that a slow spell of
    // the machine is shared by every size instead of landing whole on a few.
    const long long batch = std::max(1, min_iterations / 4);
    for (bool any = true; any;) {
      any = false;
      for (Point& p : points) {
        if (!p.going) continue;
        if (p.rounds++ == 0) start(p);
        double spent = 0.0;
        for (long long n = 0; p.going && (n < batch || spent < kBatchSeconds) && n < kBatchCopies; ++n) spent += timed(p);
        if (p.going) any = true;
        else finish(p);
      }
    }
  }
  if (!all_ok) {
    std::fprintf(stderr, "xferlab-probe: transfer: validation failed: copied data differs from what was sent\n");
    return 1;
  }
  return 0;
}

int run_chunks(Args& args) {
  int device = 0;
  auto backend = open_backend(args, device);
  const long long total = args.integer("total", 64ll << 20, 1, 1ll << 40);
  const auto chunks = args.integers("chunks", "81920,8388608", 1, 1ll << 40);
  const auto kind_names = args.words("kinds", "pageable", kAllKinds);
  const auto directions = args.words("directions", "h2d", {"h2d", "d2h"});
  const int repeats = static_cast<int>(args.integer("repeats", 3, 1, 1000));
  // Fixed: --repeats timed repeats. With --precision: at least --repeats, at most --max-repeats.
  precision::Policy policy;
  policy.min_iterations = repeats;
  policy.max_iterations = repeats;
  precision::read_options(args, policy);
  const int max_repeats = static_cast<int>(args.integer("max-repeats", 1000, 1, 1000000));
  if (policy.adaptive()) policy.max_iterations = std::max(repeats, max_repeats);
  const std::vector<int> cpus = args.given("cpus") ? parse_cpu_list(args.text("cpus", ""), "--cpus") : std::vector<int>{};
  args.finish();
  if (!cpus.empty()) check_cpus(cpus);
  backend->open(device);
  if (!cpus.empty() && !place_on_cpus(cpus)) throw std::runtime_error("could not place the host thread on --cpus");
  const long long largest = *std::max_element(chunks.begin(), chunks.end());
  if (static_cast<size_t>(largest) > backend->max_allocation())
    throw BadArgument("chunk " + std::to_string(largest) + " exceeds the device's largest allocation");
  JsonLine().str("probe", "chunks").str("record", "setup").str("backend", backend->name())
      .raw("device", backend->describe(device)).integer("total_bytes", total)
      .str("host_cpus", cpus.empty() ? "" : cpu_list_text(allowed_cpus())).emit();
  auto dev = backend->allocate_device(static_cast<size_t>(largest));
  for (auto& n : kind_names) {
    HostKind kind = HostKind::pageable;
    parse_host_kind(n, kind);
    if (!backend->supports(kind)) throw BadArgument("host memory kind '" + n + "' is not supported by this device/backend");
    auto host = backend->allocate_host(kind, static_cast<size_t>(largest));
    fill(host->host, static_cast<size_t>(largest), 2);
    for (const std::string& direction : directions)
    for (long long c : chunks) {
      const long long transfers = (total + c - 1) / c;
      precision::Repeat repeat(policy);
      std::vector<double> each(static_cast<size_t>(transfers));
      for (int r = 0;; ++r) {  // repeat 0 is a warm-up
        double host_s = 0.0, dev_s = 0.0;
        for (long long t = 0; t < transfers; ++t) {
          const long long bytes = std::min(c, total - t * c);
          Timing timing = direction == "h2d" ? backend->copy(*dev, *host, static_cast<size_t>(bytes))
                                             : backend->copy(*host, *dev, static_cast<size_t>(bytes));
          host_s += timing.host_seconds;
          dev_s += timing.device_seconds;
          each[static_cast<size_t>(t)] = timing.host_seconds;
        }
        // The spread of the repeat's transfers (seed 004 looks past the median): median, p99, max.
        std::sort(each.begin(), each.end());
        const auto at = [&](double q) { return each[std::min(each.size() - 1, static_cast<size_t>(q * each.size()))]; };
        JsonLine().str("probe", "chunks").str("record", "sample").str("kind", n).str("direction", direction)
            .integer("chunk_bytes", c).integer("transfers", transfers).integer("repeat", r).boolean("warmup", r == 0)
            .number("host_seconds", host_s).number("device_seconds", dev_s)
            .number("transfer_median_seconds", at(0.5)).number("transfer_p99_seconds", at(0.99))
            .number("transfer_max_seconds", each.back()).emit();
        if (r > 0 && !repeat.more(host_s)) break;
      }
      JsonLine point;
      point.str("probe", "chunks").str("record", "point").str("kind", n).str("direction", direction).integer("chunk_bytes", c);
      repeat.describe(point).emit();
    }
  }
  return 0;
}

}  // namespace xferlab
