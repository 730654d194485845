// `xferlab-probe loaded`: the chase of chase.hpp on the first CPU while every other CPU generates
// traffic, one read/write mix at a time, from a long delay between accesses (idle) down to none
// (saturation): the bandwidth-latency curves of Intel MLC's --loaded_latency (-W modes) and of the Mess
// benchmark (Esmaili-Dokht et al., "A Mess of Memory System Benchmarking, Simulation and Application
// Profiling", MICRO 2024), one curve per mix, in one run.
//
// A mix is R:W, R lines read for every W written (read = 1:0, write = 0:1), its writes ordinary stores
// or, with -nt (nt-write = 0:1-nt), non-temporal ones (movntdq: no read for ownership, no write-allocate).
// Each generator walks a buffer of its own, line by line, and spins `delay` iterations after each line;
// line i is read when i mod (R+W) < R, else written (a whole line: eight 8-byte words), so a line keeps
// its role through a mix and the lines read always hold what the mix's start wrote there.
//
// Each (mix, delay) point: the generators start, one chase of --min-time settles them, then --repeats
// windows, each a timed chase of at least --min-time, with the lines every generator touched in the same
// window: a "sample" record per window with the chase's seconds per load and the window's traffic
// (read_bytes + write_bytes: each line touched counted once, 64 bytes, write-allocate not counted, as
// STREAM counts; write_allocate_bytes apart: the lines written with ordinary stores).
//
// Validated traffic: when a point ends each generator's claim (the lines it read and wrote) is checked
// against memory: the lines its walk must have touched are worked out from the claim alone; the words it
// read must add up to the sum of what those lines hold (each read line holds a known value), and every
// line it must have written last holds the point's stamp and the pass of the walk that wrote it, the next
// line not yet. A "check" record per point says whether every generator's claim held, and why not.
// --miscount N (tests only) makes every generator claim N lines more than it touched.
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define XFERLAB_NT_STORES 1
#endif

#include "args.hpp"
#include "chase.hpp"
#include "clock.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "probe.hpp"

