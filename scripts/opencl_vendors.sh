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
echo "$out"
