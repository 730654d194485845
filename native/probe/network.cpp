// `xferlab-probe network`: MPI point-to-point and collective benchmarks with the definitions of the
// OSU Micro-Benchmarks (osu_latency, osu_bw, osu_bibw, osu_mbw_mr, osu_multi_lat, osu_allreduce …),
// so that the figures compare with OSU's one to one. Every rank runs this; rank 0 prints.
//
// How each test is timed (in network_p2p.cpp and network_collectives.cpp; std::chrono::steady_clock,
// as every loop of the probe; the samples' sum or mean is OSU's timer):
//   latency    ping-pong between rank 0 and a partner, timed as OSU times it, one clock read around a run
//              of iterations: the iterations split into up to 100 equal batches (network.hpp,
//              latency_batches); sample = a batch's time / its iterations / 2 (one-way)
//   bw         the sender posts `window` non-blocking sends, waits for all, then takes a 4-byte ack
//              from the receiver; sample = the time of one window (bytes = size x window)
//   bibw       both sides post `window` receives and `window` sends, then wait for all 2 x window
//   multi_lat  every pair (r, r + ranks/2) ping-pongs at once; a sample per batch per pair
//   mbw_mr     every pair runs bw's window at once; sample = the slowest pair's window time
//   allreduce, reduce (MPI_FLOAT sum), bcast, alltoall, allgather (MPI_CHAR), barrier: every rank
//              times each call alone, with a barrier between calls (as OSU); samples of every rank
//              (gather, scatter, reduce_scatter, alltoallv, allgatherv too)
//   iallreduce … ibarrier: OSU's non-blocking method (network_nbc.cpp): pure communication, then
//              the overall time with a compute phase between start and wait, and the compute's time
//
// Buffers per side (OSU's H D / D H): with --buffers host,device the point-to-point tests run every ordered
// pair of kinds (the sender's first: H H, H D, D H, D D); collectives one kind at a time.
// Buffers: host memory (page-aligned, bound to --node), or device memory of an OpenCL/CUDA backend
// (backend.hpp), given to MPI directly where the MPI moves device memory itself (CUDA-aware MPI,
// path "direct"), else staged through pinned host memory (path "staged": a device-to-host copy
// before each send and a host-to-device copy after each receive, inside the timed loop).
// Validation: the timed loop moves known bytes (a pattern of the sender's rank and the size); after
// it, every receiver checks what arrived, and rank 0 prints one validation record per point.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "network.hpp"
#include "network_coll.hpp"
#include "probe.hpp"

