#!/usr/bin/env bash
# --program on a real accelerator runtime: the probe writes the OpenCL programs of launch, kernels, collab
# and deceval for the first device of a platform (`programs`, what `xferlab kernels build` runs), then runs
# each command once built from source and once from those binaries, and tries two refusals (binaries of
# another device; a FILE lacking the kernels). Only the probe is needed, so it runs where the Python
# package cannot be installed. One folder out: each step's stdout and stderr, a log with exit codes and
# seconds.
#
#   benchmarks/gpu_programs.sh PROBE OUT_DIR [OTHER_PROGRAMS_DIR]
#
# PLATFORM (default NVIDIA): the start of the platform's name, as `PROBE devices` prints it.
# OTHER_PROGRAMS_DIR: a `programs --out` folder written for another device (the refusal step).
set -u
probe=${1:?usage: benchmarks/gpu_programs.sh PROBE OUT_DIR [OTHER_PROGRAMS_DIR]}
out=${2:?usage: benchmarks/gpu_programs.sh PROBE OUT_DIR [OTHER_PROGRAMS_DIR]}
other=${3:-}
mkdir -p "$out"
log="$out/session.log"

step() {
  local name=$1
  shift
  local start=$SECONDS
  echo "== $name: $*" >>"$log"
  timeout --signal=TERM --kill-after=10 120 "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo "== $name: exit $? after $((SECONDS - start)) s" >>"$log"
  tail -n 2 "$out/$name.err" | sed "s/^/   $name: /" >>"$log"
}

step devices "$probe" devices
device=$(grep "\"platform\":\"${PLATFORM:-NVIDIA}" "$out/devices.out" | head -n 1 | sed 's/.*"index":\([0-9]*\).*/\1/')
if [ -z "$device" ]; then
  echo "no device of a platform named ${PLATFORM:-NVIDIA}* (see $out/devices.out)" | tee -a "$log"
  exit 3
fi
bin="$out/programs"
step programs "$probe" programs --device "$device" --out "$bin"
step launch-source "$probe" launch --device "$device" --count 20000
step launch-binary "$probe" launch --device "$device" --count 20000 --program "$bin"
stream=(kernels --device "$device" --mode stream --size 268435456 --iterations 20 --types float,double --memory device)
step kernels-source "$probe" "${stream[@]}"
step kernels-binary "$probe" "${stream[@]}" --program "$bin"
step collab-d-binary "$probe" collab --device "$device" --pattern histogram --version D --program "$bin"
step collab-u-binary "$probe" collab --device "$device" --pattern histogram --version U --program "$bin"
step deceval-binary "$probe" deceval --device "$device" --size 16777216 --program "$bin"
[ -n "$other" ] && step refuse-other-device "$probe" launch --device "$device" --count 100 --program "$other"
step refuse-file-without-kernels "$probe" kernels --device "$device" --mode stream --size 1048576 \
  --iterations 2 --types float --program "$(ls "$bin"/launch-*.bin | head -n 1)"
ls -l "$bin" >>"$log"
