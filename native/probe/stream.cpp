// `xferlab-probe stream`: STREAM's kernels (and read-only / write-only ones) over three arrays.
//
// Method (as STREAM and BabelStream): the arrays are initialised outside the timed region (by the
// measuring threads with first touch on, by one thread with it off); every kernel runs
// `iterations` times and every run is timed alone with std::chrono::steady_clock around the
// parallel region; iteration 0 is reported as a warm-up; after the last iteration every element
// of every array is checked against a scalar replay of the same sequence of kernels. With
// --precision each kernel repeats (at least `iterations` in all, at most --max-iterations, within
// --max-time seconds of timed runs) until the 95 % interval of its median time is that narrow
// (precision.hpp; the warm-up is not counted); the headline stays STREAM's best rate, the target
// applies to the median. A kernel that is done drops out of the rounds; a "point" record says how
// each one ended.
//
// Bytes are counted as STREAM counts them: the arrays a kernel reads plus the array it writes
// (copy and scale 2 x N x 8, add and triad 3 x N x 8, read and write N x 8). A store to a line not
// in cache first reads it (write-allocate), so the memory system moves one more N x 8 for each
// kernel that writes; that traffic is reported separately as write_allocate_bytes, not counted.
//
// With --pmem the arrays live in a shared mapping of a file or DAX device (App-Direct mode); with
// --persist each kernel also makes its stores persistent inside the timed region: on a DAX mapping
// each thread writes back the cache lines it stored (clwb, clflushopt or clflush, by CPUID) and
// fences; on any other mapping the destination array is msync'ed (PMEM_IS_PMEM_FORCE=1: written back as on DAX,
// PMDK's emulation, so that raw and PMDK rows persist alike).
//
// With --pmdk the arrays are objects of a PMDK pool at --pmem, as seed 003's STREAM-PMem allocates them (pmdk.hpp):
// --pmdk persist: each thread's chunk pmemobj_persist'ed after each kernel, inside the timed region; --pmdk tx: each
// thread's chunk in a transaction (begin, add_range of what it writes, kernel, commit), the undo log's snapshot
// timed with it and not counted in the bytes.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "args.hpp"
#include "clock.hpp"
#include "json.hpp"
#include "persist.hpp"
#include "placement.hpp"
#include "pmdk.hpp"
#include "precision.hpp"
#include "probe.hpp"
#include "region.hpp"

