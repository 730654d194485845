#!/bin/sh
# Writes an OpenCL vendor folder (one .icd file per implementation) that holds the system's ICDs
# (/etc/OpenCL/vendors: PoCL here) and Intel's OpenCL CPU runtime from PyPI (intel-opencl-rt) when
# it is installed in the virtual environment VENV. The .icd files that wheel ships name a
# placeholder path (/opt/anaconda1anaconda2anaconda3/lib/libintelocl.so), which the loader cannot
# open; ours name the library where pip put it. Point OCL_ICD_VENDORS at the folder printed.
# Usage: scripts/opencl_vendors.sh VENV   (prints the folder; nothing else is changed)
set -eu
venv=$(cd "${1:?usage: scripts/opencl_vendors.sh VENV}" && pwd)
out="$venv/etc/OpenCL/xferlab-vendors"
mkdir -p "$out"
rm -f "$out"/*.icd
for icd in /etc/OpenCL/vendors/*.icd; do
  [ -e "$icd" ] && cp "$icd" "$out/"
done
if [ -e "$venv/lib/libintelocl.so" ]; then
  echo "$venv/lib/libintelocl.so" > "$out/intel-cpu.icd"
fi
# Intel's FPGA emulator (intel-opencl-fpga-emu-rt 2025.0.5) loads only beside intel-opencl-rt and
# intel-cmplr-lib-rt of the same 2025.0.5 (libcommon_clang.so.2024.18.12.0, libonnxruntime.1.12.22.721.so).
if [ -e "$venv/lib/libintelocl_emu.so" ]; then
  echo "$venv/lib/libintelocl_emu.so" > "$out/intel-fpga-emu.icd"
fi
echo "$out"
