// xferlab-probe: the native side of xferlab's measurements.
// One executable, one subcommand per measurement, JSON lines on stdout, errors on stderr.
// Timing loops live here, never in Python.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <stdexcept>

#include "args.hpp"
#include "backend.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "probe.hpp"
#include "programs.hpp"
#include "region.hpp"

#ifndef XFERLAB_VERSION
#define XFERLAB_VERSION "unknown"
#endif

namespace {

const char* kUsage =
    "usage: xferlab-probe COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  version              the probe's version and how it was built\n"
    "  clock [--samples N]  resolution and read cost of the host steady clock\n"
    "  stream [--kernels copy,scale,add,triad,read,write] [--size BYTES] [--iterations N]\n"
    "         [--threads N] [--cpus LIST] [--node N] [--first-touch on|off]\n"
    "         [--hugepages none|thp|hugetlb] [--pmem PATH [--persist | --pmdk persist|tx]] [--no-pin]\n"
    "         [--offset BYTES]\n"
    "                       STREAM kernels; one JSON line per timed iteration (--pmdk: STREAM-PMem, the\n"
    "                       arrays in a PMDK libpmemobj pool, $XFERLAB_PMEMOBJ_LIB or libpmemobj.so.1;\n"
    "                       --no-pin --cpus: threads confined to the set, not each to one CPU)\n"
    "  latency [--sizes B,B,..] [--node N] [--cpu C] [--min-time S] [--repeats N] [--budget S] [--cold]\n"
    "                       pointer-chase latency over working-set sizes (--budget: start no size that\n"
    "                       would end past S seconds; --cold: the warm-up pass reads from memory)\n"
    "  loaded [--size B] [--cpus LIST] [--node N] [--delays D,D,..] [--mixes MIX,..] [--min-time S]\n"
    "         [--repeats N] [--miscount N]\n"
    "                       chase latency under increasing traffic from the other CPUs, per read/write\n"
    "                       mix (read, write, nt-write, R:W, R:W-nt; default read,3:1,2:1,1:1,nt-write),\n"
    "                       the traffic checked against memory (--miscount N, tests: claim N lines more)\n"
    "  nodes                NUMA nodes and the CPUs this process may use\n"
    "  devices [--backend opencl|cuda]\n"
    "                       the accelerators a backend sees, with their inventory\n"
    "  transfer [--backend B] [--device N] [--kinds pageable,pinned,svm-coarse,svm-fine,managed,\n"
    "         managed-prefetch] [--sizes B,B,..] [--directions h2d,d2h,d2d,bidir] [--iterations N]\n"
    "         [--max-iterations N] [--min-time S] [--warmup N] [--node N] [--order sequential|interleaved]\n"
    "         [--cpus LIST]\n"
    "                       host<->device copies over a size sweep, validated (interleaved: points in\n"
    "                       rounds of short batches, so drift is spread over every size; --cpus: the\n"
    "                       host thread placed on these CPUs once the device is open)\n"
    "  launch [--backend B] [--device N] [--count N] [--args K,K,..] [--pin CPU | --cpus LIST] [--warmup N]\n"
    "                       empty-kernel launch latency (--pin: the submitting thread on one CPU; --cpus:\n"
    "                       on a set of CPUs)\n"
    "  chunks [--backend B] [--device N] [--total B] [--chunks B,B,..] [--kinds ..] [--directions h2d,d2h]\n"
    "         [--repeats N] [--cpus LIST]\n"
    "                       one total moved in transfers of each chunk size\n"
    "  cuda-ptx             check the embedded PTX of the CUDA backend (no GPU needed)\n"
    "  collab [--backend opencl|cuda] [--device N] [--pattern histogram|taskqueue|pad|trns|bs] [--version D|U]\n"
    "         [--size N] [--host-threads T] [--device-share F] [--warmup W] [--repeats R] [--seed S] [--corrupt]\n"
    "         taskqueue: [--block N] [--iterations N]   pad: [--cols N] [--pad N] [--advise HINT (cuda, U)]\n"
    "         trns: [--height N] [--width N] [--super-element N]   bs: [--resolution N] [--tile N]\n"
    "         [--cpus LIST]   (the host threads on these CPUs, placed once the device is open)\n"
    "                       CHAI's collaboration patterns: D copies, U shared memory + atomics (OpenCL SVM;\n"
    "                       CUDA managed memory: histogram and pad); W warm-ups, then R timed runs\n"
    "  kernels [--backend opencl|cuda] [--device N] [--mode stream|faults|align|spmv|d2d] [--cpus LIST] ...\n"
    "         stream: [--kernels copy,mul,add,triad,dot,read] [--memory device,pinned,host,svm-coarse,svm-fine]\n"
    "         [--types float,double] [--widths 1,2,4,8,16] [--size BYTES] [--groups N,..] [--instances N,..]\n"
    "         [--iterations N] [--warmup N] [--max-time S]; faults: [--memory svm-fine,svm-coarse] [--size BYTES]\n"
    "         [--strides B,..] [--repeats N]; align: [--offsets B,..] [--allocators runtime,application]\n"
    "         [--directions h2d,d2h] [--size BYTES] [--iterations N]; spmv: --matrix FILE --output PREFIX\n"
    "         [--groups N,..] [--instances N,..] [--iterations N]; d2d: --peer N [--size BYTES] [--iterations N]\n"
    "                       what an OpenCL device does with memory (BabelStream's kernels), validated;\n"
    "                       CUDA: stream, faults and d2d (cuMemcpyPeerAsync, peer access where the driver allows)\n"
    "  network [--tests latency,bw,bibw,mbw_mr,multi_lat,allreduce,alltoall,bcast,allgather,reduce,barrier,\n"
    "         gather,scatter,reduce_scatter,alltoallv,allgatherv,iallreduce,ialltoall,ibcast,iallgather,ireduce,\n"
    "         igather,iscatter,ibarrier]\n"
    "         [--sizes B,B,..] [--collective-sizes B,B,..] [--iterations N] [--iterations-large N] [--warmup N]\n"
    "         [--warmup-large N] [--bw-iterations N] [--bw-iterations-large N] [--bw-warmup N]\n"
    "         [--bw-warmup-large N] [--collective-iterations N] [--collective-iterations-large N]\n"
    "         [--collective-warmup N] [--collective-warmup-large N] [--large-from B] [--window N]\n"
    "         [--buffers host,device] [--backend B] [--device N] [--path auto|staged|direct] [--node N]\n"
    "         [--bind none|core] [--budget S] [--inventory FILE] [--corrupt]\n"
    "                       MPI benchmarks with OSU's definitions; run it under mpiexec (every rank runs\n"
    "                       it, rank 0 prints); MPI is $XFERLAB_MPI_LIB (an MPI standard-ABI library)\n"
    "  deceval [--device N] [--size BYTES] [--chunks B,B,..] [--depth D] [--repeats R] [--level 1-9] [--cpu C]\n"
    "         [--items stages,staged,direct,pipelined] [--corrupt]\n"
    "                       seed 000's DecEval: zlib decompression on the host feeding pi on an OpenCL\n"
    "                       device, each stage alone and the flows end to end, validated\n"
    "  programs [--device N] --out DIR [--evaluations K,K,..]\n"
    "                       build every OpenCL program of launch, kernels and deceval for device N and\n"
    "                       write their binaries and DIR/manifest.json (load them with --program DIR)\n"
    "  --program FILE|DIR (launch, kernels, deceval): load the programs from binaries instead of building\n"
    "                       them from source; DIR as programs writes it\n"
    "Exit code 3: the backend is not available (the reason is printed).\n"
    "\n"
    "Output: one JSON object per line on stdout. Exit codes: 0 ok, 2 bad arguments, 1 failure.\n"
    "\n"
    "Fault injection (for tests): XFERLAB_PROBE_FAULT=KIND[@N] makes stream, latency, loaded, transfer,\n"
    "launch, chunks, collab, kernels, deceval and network (in rank $XFERLAB_PROBE_FAULT_RANK, default 0) fail on purpose.\n"
    "KIND: crash=SIGSEGV, crash=SIGBUS, crash=abort (die by that signal), hang (never return),\n"
    "garbage (print a non-JSON line on stdout), exit=CODE (exit with CODE).\n"
    "@N: after the N-th sample record is printed (partial output exists); without it, before starting.\n";

std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

int bad_argument(const std::string& message) {
  std::fprintf(stderr, "xferlab-probe: error: %s\n", message.c_str());
  return 2;
}

int run_version() {
  xferlab::JsonLine()
      .str("probe", "version")
      .str("version", XFERLAB_VERSION)
      .str("compiler", compiler())
      .integer("cxx_standard", __cplusplus)
      .emit();
  return 0;
}

int run_nodes() {
  std::string nodes, cpus;
  for (int n : xferlab::numa_nodes()) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
  for (int c : xferlab::allowed_cpus()) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  xferlab::JsonLine()
      .str("probe", "nodes")
      .str("nodes", nodes)
      .str("allowed_cpus", cpus)
      .integer("last_level_cache_bytes", static_cast<long long>(xferlab::last_level_cache_bytes()))
      .emit();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  if (command == "version") return run_version();
  try {
    if (command == "stream" || command == "latency" || command == "loaded" || command == "nodes" ||
        command == "devices" || command == "transfer" || command == "launch" || command == "chunks" ||
        command == "cuda-ptx" || command == "collab" || command == "network" || command == "kernels" || command == "deceval" ||
        command == "programs") {
      xferlab::Args args(argc, argv, 2);
      if (command != "nodes" && command != "devices" && command != "cuda-ptx" && command != "network" &&
          command != "programs") {
        try {
          xferlab::fault::arm();
        } catch (const std::invalid_argument& error) {
          return bad_argument(error.what());
        }
      }
      if (command == "stream") return xferlab::run_stream(args);
      if (command == "latency") return xferlab::run_latency(args);
      if (command == "loaded") return xferlab::run_loaded(args);
      if (command == "devices") return xferlab::run_devices(args);
      if (command == "programs") return xferlab::run_programs(args);
      // The commands that may open an OpenCL device end with a "program" record: how many programs
      // they made and how (programs.hpp). network is not among them: every rank runs it.
      int (*device_command)(xferlab::Args&) = command == "transfer" ? xferlab::run_transfer
                                              : command == "launch"   ? xferlab::run_launch
                                              : command == "chunks"   ? xferlab::run_chunks
                                              : command == "collab"   ? xferlab::run_collab
                                              : command == "kernels"  ? xferlab::run_kernels
                                              : command == "deceval"  ? xferlab::run_deceval
                                                                      : nullptr;
      if (device_command) {
        const int code = device_command(args);
        if (code == 0) xferlab::emit_program_record(command);
        return code;
      }
      if (command == "cuda-ptx") return xferlab::run_cuda_ptx(args);
      if (command == "network") return xferlab::run_network(args);  // arms the fault in one rank itself
      args.finish();
      return run_nodes();
    }
  } catch (const xferlab::NotAvailable& error) {
    // Exit code 3: the backend's runtime or device is missing; not a failure of the measurement.
    std::fprintf(stderr, "xferlab-probe: %s: not available: %s\n", command.c_str(), error.what());
    return 3;
  } catch (const xferlab::BadArgument& error) {
    return bad_argument(command + ": " + error.what());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "xferlab-probe: %s: %s\n", command.c_str(), error.what());
    return 1;
  }
  if (command == "clock") {
    int samples = 1000000;
    for (int i = 2; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--samples") && i + 1 < argc) {
        char* end = nullptr;
        long value = std::strtol(argv[++i], &end, 10);
        if (*end != '\0' || value < 1000 || value > 1000000000)
          return bad_argument(std::string("--samples '") + argv[i] +
                              "' is not an integer in 1000..1000000000");
        samples = static_cast<int>(value);
      } else {
        return bad_argument(std::string("clock: unknown argument '") + argv[i] + "'");
      }
    }
    return xferlab::run_clock(samples);
  }
  return bad_argument("unknown command '" + command +
                      "' (allowed: version, clock, stream, latency, loaded, nodes, devices, transfer, launch, chunks, "
                      "cuda-ptx, collab, network, kernels, deceval, programs)");
}