namespace xferlab {
namespace net {

const mpi::Api* g = nullptr;

}  // namespace net

namespace {

using namespace net;

Options parse(Args& args) {
  Options o;
  o.tests = args.words("tests", "latency,bw,bibw,mbw_mr,allreduce", kTests);
  o.sizes = args.integers("sizes", "0,1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144,"
                                   "524288,1048576,2097152,4194304", 0, INT_MAX);
  o.collective_sizes =
      args.integers("collective-sizes", "4,16,64,256,1024,4096,16384,65536,262144,1048576", 0, INT_MAX);
  o.large_from = args.integer("large-from", 8192, 0, INT_MAX);
  o.iterations = static_cast<int>(args.integer("iterations", 10000, 1, 100000000));
  o.iterations_large = static_cast<int>(args.integer("iterations-large", 1000, 1, 100000000));
  o.warmup = static_cast<int>(args.integer("warmup", 100, 0, 100000000));
  o.warmup_large = static_cast<int>(args.integer("warmup-large", 10, 0, 100000000));
  o.bw_iterations = static_cast<int>(args.integer("bw-iterations", 100, 1, 100000000));
  o.bw_iterations_large = static_cast<int>(args.integer("bw-iterations-large", 20, 1, 100000000));
  o.bw_warmup = static_cast<int>(args.integer("bw-warmup", 10, 0, 100000000));
  o.bw_warmup_large = static_cast<int>(args.integer("bw-warmup-large", 2, 0, 100000000));
  o.coll_iterations = static_cast<int>(args.integer("collective-iterations", 1000, 1, 100000000));
  o.coll_iterations_large = static_cast<int>(args.integer("collective-iterations-large", 100, 1, 100000000));
  o.coll_warmup = static_cast<int>(args.integer("collective-warmup", 100, 0, 100000000));
  o.coll_warmup_large = static_cast<int>(args.integer("collective-warmup-large", 10, 0, 100000000));
  o.window = static_cast<int>(args.integer("window", 64, 1, 4096));
  o.buffers = args.words("buffers", "host", {"host", "device"});
  o.backend = args.words("backend", "opencl", {"opencl", "cuda"}).front();
  o.device = static_cast<int>(args.integer("device", 0, 0, 1023));
  o.path = args.words("path", "auto", {"auto", "staged", "direct"}).front();
  o.node = static_cast<int>(args.integer("node", -1, -1, 4095));
  o.bind = args.words("bind", "none", {"none", "core"}).front();
  o.budget = args.real("budget", 0.0, 0.0, 1e7);
  o.inventory_file = args.text("inventory", "");
  o.corrupt = args.flag("corrupt");
  o.rma_sync = args.given("rma-sync") ? args.words("rma-sync", "flush", kRmaSyncs).front() : "";
  o.rma_window = args.words("rma-window", "allocate", kRmaWindows).front();
  args.finish();
  if (o.node >= 0) check_node(o.node);
  if (!o.rma_sync.empty() && o.rma_sync != "fence" && o.rma_sync != "pscw" &&
      std::find(o.tests.begin(), o.tests.end(), "put_bibw") != o.tests.end())
    throw BadArgument("--rma-sync " + o.rma_sync + ": put_bibw takes fence or pscw (as OSU's osu_put_bibw)");
  return o;
}

std::string read_file(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path);
  if (!in) throw BadArgument("--inventory '" + path + "' cannot be read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int run_network(Args& args) {
  using namespace net;
  const Options o = parse(args);
  const std::string inventory = read_file(o.inventory_file);
  std::string why;
  g = M::load(why);
  if (!g) throw NotAvailable("MPI: " + why + " (set XFERLAB_MPI_LIB to an MPI standard-ABI library, libmpi_abi.so, or xferlab's shim: measure network --mpi)");
  if (std::any_of(o.tests.begin(), o.tests.end(), one_sided) && !M::one_sided_missing().empty())
    throw NotAvailable("MPI: " + M::library() + " has no one-sided communication (it does not export " +
                       M::one_sided_missing() + ")");
  int argc = 0;
  char** argv = nullptr;
  ok(g->Init(&argc, &argv), "MPI_Init");
  ok(g->Comm_set_errhandler(M::COMM_WORLD, M::ERRORS_RETURN), "MPI_Comm_set_errhandler");
  World w;
  try {
    ok(g->Comm_rank(M::COMM_WORLD, &w.rank), "MPI_Comm_rank");
    ok(g->Comm_size(M::COMM_WORLD, &w.size), "MPI_Comm_size");
    if (std::getenv("XFERLAB_PROBE_FAULT_RANK") ? std::atoi(std::getenv("XFERLAB_PROBE_FAULT_RANK")) == w.rank
                                                : w.rank == 0)
      fault::arm();
    M::Comm local = M::COMM_NULL;
    ok(g->Comm_split_type(M::COMM_WORLD, M::COMM_TYPE_SHARED, 0, M::INFO_NULL, &local), "MPI_Comm_split_type");
    ok(g->Comm_rank(local, &w.local_rank), "MPI_Comm_rank");
    g->Comm_free(&local);
    std::string bound = "";
    if (o.bind == "core") {
      const auto cpus = allowed_cpus();
      if (!cpus.empty() && !pin_to_cpu(cpus[static_cast<size_t>(w.local_rank) % cpus.size()])) bound = "refused";
    }
    char name[M::MAX_PROCESSOR_NAME] = {0};
    int length = 0;
    ok(g->Get_processor_name(name, &length), "MPI_Get_processor_name");
    w.hosts = all_strings(w, std::string(name, static_cast<size_t>(length)));
    const auto cpus = all_strings(w, cpu_list() + (bound.empty() ? "" : " (binding refused)"));
    const auto inventories = all_strings(w, inventory);

    // The memory kinds this MPI says it can move (MPI 4.1's "mpi_memory_alloc_kinds" info key of
    // MPI_COMM_WORLD, e.g. "mpi,system,cuda:device"): the standard way to ask for GPU support.
    std::string alloc_kinds = "";
    {
      M::Info info = M::INFO_NULL;
      if (g->Comm_get_info(M::COMM_WORLD, &info) == M::SUCCESS) {
        char value[M::MAX_INFO_VAL + 1] = {0};
        int length = M::MAX_INFO_VAL, flag = 0;
        if (g->Info_get_string(info, "mpi_memory_alloc_kinds", &length, value, &flag) == M::SUCCESS && flag)
          alloc_kinds = value;
        g->Info_free(&info);
      }
    }
    // Device memory: every rank opens its backend; the paths it can take.
    std::unique_ptr<Backend> backend;
    std::vector<std::string> paths;
    if (std::find(o.buffers.begin(), o.buffers.end(), "host") != o.buffers.end()) paths.push_back("host");
    std::string device_json = "null", gpu_aware = "no";
    if (std::find(o.buffers.begin(), o.buffers.end(), "device") != o.buffers.end()) {
      backend = make_backend(o.backend);
      if (backend->device_count() <= o.device)
        throw BadArgument("--device " + std::to_string(o.device) + ": the " + o.backend + " backend has " +
                          std::to_string(backend->device_count()) + " device(s)");
      backend->open(o.device);
      device_json = backend->describe(o.device);
      const bool kinds_say = alloc_kinds.find("cuda") != std::string::npos;
      const bool query_says = g->Query_cuda_support && g->Query_cuda_support() == 1;
      const bool aware = o.backend == "cuda" && (kinds_say || query_says);
      gpu_aware = o.backend == "opencl" ? "no (no MPI moves OpenCL buffers itself)"
                  : kinds_say           ? "yes (mpi_memory_alloc_kinds lists cuda)"
                  : query_says          ? "yes (MPIX_Query_cuda_support)"
                                        : "no (mpi_memory_alloc_kinds '" + alloc_kinds + "' lists no cuda kind)";
      if (o.path == "direct" && !aware) throw BadArgument("--path direct: this MPI does not move device memory itself (" + gpu_aware + ")");
      if (o.path != "direct") paths.push_back("staged");
      if (o.path == "direct" || (o.path == "auto" && aware)) paths.push_back("direct");
    }
    // Where host buffers bound to --node land: a probe buffer like theirs, touched, its pages located.
    std::string node_pages = "null", node_binding = "";
    if (o.node >= 0) {
      RegionOptions r;
      r.bytes = 1 << 20;
      r.node = o.node;
      auto region = Region::map(r);
      std::memset(region->data(), 1, r.bytes);
      node_binding = region->binding();
      node_pages = page_nodes_json(page_nodes(region->data(), r.bytes));
    }
    if (w.rank == 0) {
      char library[M::MAX_LIBRARY_VERSION_STRING] = {0};
      int lib_length = 0, major = 0, minor = 0, abi_major = 0, abi_minor = 0;
      ok(g->Get_library_version(library, &lib_length), "MPI_Get_library_version");
      ok(g->Get_version(&major, &minor), "MPI_Get_version");
      ok(g->Abi_get_version(&abi_major, &abi_minor), "MPI_Abi_get_version");
      std::string first_line(library, static_cast<size_t>(std::max(lib_length, 0)));
      first_line = first_line.substr(0, first_line.find('\n'));
      std::string hosts = "[";
      for (int r = 0; r < w.size; ++r) {
        JsonLine h;
        h.integer("rank", r).str("host", w.hosts[r]).str("cpus", cpus[r]);
        if (!inventories[r].empty()) h.raw("inventory", inventories[r]);
        hosts += (r ? "," : "") + h.text();
      }
      std::string path_list = "[";
      for (size_t i = 0; i < paths.size(); ++i) path_list += (i ? "," : "") + json_text(paths[i]);
      JsonLine()
          .str("record", "setup")
          .integer("ranks", w.size)
          .str("library", first_line)
          .str("library_path", M::library())
          .str("mpi_version", std::to_string(major) + "." + std::to_string(minor))
          .str("abi", M::abi())
          .str("abi_version", abi_major < 0 ? "" : std::to_string(abi_major) + "." + std::to_string(abi_minor))
          .str("mpi_library", M::mpi_library())
          .str("clock", "std::chrono::steady_clock")
          .integer("node", o.node)
          .raw("node_pages", node_pages)
          .str("node_binding_error", node_binding)
          .str("bind", o.bind)
          .raw("paths", path_list + "]")
          .str("gpu_aware", gpu_aware)
          .str("memory_alloc_kinds", alloc_kinds)
          .raw("device", device_json)
          .raw("hosts", hosts + "]")
          .emit();
    }
    // Point-to-point partners of rank 0: the first other rank on its host, the first on another.
    std::vector<int> partners;
    for (int r = 1; r < w.size; ++r)
      if (w.same_host(0, r)) {
        partners.push_back(r);
        break;
      }
    for (int r = 1; r < w.size; ++r)
      if (!w.same_host(0, r)) {
        partners.push_back(r);
        break;
      }
    const auto start = Clock::now();
    long long skipped = 0;
    bool stopped = false;
    auto go = [&]() {  // rank 0 decides whether the next point starts (the budget), every rank follows
      int flag = stopped ? 0 : 1;
      if (w.rank == 0 && o.budget > 0 && since(start) >= o.budget) flag = 0;
      ok(g->Bcast(&flag, 1, M::INT, 0, M::COMM_WORLD), "MPI_Bcast");
      stopped = !flag;
      skipped += stopped;
      return flag == 1;
    };
    const bool with_host = std::find(o.buffers.begin(), o.buffers.end(), "host") != o.buffers.end();
    for (const std::string& path : paths) {
      Runner runner(o, w, path == "host" ? nullptr : backend.get(), path);
      // The point-to-point tests' (a on host, b on host) sides on this path: a device path runs D D, and with
      // host buffers listed too H D and D H (OSU's order: H H, H D, D H, D D).
      std::vector<std::pair<bool, bool>> sides = {{false, false}};
      if (path != "host" && with_host) sides = {{true, false}, {false, true}, {false, false}};
      for (const std::string& test : o.tests) {
        if (!collective(test) && w.size < 2) continue;
        if (moves_no_data(test) && path != "host") continue;  // no buffer: the host path's figure is the one
        const auto& sizes = collective(test) ? o.collective_sizes : o.sizes;
        for (long long size : moves_no_data(test) ? std::vector<long long>{0} : sizes) {
          if ((test == "bw" || test == "bibw" || test == "mbw_mr") && size == 0) continue;  // OSU starts these at 1 B
          if (collective(test) && !takes(test, size, w.size)) continue;  // below one float (one per rank's block)
          if (one_sided(test)) {  // host memory only (measure/network.py refuses device buffers with them)
            if (path != "host" || (size == 0 && test != "put_latency" && test != "get_latency")) continue;
            for (int b : partners)
              if (go()) runner.run_rma(test, size, 0, b);
          } else if (test == "latency" || test == "bw" || test == "bibw" || test == "multi_lat" || test == "mbw_mr") {
            for (const auto& side : sides) {  // OSU's H D / D H: each ordered pair of the kinds --buffers lists
              runner.sides(side.first, side.second);
              if (test == "multi_lat" || test == "mbw_mr") {
                if (go()) runner.run_pairs(test, size);
              } else {
                for (int b : partners)
                  if (go()) runner.run(test, size, 0, b);
              }
            }
            runner.sides(false, false);
          } else if (nonblocking(test)) {
            if (go()) runner.run_nbc(test, size);
          } else if (go()) {
            runner.run_collective(test, size);
          }
        }
      }
    }
    if (w.rank == 0 && skipped)
      JsonLine().str("record", "stopped").str("reason", "the budget was used up").integer("points_skipped", skipped).emit();
  } catch (const BadArgument& error) {
    std::fprintf(stderr, "xferlab-probe: network: %s\n", error.what());
    std::fflush(stderr);
    g->Abort(M::COMM_WORLD, 2);
    return 2;
  } catch (const NotAvailable& error) {
    std::fprintf(stderr, "xferlab-probe: network: not available: %s\n", error.what());
    std::fflush(stderr);
    g->Abort(M::COMM_WORLD, 3);
    return 3;
  } catch (const std::exception& error) {
    // Another rank may be waiting in a call with this one: end them all rather than hang.
    std::fprintf(stderr, "xferlab-probe: network: rank %d: %s\n", w.rank, error.what());
    std::fflush(stderr);
    g->Abort(M::COMM_WORLD, 1);
    return 1;
  }
  g->Finalize();
  return 0;
}

}  // namespace xferlab