namespace xferlab {

namespace {

constexpr double kScalar = 0.5;  // keeps values growing slowly (x1.25 per STREAM round), never overflowing
constexpr double kFill = 7.0;
constexpr size_t kAlign = kLine / sizeof(double);  // thread chunks start on cache lines

// The kernels, chosen by name once when the arguments are read: the timed region only switches on
// this enum (no string comparison there).
enum class Op { copy, scale, add, triad, read, write };

struct Kernel {
  std::string name;
  Op op;
  int arrays_read;
  int arrays_written;
};

const std::vector<Kernel> kKernels = {
    {"copy", Op::copy, 1, 1},   {"scale", Op::scale, 1, 1}, {"add", Op::add, 2, 1},
    {"triad", Op::triad, 2, 1}, {"read", Op::read, 1, 0},   {"write", Op::write, 0, 1},
};

const Kernel& kernel_named(const std::string& name) {
  for (auto& k : kKernels)
    if (k.name == name) return k;
  throw BadArgument("unknown kernel " + name);
}

// The [lo, hi) elements thread t of nt handles: equal shares, starting on cache lines.
void chunk(size_t n, int t, int nt, size_t& lo, size_t& hi) {
  size_t lines = (n + kAlign - 1) / kAlign;
  lo = std::min(n, lines * t / nt * kAlign);
  hi = std::min(n, lines * (t + 1) / nt * kAlign);
}

struct Arrays {
  double* a;
  double* b;
  double* c;
  size_t n;
};

struct Persist {
  bool on = false;
  bool dax = false;
  Flush flush = Flush::none;
  const Region* region = nullptr;
  const PmdkPool* pool = nullptr;  // --pmdk: persisted by PMDK, in transactions when tx
  bool tx = false;
  int* tx_failures = nullptr;
  int* tx_commits = nullptr;  // transactions committed by the last kernel (the sample's "transactions")
};

// Runs one kernel once over all threads and returns its seconds. The read kernel's sum goes to `sum`.
double run_kernel(Op op, Arrays& x, int threads, const Persist& persist, double& sum) {
  double* __restrict a = x.a;
  double* __restrict b = x.b;
  double* __restrict c = x.c;
  const size_t n = x.n;
  double* dest = op == Op::copy || op == Op::add || op == Op::write ? c : op == Op::scale ? b
                 : op == Op::triad ? a : nullptr;
  std::vector<double> partial(threads, 0.0);
  if (persist.tx_commits) *persist.tx_commits = 0;
  auto start = Clock::now();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    size_t lo, hi;
    chunk(n, t, omp_get_num_threads(), lo, hi);
    const bool pmdk = persist.pool && dest && hi > lo;
    bool begun = false;
    if (pmdk && persist.tx) begun = persist.pool->tx_begin(dest + lo, (hi - lo) * sizeof(double));
    switch (op) {
      case Op::copy:
        for (size_t i = lo; i < hi; ++i) c[i] = a[i];
        break;
      case Op::scale:
        for (size_t i = lo; i < hi; ++i) b[i] = kScalar * c[i];
        break;
      case Op::add:
        for (size_t i = lo; i < hi; ++i) c[i] = a[i] + b[i];
        break;
      case Op::triad:
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + kScalar * c[i];
        break;
      case Op::write:
        for (size_t i = lo; i < hi; ++i) c[i] = kFill;
        break;
      case Op::read: {
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (size_t i = lo; i < hi; ++i) s += a[i];
        partial[t] = s;
        break;
      }
    }
    if (persist.on && persist.dax && dest && hi > lo) {
      write_back(dest + lo, (hi - lo) * sizeof(double), persist.flush);
      store_fence();
    }
    if (pmdk && !persist.tx) persist.pool->persist(dest + lo, (hi - lo) * sizeof(double));
    if (pmdk && persist.tx) {
      int* counter = persist.pool->tx_end(begun) ? persist.tx_commits : persist.tx_failures;
#pragma omp atomic
      ++*counter;
    }
  }
  if (persist.on && !persist.dax && dest) persist.region->sync(dest, n * sizeof(double));
  double seconds = since(start);
  if (persist.tx_failures && *persist.tx_failures)
    throw std::runtime_error(std::to_string(*persist.tx_failures) + " PMDK transaction(s) aborted (" +
                             persist.pool->last_error() + ")");
  sum = 0.0;
  for (double p : partial) sum += p;
  return seconds;
}

// The scalar replay of the kernels, as STREAM's checkSTREAMresults does.
void replay(Op op, double& a, double& b, double& c) {
  switch (op) {
    case Op::copy: c = a; break;
    case Op::scale: b = kScalar * c; break;
    case Op::add: c = a + b; break;
    case Op::triad: a = b + kScalar * c; break;
    case Op::write: c = kFill; break;
    case Op::read: break;
  }
}

struct Check {
  long bad = 0;
  long first = -1;
  double worst = 0.0;
};

Check check_array(const double* x, size_t n, double expected) {
  Check out;
  for (size_t i = 0; i < n; ++i) {
    double err = expected == 0.0 ? std::fabs(x[i]) : std::fabs(x[i] - expected) / std::fabs(expected);
    if (!(err <= 1e-12)) {  // also catches NaN
      if (out.first < 0) out.first = static_cast<long>(i);
      ++out.bad;
    }
    if (err > out.worst || std::isnan(err)) out.worst = err;
  }
  return out;
}

}  // namespace

