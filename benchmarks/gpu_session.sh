#!/usr/bin/env bash
# Every CUDA path of xferlab on one GPU machine, and the CuPy reference loops beside it, into one folder:
# the store, each command's --json and its stderr, the machine's description, and a log with each
# step's exit code and seconds. A step that fails is logged and the next one runs.
#
#   benchmarks/gpu_session.sh OUT_DIR
#
# Environment: PYTHON (default python3), GPU_SIZE (bytes per large copy and per reference array,
# default 1GiB), SNAPSHOT (a command run after each step, e.g. one that archives OUT_DIR, so that a
# session cut short still brings back what it finished), STEPS (the steps to run, by name, comma-separated;
# default every one). Budgets are sized for a session of about six minutes on one GPU; docs/gpu.md shows
# what such sessions measured.
set -u
out=${1:?usage: benchmarks/gpu_session.sh OUT_DIR}
py=${PYTHON:-python3}
size=${GPU_SIZE:-1GiB}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
store="$out/xferlab.duckdb"
log="$out/session.log"

# step NAME LIMIT_SECONDS COMMAND...: stdout to NAME.out, stderr to NAME.err, a line in the log
step() {
  local name=$1 limit=$2
  shift 2
  case ",${STEPS:-$name}," in *",$name,"*) ;; *) return 0 ;; esac
  local start=$SECONDS
  echo "== $name: $*" >>"$log"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - start)) s" >>"$log"
  tail -n 3 "$out/$name.err" | sed "s/^/   $name: /" >>"$log"
  ${SNAPSHOT:-true}
}
xl=("$py" -m xferlab)

{
  date -u +"session start %Y-%m-%dT%H:%M:%SZ"
  uname -a
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  nvcc --version | tail -n 2
  "$py" -c 'import cupy, sys; print("python", sys.version.split()[0], "cupy", cupy.__version__)'
} >"$out/machine.txt" 2>&1
nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1
nvidia-smi topo -m >>"$out/nvidia-smi.txt" 2>&1
lscpu >"$out/lscpu.txt" 2>&1

step inventory 60 "${xl[@]}" inventory --json
step bench_gpu 200 "$py" "$here/bench_gpu.py" --size "$size" --rounds 2 --json "$out/bench_gpu.json"
step device 150 "${xl[@]}" measure device --backend cuda --kinds pageable,pinned,managed,managed-prefetch \
  --sizes "1B..$size" --directions h2d,d2h,d2d,bidir --budget 60s --json --store "$store" --plots "$out/plots"
step launch 60 "${xl[@]}" measure launch --backend cuda --count 20000 --pin 1 --json --store "$store"
step kernels 150 "${xl[@]}" measure kernels --backend cuda --memory device,pinned,managed,managed-prefetch \
  --types float,double --iterations 20 --faults --budget 60s --json --store "$store"
step collab 60 "${xl[@]}" measure collab --backend cuda --patterns histogram,pad --json --store "$store"
# PAD under each other cuMemAdvise hint (the collab step ran the default, preferred-device; the hints act on U only)
for hint in none accessed-by read-mostly; do
  step "collab-advise-$hint" 60 "${xl[@]}" measure collab --backend cuda --patterns pad --advise "$hint" --warmup 3 --repeats 30 \
    --json --store "$store"
done
# nvbandwidth's matrices: CUDA's copies, and NVIDIA's OpenCL with the copy kernel beside the runtime's copy
step matrix-cuda 60 "${xl[@]}" measure device --matrix --backend cuda --json --store "$store"
step matrix-opencl 60 "${xl[@]}" measure device --matrix --backend opencl --platform NVIDIA --json --store "$store"
# the host side of a bigger machine: the loaded-latency family at its defaults, MLC's matrices
step loaded 120 "${xl[@]}" measure memory --loaded --json --store "$store"
step memory-matrix 90 "${xl[@]}" measure memory --matrix --json --store "$store"
step network 90 "${xl[@]}" measure network --ranks 2 --tests latency,bw,bibw --buffers host,device --backend cuda --budget 30s --json --store "$store"
step lab 150 "${xl[@]}" lab --budget 45s --out "$out/lab" --store "$store" --json
date -u +"session end %Y-%m-%dT%H:%M:%SZ" >>"$log"