namespace xferlab {

namespace {

constexpr size_t kWords = kLine / sizeof(uint64_t);
constexpr uint64_t kStampBit = 1ull << 63;  // set in every written value, clear in every initial one

struct Mix {
  std::string name;
  int reads = 1, writes = 0;
  bool nt = false;
  int group() const { return reads + writes; }
};

Mix parse_mix(const std::string& text) {
  Mix m;
  m.name = text;
  if (text == "read") return m;
  if (text == "write" || text == "nt-write") {
    m.reads = 0, m.writes = 1, m.nt = text == "nt-write";
    return m;
  }
  std::string body = text;
  if (body.size() > 3 && body.compare(body.size() - 3, 3, "-nt") == 0) {
    m.nt = true;
    body.resize(body.size() - 3);
  }
  const auto colon = body.find(':');
  auto number = [&](const std::string& part) {
    if (part.empty() || part.size() > 2 || part.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(part);
  };
  const int r = colon == std::string::npos ? -1 : number(body.substr(0, colon));
  const int w = colon == std::string::npos ? -1 : number(body.substr(colon + 1));
  if (r < 0 || w < 0 || r > 16 || w > 16 || r + w == 0 || (m.nt && w == 0))
    throw BadArgument("--mixes: '" + text + "' is not a mix; allowed: read, write, nt-write, R:W or R:W-nt (R, W "
                      "0..16, not both 0; -nt: the writes non-temporal, so W >= 1)");
  m.reads = r, m.writes = w;
  return m;
}

// What a line read holds (its first word): known from its index, top bit clear.
inline uint64_t initial(size_t line, uint64_t seed) { return (line * 0x9E3779B97F4A7C15ull + seed) & ~kStampBit; }

inline void write_line(uint64_t* line, uint64_t value, bool nt) {
#ifdef XFERLAB_NT_STORES
  if (nt) {
    const __m128i v = _mm_set1_epi64x(static_cast<long long>(value));
    auto* q = reinterpret_cast<__m128i*>(line);
    _mm_stream_si128(q, v), _mm_stream_si128(q + 1, v), _mm_stream_si128(q + 2, v), _mm_stream_si128(q + 3, v);
    return;
  }
#endif
  (void)nt;
  auto* w = reinterpret_cast<volatile uint64_t*>(line);
  for (size_t i = 0; i < kWords; ++i) w[i] = value;
}

// One generator: its buffer, where its walk goes on from, and what it claims and the check found.
struct alignas(kLine) Generator {
  uint64_t* base = nullptr;
  size_t lines = 0;    // of its buffer
  size_t cursor = 0;   // the next line of the walk (the walk goes on from point to point within a mix)
  uint64_t seed = 0;
  uint64_t reads = 0, writes = 0, sum = 0;  // claimed at the end of a point
  bool ok = true;
  std::string detail;
  uint64_t checked = 0;  // lines of memory the check read
};

struct alignas(kLine) Progress {  // published as the generator runs: what a window moved
  std::atomic<uint64_t> reads{0}, writes{0};
};

// Whether `g`'s claim for the point (walk from `start`, `stamp`) holds against memory; sets ok and detail.
void check(Generator& g, const Mix& mix, size_t usable, size_t start, uint64_t stamp) {
  const uint64_t n = g.reads + g.writes;
  const int group = mix.group();
  uint64_t reads = 0, sum = 0;
  size_t j = start, phase = start % group;
  for (uint64_t k = 0; k < n; ++k) {  // every line the claim says was touched: which were reads, what they held
    if (static_cast<int>(phase) < mix.reads) ++reads, sum += initial(j, g.seed);
    if (++phase == static_cast<size_t>(group)) phase = 0;
    if (++j == usable) j = 0, phase = 0;
  }
  char text[256];
  if (reads != g.reads) {
    std::snprintf(text, sizeof text, "claims %" PRIu64 " reads and %" PRIu64 " writes; a walk of %" PRIu64
                  " lines from line %zu reads %" PRIu64, g.reads, g.writes, n, start, reads);
    g.ok = false, g.detail = text;
    return;
  }
  if (sum != g.sum) {
    std::snprintf(text, sizeof text, "claims %" PRIu64 " lines read; the words it read add up to %#" PRIx64
                  ", the lines it claims hold %#" PRIx64, g.reads, g.sum, sum);
    g.ok = false, g.detail = text;
    return;
  }
  // The lines written: each one's last write, the final min(n, usable) lines of the walk, then the next line.
  const uint64_t first = n > usable ? n - usable : 0;
  for (uint64_t k = first; k <= n && mix.writes; ++k) {
    const size_t line = (start + k) % usable;
    if (static_cast<int>(line % group) < mix.reads) continue;
    const uint64_t want = stamp | ((start + k) / usable);
    const uint64_t* w = g.base + line * kWords;
    ++g.checked;
    if (k < n) {
      for (size_t i = 0; i < kWords; ++i)
        if (w[i] != want) {
          std::snprintf(text, sizeof text, "claims %" PRIu64 " lines written; line %zu word %zu holds %#" PRIx64
                        ", its last claimed write put %#" PRIx64, g.writes, line, i, w[i], want);
          g.ok = false, g.detail = text;
          return;
        }
    } else if (n < static_cast<uint64_t>(usable) && w[0] == want) {
      std::snprintf(text, sizeof text, "claims %" PRIu64 " lines written; line %zu, the next, was written too",
                    g.writes, line);
      g.ok = false, g.detail = text;
      return;
    }
  }
}

volatile uint64_t g_sink;

}  // namespace

int run_loaded(Args& args) {
  const size_t llc = last_level_cache_bytes();
  const long long default_size = static_cast<long long>(std::max<size_t>(8 * llc, 128u << 20));
  const long long size = args.integer("size", default_size, 1 << 20, 1ll << 40);
  const auto cpus = args.given("cpus") ? parse_cpu_list(args.text("cpus", ""), "--cpus") : allowed_cpus();
  const int node = static_cast<int>(args.integer("node", -1, 0, 1023));
  const auto delays = args.integers("delays", "4096,1024,256,64,16,4,0", 0, 1ll << 30);
  const std::string mix_text = args.text("mixes", "read,3:1,2:1,1:1,nt-write");
  const double min_time = args.real("min-time", 0.01, 1e-4, 60.0);
  const int repeats = static_cast<int>(args.integer("repeats", 8, 1, 1000));
  const long long miscount = args.integer("miscount", 0, 0, 1ll << 30);
  const std::string hugepages = args.words("hugepages", "thp", {"none", "thp", "hugetlb"})[0];
  args.finish();
  std::vector<Mix> mixes;
  for (size_t at = 0; at <= mix_text.size();) {
    const size_t comma = std::min(mix_text.find(',', at), mix_text.size());
    mixes.push_back(parse_mix(mix_text.substr(at, comma - at)));
    at = comma + 1;
  }
#ifndef XFERLAB_NT_STORES
  for (const Mix& m : mixes)
    if (m.nt) throw BadArgument("--mixes " + m.name + ": non-temporal stores are written for x86-64 only");
#endif
  if (args.given("cpus")) check_cpus(cpus);
  if (node >= 0) check_node(node);
  if (cpus.size() < 2) throw BadArgument("loaded latency needs at least two CPUs: one chases, the others load");

  const int loaders = static_cast<int>(cpus.size()) - 1;
  // The generators' buffers together as large as the chase's (each at least 1 MiB): past the caches.
  const size_t per_loader = std::max<size_t>(static_cast<size_t>(size) / loaders, 1u << 20) / kLine * kLine;
  auto chase_mem = chase_region(static_cast<size_t>(size), node, hugepages);
  auto load_mem = chase_region(per_loader * loaders, node, hugepages);
  std::vector<Generator> gens(loaders);
  for (int w = 0; w < loaders; ++w) {
    gens[w].base = reinterpret_cast<uint64_t*>(load_mem->data() + static_cast<size_t>(w) * per_loader);
    gens[w].lines = per_loader / kLine;
    gens[w].seed = 0x5EED0000ull + static_cast<uint64_t>(w) * 0x10001ull;
  }
  std::mt19937_64 rng(777);
  auto* lines = reinterpret_cast<Line*>(chase_mem->data());
  const size_t count = static_cast<size_t>(size) / kLine;
  Line* p = build_cycle(lines, count, rng);

  JsonLine()
      .str("probe", "loaded")
      .str("record", "setup")
      .integer("node", node)
      .integer("chase_cpu", cpus[0])
      .str("traffic_cpus", cpu_list_text(std::vector<int>(cpus.begin() + 1, cpus.end())))
      .integer("traffic_threads", loaders)
      .str("mixes", mix_text)
      .integer("size_bytes", size)
      .integer("traffic_buffer_bytes", static_cast<long long>(per_loader))
      .number("min_time_seconds", min_time)
      .integer("repeats", repeats)
      .integer("miscount", miscount)
      .str("hugepages", hugepages)
      .str("counting", "each line touched counted once (64 B read or written); write-allocate not counted, "
                       "write_allocate_bytes apart (ordinary stores; none for non-temporal ones)")
      .str("clock", "std::chrono::steady_clock")
      .emit();

  pin_to_cpu(cpus[0]);
  p = chase(p, count);  // warm-up
  uint64_t point = 0;
  for (const Mix& mix : mixes) {
    bool fresh = true;  // the mix's first point: its generators write what their lines read hold
    for (auto delay : delays) {
      const uint64_t stamp = kStampBit | (++point << 32);
      std::atomic<bool> stop{false}, go{false};
      std::atomic<int> ready{0};
      std::vector<Progress> progress(loaders);
      std::vector<size_t> starts(loaders);
      std::vector<std::thread> workers;
      for (int w = 0; w < loaders; ++w) {
        workers.emplace_back([&, w] {
          pin_to_cpu(cpus[1 + w]);
          Generator& g = gens[w];
          const size_t group = static_cast<size_t>(mix.group()), usable = g.lines / group * group;
          if (fresh) {
            for (size_t i = 0; i < g.lines; ++i) g.base[i * kWords] = initial(i, g.seed);
            g.cursor = 0;
          }
          const size_t start = g.cursor % usable;
          starts[w] = start;
          size_t i = start, phase = start % group;
          uint64_t reads = 0, writes = 0, sum = 0, pass = 0;
          const size_t nreads = static_cast<size_t>(mix.reads);
          ready.fetch_add(1);
          while (!go.load()) std::this_thread::yield();
          while (!stop.load(std::memory_order_relaxed)) {
            uint64_t* line = g.base + i * kWords;
            if (phase < nreads) {
              sum += *reinterpret_cast<volatile uint64_t*>(line);
              progress[w].reads.store(++reads, std::memory_order_relaxed);
            } else {
              write_line(line, stamp | pass, mix.nt);
              progress[w].writes.store(++writes, std::memory_order_relaxed);
            }
            for (long long d = 0; d < delay; ++d) asm volatile("" ::: "memory");
            if (++phase == group) phase = 0;
            if (++i == usable) i = 0, phase = 0, ++pass;
          }
#ifdef XFERLAB_NT_STORES
          _mm_sfence();  // the non-temporal stores globally visible before the check reads them
#endif
          g.cursor = i;
          (mix.reads ? reads : writes) += static_cast<uint64_t>(miscount);
          g.reads = reads, g.writes = writes, g.sum = sum, g.ok = true, g.detail.clear(), g.checked = 0;
        });
      }
      while (ready.load() < loaders) std::this_thread::yield();
      fresh = false;
      auto moved = [&](uint64_t& reads, uint64_t& writes) {
        reads = writes = 0;
        for (const Progress& q : progress)
          reads += q.reads.load(std::memory_order_relaxed), writes += q.writes.load(std::memory_order_relaxed);
      };
      const auto began = Clock::now();
      go.store(true);
      uint64_t steps = 0;
      timed_chase(p, min_time, steps);  // settles the generators; not a sample
      for (int r = 0; r < repeats; ++r) {
        uint64_t r0, w0, r1, w1;
        double seconds = 0;
        for (;;) {  // a window: the chase for at least --min-time, the traffic over the same time
          moved(r0, w0);
          const auto t0 = Clock::now();
          p = chase(p, steps);
          seconds = since(t0);
          moved(r1, w1);
          if (seconds >= min_time || steps >= (1ull << 40)) break;
          steps *= 2;
        }
        const double read_bytes = static_cast<double>((r1 - r0) * kLine);
        const double write_bytes = static_cast<double>((w1 - w0) * kLine);
        JsonLine()
            .str("probe", "loaded")
            .str("record", "sample")
            .str("mix", mix.name)
            .integer("delay", delay)
            .integer("repeat", r)
            .number("latency_seconds", seconds / static_cast<double>(steps))
            .integer("loads", static_cast<long long>(steps))
            .number("seconds", seconds)
            .number("read_bytes", read_bytes)
            .number("write_bytes", write_bytes)
            .number("write_allocate_bytes", mix.nt ? 0.0 : write_bytes)
            .number("traffic_bandwidth_bytes_per_second", (read_bytes + write_bytes) / seconds)
            .emit();
      }
      stop.store(true);
      for (auto& t : workers) t.join();
      const double point_seconds = since(began);
      // The check, a thread per generator again (each reads back its own buffer), out of the timed windows.
      workers.clear();
      for (int w = 0; w < loaders; ++w) {
        workers.emplace_back([&, w] {
          pin_to_cpu(cpus[1 + w]);
          Generator& g = gens[w];
          const size_t group = static_cast<size_t>(mix.group());
          check(g, mix, g.lines / group * group, starts[w], stamp);
        });
      }
      for (auto& t : workers) t.join();
      bool ok = true;
      uint64_t reads = 0, writes = 0, checked = 0;
      std::string detail;
      for (int w = 0; w < loaders; ++w) {
        const Generator& g = gens[w];
        reads += g.reads, writes += g.writes, checked += g.checked;
        g_sink = g_sink + g.sum;
        if (!g.ok && ok) detail = "generator " + std::to_string(w) + " (CPU " + std::to_string(cpus[1 + w]) + "): " + g.detail;
        ok = ok && g.ok;
      }
      JsonLine()
          .str("probe", "loaded")
          .str("record", "check")
          .str("mix", mix.name)
          .integer("delay", delay)
          .boolean("ok", ok)
          .integer("lines_read", static_cast<long long>(reads))
          .integer("lines_written", static_cast<long long>(writes))
          .integer("lines_checked", static_cast<long long>(checked))
          .number("seconds", point_seconds)
          .str("detail", ok ? "every generator's lines read add up and the lines it wrote hold its writes" : detail)
          .emit();
    }
  }
  g_sink = g_sink + reinterpret_cast<uintptr_t>(p);
  return 0;
}

}  // namespace xferlab