int run_stream(Args& args) {
  const size_t llc = last_level_cache_bytes();
  const long long default_size = static_cast<long long>(std::max<size_t>(4 * llc, 64u << 20));
  const auto kernels = args.words("kernels", "copy,scale,add,triad", {"copy", "scale", "add", "triad", "read", "write"});
  const long long size = args.integer("size", default_size, 4096, 1ll << 46);
  const int iterations = static_cast<int>(args.integer("iterations", 10, 2, 1000));
  // Timed runs per kernel (the warm-up aside): fixed, iterations - 1; adaptive, up to --max-iterations - 1.
  // The arrays grow by at most x1.25 a round, so 1,000 rounds stay far from overflowing.
  precision::Policy policy;
  policy.min_iterations = iterations - 1;
  policy.max_iterations = iterations - 1;
  precision::read_options(args, policy);
  const int max_iterations = static_cast<int>(args.integer("max-iterations", 1000, 2, 1000));
  if (policy.adaptive()) policy.max_iterations = std::max(iterations, max_iterations) - 1;
  const auto cpus = args.given("cpus") ? parse_cpu_list(args.text("cpus", ""), "--cpus") : allowed_cpus();
  const int threads = static_cast<int>(args.integer("threads", static_cast<long long>(cpus.size()), 1, 4096));
  const int node = static_cast<int>(args.integer("node", -1, 0, 1023));
  const std::string first_touch = args.words("first-touch", "on", {"on", "off"})[0];
  const std::string hugepages = args.words("hugepages", "none", {"none", "thp", "hugetlb"})[0];
  const std::string pmem = args.text("pmem", "");
  const bool persist_on = args.flag("persist");
  const bool use_pmdk = args.given("pmdk");
  const std::string pmdk_mode = args.words("pmdk", "persist", {"persist", "tx"})[0];
  const bool pin = !args.flag("no-pin");
  const bool cpus_given = args.given("cpus");
  const long long corrupt = args.integer("corrupt", -1, 0, 1ll << 46);  // test hook
  // Array k starts k x (2 MiB-rounded size + offset) into the mapping. Arrays exactly 2 MiB apart
  // alias in the caches and the memory's banks (seen on an AMD EPYC VM: triad 35 % below a plain
  // malloc'd triad at 256 MiB); one page plus one line apart they do not. STREAM has OFFSET for this.
  const long long args_offset = args.integer("offset", 4096 + 64, 0, 1 << 30);
  if (args_offset % 64) throw BadArgument("--offset " + std::to_string(args_offset) + " is not a multiple of 64 bytes");
  args.finish();

  if (args.given("cpus")) check_cpus(cpus);
  if (node >= 0) check_node(node);
  if (persist_on && pmem.empty()) throw BadArgument("--persist needs --pmem PATH (a persistent mapping)");
  if (!pmem.empty() && node >= 0)
    throw BadArgument("--node binds anonymous memory; an App-Direct mapping (--pmem) lives where its device is");
  if (!pmem.empty() && hugepages != "none") throw BadArgument("--hugepages applies to anonymous memory, not --pmem");
  if (use_pmdk && pmem.empty()) throw BadArgument("--pmdk needs --pmem PATH (where the pool is made)");
  if (use_pmdk && persist_on) throw BadArgument("--pmdk persists by itself (persist or tx); --persist is the raw mapping's");

  const size_t n = static_cast<size_t>(size) / sizeof(double);
  const size_t array_bytes = n * sizeof(double);
  const long long offset = args_offset;
  const size_t stride = (array_bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20) + static_cast<size_t>(offset);
  RegionOptions options;
  options.bytes = 3 * stride + (2u << 20);
  options.node = node;
  options.hugepages = hugepages;
  options.path = pmem;
  std::unique_ptr<Region> region;
  std::unique_ptr<PmdkPool> pool;
  Arrays x{nullptr, nullptr, nullptr, n};
  if (use_pmdk) {
    // STREAM-PMem: (STREAM_ARRAY_SIZE + OFFSET) elements per object; a transaction's undo log holds one array.
    pool = PmdkPool::create(pmem, array_bytes + static_cast<size_t>(offset), pmdk_mode == "tx" ? array_bytes : 0);
    x = Arrays{pool->array(0), pool->array(1), pool->array(2), n};
  } else {
    region = Region::map(options);
    if (!region->binding().empty())
      throw BadArgument("memory node " + std::to_string(node) + " cannot hold the arrays: " + region->binding());
    x = Arrays{reinterpret_cast<double*>(region->data()), reinterpret_cast<double*>(region->data() + stride),
               reinterpret_cast<double*>(region->data() + 2 * stride), n};
  }

  // Pin each OpenMP thread to one CPU of the set, round robin; record where each one runs.
  std::vector<int> thread_cpu(threads, -1);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    if (pin) pin_to_cpu(cpus[t % cpus.size()]);
    else if (cpus_given) place_on_cpus(cpus);  // --no-pin --cpus: confined to the set, the scheduler places them
    thread_cpu[t] = sched_getcpu();
  }

  // Initialise outside the timed region: STREAM's a = 1 then doubled, b = 2, c = 0.
  auto init = [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      x.a[i] = 2.0;
      x.b[i] = 2.0;
      x.c[i] = 0.0;
    }
  };
  if (first_touch == "on") {
#pragma omp parallel num_threads(threads)
    {
      size_t lo, hi;
      chunk(n, omp_get_thread_num(), omp_get_num_threads(), lo, hi);
      init(lo, hi);
    }
  } else {
    init(0, n);
  }
  if (pool) {  // the starting values made persistent, outside the timed region
    pool->persist(x.a, array_bytes);
    pool->persist(x.b, array_bytes);
    pool->persist(x.c, array_bytes);
  }

  const bool forced = pmem_emulation_forced() && !pmem.empty();
  const bool dax = pool ? pool->dax() : region->dax();
  const bool emulated = pool ? pool->emulated() : forced && !dax;
  int tx_failures = 0, tx_commits = 0;
  Persist persist;
  persist.on = persist_on;
  persist.dax = region && (region->dax() || forced);
  persist.flush = persist.dax ? best_flush() : Flush::none;
  persist.region = region.get();
  persist.pool = pool.get();
  persist.tx = pmdk_mode == "tx";
  persist.tx_failures = &tx_failures;
  persist.tx_commits = &tx_commits;
  if (persist_on && persist.dax && persist.flush == Flush::none)
    throw std::runtime_error("this CPU offers no cache-line write-back instruction to persist a DAX mapping");
  const std::string mechanism = pool ? pool->mechanism(persist.tx)
                                : !persist_on ? "none"
                                : persist.dax ? std::string(flush_name(persist.flush)) + "+sfence"
                                              : "msync";

  std::string cpu_text;
  for (int c : thread_cpu) cpu_text += (cpu_text.empty() ? "" : ",") + std::to_string(c);
  JsonLine()
      .str("probe", "stream")
      .str("record", "setup")
      .integer("array_bytes", static_cast<long long>(array_bytes))
      .integer("offset_bytes", offset)
      .integer("elements", static_cast<long long>(n))
      .integer("threads", threads)
      .str("thread_cpus", cpu_text)
      .boolean("pinned", pin)
      .integer("node", node)
      .str("first_touch", first_touch)
      .str("hugepages", hugepages)
      .str("mode", pmem.empty() ? "memory" : use_pmdk ? (persist.tx ? "pmdk-tx" : "pmdk") : "app-direct")
      .str("path", pool ? pool->file() : region->file())
      .boolean("dax", dax)
      .boolean("map_sync", region && region->map_sync())
      .boolean("emulated", emulated)
      .integer("pool_bytes", pool ? static_cast<long long>(pool->pool_bytes()) : 0)
      .str("affinity", pin ? "pinned" : cpus_given ? "cpu-set" : "none")
      .boolean("persist", persist_on)
      .str("persist_mechanism", mechanism)
      .raw("page_nodes", pmem.empty() ? page_nodes_json(page_nodes(region->data(), 3 * stride)) : "{}")
      .integer("last_level_cache_bytes", static_cast<long long>(llc))
      .str("clock", "std::chrono::steady_clock")
      .str("counting", "STREAM: bytes of arrays read + array written; write-allocate not counted")
      .number("precision", policy.adaptive() ? policy.precision : NAN)
      .number("max_time_seconds", policy.max_time)
      .emit();

  double ea = 2.0, eb = 2.0, ec = 0.0, sum = 0.0, read_sum = 0.0, expected_sum = 0.0;
  std::vector<precision::Repeat> repeats(kernels.size(), precision::Repeat(policy));
  std::vector<bool> active(kernels.size(), true);
  for (int it = 0; std::find(active.begin(), active.end(), true) != active.end(); ++it) {
    for (size_t ki = 0; ki < kernels.size(); ++ki) {
      if (!active[ki]) continue;
      const std::string& name = kernels[ki];
      const Kernel& k = kernel_named(name);
      double seconds = run_kernel(k.op, x, threads, persist, sum);
      replay(k.op, ea, eb, ec);
      if (k.op == Op::read) {
        read_sum = sum;
        expected_sum = ea * static_cast<double>(n);
      }
      const double bytes = static_cast<double>(k.arrays_read + k.arrays_written) * array_bytes;
      JsonLine()
          .str("probe", "stream")
          .str("record", "sample")
          .str("kernel", name)
          .integer("iteration", it)
          .boolean("warmup", it == 0)
          .number("seconds", seconds)
          .number("bytes", bytes)
          .number("write_allocate_bytes", k.arrays_written * static_cast<double>(array_bytes))
          .integer("transactions", tx_commits)
          .emit();
      if (it > 0 && !repeats[ki].more(seconds)) {
        active[ki] = false;
        JsonLine point;
        point.str("probe", "stream").str("record", "point").str("kernel", name);
        repeats[ki].describe(point).emit();
      }
    }
  }

  if (corrupt >= 0 && static_cast<size_t>(corrupt) < n) x.a[corrupt] += 1.0;  // test hook: must be caught
  Check ca = check_array(x.a, n, ea), cb = check_array(x.b, n, eb), cc = check_array(x.c, n, ec);
  bool sum_ok = true;
  double sum_error = 0.0;
  bool any_read = std::find(kernels.begin(), kernels.end(), "read") != kernels.end();
  if (any_read) {
    sum_error = std::fabs(read_sum - expected_sum) / expected_sum;
    sum_ok = sum_error <= 1e-9;
  }
  const bool ok = ca.bad == 0 && cb.bad == 0 && cc.bad == 0 && sum_ok;
  std::string detail;
  auto describe = [&](const char* array, const Check& ch) {
    if (ch.bad)
      detail += std::string(detail.empty() ? "" : "; ") + "array " + array + ": " + std::to_string(ch.bad) +
                " elements wrong, first at index " + std::to_string(ch.first);
  };
  describe("a", ca);
  describe("b", cb);
  describe("c", cc);
  if (!sum_ok) detail += std::string(detail.empty() ? "" : "; ") + "read kernel sum off";
  JsonLine()
      .str("probe", "stream")
      .str("record", "validation")
      .boolean("ok", ok)
      .number("max_relative_error", std::max({ca.worst, cb.worst, cc.worst, sum_error}))
      .str("detail", ok ? "every element matches the scalar replay" : detail)
      .emit();
  if (!ok) {
    std::fprintf(stderr, "xferlab-probe: validation failed: %s\n", detail.c_str());
    return 1;
  }
  return 0;
}

}  // namespace xferlab
