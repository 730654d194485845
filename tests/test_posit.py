"""posit<32,2> arithmetic (native/runtime/ops/posit32.h, issue 7's `posit32` operation set) against test vectors
built by the exact reference tests/posit_ref.py from "Standard for Posit Arithmetic (2022)", Posit Working Group.

- the reference itself, on values the standard fixes (1.0, maxpos, minpos, NaR rules, the rounding rule);
- the committed vectors (tests/data/posit32_vectors.txt) still agree with the reference;
- the header compiled as C++17 by g++ (a driver, tests/posit_driver.cpp, built at test time, also under
  UBSan) gives every expected result;
- the same header text, prepended to an OpenCL C kernel, gives every expected result on an OpenCL device
  (PoCL in CI), run through xferlab's own run-time OpenCL loader (tests/cl_kernel.py), so CI runs it.
"""

from fractions import Fraction
import os
from pathlib import Path
import random
import shutil
import subprocess

import numpy as np
import pytest

import cl_kernel
import posit_ref as P

ROOT = Path(__file__).resolve().parents[1]
OPS_DIR = ROOT / "native" / "runtime" / "ops"
VECTORS = Path(__file__).resolve().parent / "data" / "posit32_vectors.txt"
DRIVER = Path(__file__).resolve().parent / "posit_driver.cpp"
IN_CI = os.environ.get("CI") == "true"


def read_vectors():
    rows = []
    for line in VECTORS.read_text().splitlines():
        if line and not line.startswith("#"):
            op, *nums = line.split()
            rows.append((op, [int(x, 16) for x in nums]))
    return rows


# --- the reference, on what the standard fixes -------------------------------------------------------------

def test_reference_decodes_the_standards_values():
    assert P.decode(0x40000000) == 1
    assert P.decode(P.MAXPOS) == 2**120
    assert P.decode(P.MINPOS) == Fraction(1, 2**120)
    assert P.decode(0x38000000) == Fraction(1, 2)
    assert P.decode(0x48000000) == 2
    assert P.decode(0x4C000000) == 3
    assert P.decode(0xC0000000) == -1
    assert P.decode(0x80000001) == -(2**120)  # -maxpos
    assert P.decode(0xFFFFFFFF) == -Fraction(1, 2**120)  # -minpos
    assert P.decode(0) == 0 and P.decode(P.NAR) is None
    # one pattern through every field: 0 110 01 1010...: r = 1, e = 1, f = 0.625 -> 1.625 * 2^5 = 52
    assert P.decode(0b0_110_01_101 << 23) == 52


def test_reference_formula_agrees_with_twos_complement_order_and_round_trips():
    r = random.Random(1)
    pats = sorted({r.getrandbits(32) for _ in range(3000)} - {P.NAR}, key=P.signed)
    values = [P.decode(p) for p in pats]
    # the standard's formula for negative patterns equals minus the value of the negated pattern
    assert all(v == -P.decode(P.neg(p)) for p, v in zip(pats, values))
    # posits are ordered as signed integers
    assert all(x < y for x, y in zip(values, values[1:]))
    assert all(P.encode(v) == p for p, v in zip(pats, values))


def test_reference_rounding_rule():
    F = Fraction
    # ties near 1 (ulp 2^-27): to the even pattern
    assert P.encode(1 + F(1, 2**28)) == 0x40000000
    assert P.encode(1 + F(3, 2**28)) == 0x40000002
    assert P.encode(1 + F(1, 2**28) + F(1, 2**60)) == 0x40000001
    # where exponent bits are cut off the tie point is the 33-bit posit, not the arithmetic mean:
    # between 2^116 (0x7FFFFFFE) and 2^120 (maxpos) it is 2^118
    assert P.encode(F(2**118)) == 0x7FFFFFFE
    assert P.encode(F(2**118 + 1)) == P.MAXPOS
    assert P.encode(F(2**117)) == 0x7FFFFFFE
    assert P.encode(F(1, 2**118)) == 0x00000002  # between minpos and 2^-116: tie, even
    # never 0, never NaR: saturate at minpos / maxpos
    assert P.encode(F(2**200)) == P.MAXPOS and P.encode(F(-(2**200))) == 0x80000001
    assert P.encode(F(1, 2**200)) == P.MINPOS and P.encode(F(-1, 2**200)) == 0xFFFFFFFF
    assert P.encode(F(1, 2**121)) == P.MINPOS


def test_reference_nar_rules():
    xs = [0, 1, P.MAXPOS, 0xC0000000, 0x40000000]
    for x in xs:
        assert P.div(x, 0) == P.NAR
        for fn in (P.add, P.sub, P.mul, P.div):
            assert fn(P.NAR, x) == P.NAR and fn(x, P.NAR) == P.NAR
        assert P.fma(P.NAR, x, x) == P.fma(x, x, P.NAR) == P.NAR
    assert P.sqrt(0xC0000000) == P.sqrt(0xFFFFFFFF) == P.sqrt(P.NAR) == P.NAR
    assert P.sqrt(0x40000000) == 0x40000000 and P.sqrt(0x50000000) == 0x48000000  # sqrt(4) = 2
    assert P.lt(P.NAR, 0x80000001) and P.eq(P.NAR, P.NAR) and P.neg(P.NAR) == P.NAR
    assert P.to_i32(P.NAR) == 0x80000000 and P.from_f64(0x7FF0000000000000) == P.NAR


def test_vectors_are_the_references():
    rows = read_vectors()
    ops = {op for op, _ in rows}
    assert ops == set(P.OPS), ops ^ set(P.OPS)
    assert len(rows) >= 20000 and VECTORS.stat().st_size < 1_500_000
    for op, nums in random.Random(2).sample(rows, 300):
        arity, fn = P.OPS[op]
        assert len(nums) == arity + 1 and fn(*nums[:arity]) == nums[arity], (op, [hex(x) for x in nums])


# --- the C++ build ------------------------------------------------------------------------------------------

def _compiler(name):
    path = shutil.which(name)
    if path is None:
        if IN_CI:
            pytest.fail(f"no {name} in CI")
        pytest.skip(f"no {name} on this machine (make test's sysdeps installs it)")
    return path


@pytest.mark.parametrize("flags", [["-O2"], ["-O1", "-g", "-fsanitize=undefined", "-fno-sanitize-recover=all"]],
                         ids=["O2", "ubsan"])
def test_cpp_matches_the_vectors(tmp_path, flags):
    exe = tmp_path / "posit_driver"
    cmd = [_compiler("g++"), *flags, "-std=c++17", "-Wall", "-Wextra", "-I", str(OPS_DIR), str(DRIVER), "-o", str(exe)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    if built.returncode != 0 and "-fsanitize=undefined" in flags and "ubsan" in built.stderr:
        pytest.skip(f"g++ cannot link UBSan here: {built.stderr.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stderr
    with VECTORS.open() as vectors:
        done = subprocess.run([str(exe)], stdin=vectors, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == f"checked {len(read_vectors())} mismatches 0", "\n".join(lines[-20:])


def test_header_is_plain_c99(tmp_path):
    """The shared source uses nothing C++-only (the OpenCL C kernel is C99 underneath)."""
    src = tmp_path / "c99.c"
    src.write_text('#include "posit32.h"\nint main(void) { return (int)p32_to_i32(p32_add(P32_ONE, P32_ONE)) - 2; }\n')
    exe = tmp_path / "c99"
    cmd = [_compiler("gcc"), "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I", str(OPS_DIR), str(src),
           "-o", str(exe)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert subprocess.run([str(exe)]).returncode == 0


# --- the same text as OpenCL C --------------------------------------------------------------------------------

KERNEL = r"""
__kernel void posit_ops(__global const uint *op, __global const ulong *a, __global const uint *b,
                        __global const uint *c, __global ulong *out) {
    size_t i = get_global_id(0);
    uint x = (uint)a[i], y = b[i], z = c[i];
    ulong r = 0xFFFFFFFFFFFFFFFFUL; /* an op this device cannot run */
    switch (op[i]) {
    case 0: r = p32_add(x, y); break;
    case 1: r = p32_sub(x, y); break;
    case 2: r = p32_mul(x, y); break;
    case 3: r = p32_div(x, y); break;
    case 4: r = p32_fma(x, y, z); break;
    case 5: r = p32_sqrt(x); break;
    case 6: r = p32_neg(x); break;
    case 7: r = (ulong)p32_lt(x, y); break;
    case 8: r = (ulong)p32_le(x, y); break;
    case 9: r = (ulong)p32_eq(x, y); break;
    case 10: r = p32_from_i32(as_int(x)); break;
    case 11: r = (uint)p32_to_i32(x); break;
#ifdef XF_HAVE_F64
    case 12: r = p32_from_f64(as_double(a[i])); break;
    case 13: r = as_ulong(p32_to_f64(x)); break;
#endif
    }
    out[i] = r;
}
"""
CL_OPS = ["add", "sub", "mul", "div", "fma", "sqrt", "neg", "lt", "le", "eq", "fromi32", "toi32", "fromf64", "tof64"]


@pytest.fixture(scope="module")
def cl_driver(tmp_path_factory):
    return cl_kernel.build(tmp_path_factory.mktemp("cl"))


def test_opencl_matches_the_vectors(cl_driver):
    rows = read_vectors()
    ops = np.array([CL_OPS.index(op) for op, _ in rows], dtype=np.uint32)
    args = [np.array([nums[k] if len(nums) > k + 1 else 0 for _, nums in rows], dtype=dt)
            for k, dt in ((0, np.uint64), (1, np.uint32), (2, np.uint32))]
    expected = np.array([nums[-1] for _, nums in rows], dtype=np.uint64)
    source = (OPS_DIR / "xf_portable.h").read_text() + (OPS_DIR / "posit32.h").read_text() + KERNEL
    device, (out,) = cl_kernel.run(cl_driver, source, "posit_ops", len(rows), [ops, *args, ("out", np.uint64, len(rows))])
    if "cl_khr_fp64" not in device["extensions"].split():  # the f64 conversions need doubles on the device
        keep = np.array([op not in ("fromf64", "tof64") for op, _ in rows])
        rows, out, expected = [r for r, k in zip(rows, keep) if k], out[keep], expected[keep]
    bad = np.nonzero(out != expected)[0]
    shown = [f"{rows[i][0]} {' '.join(f'{x:x}' for x in rows[i][1])} -> got {int(out[i]):x}" for i in bad[:20]]
    assert bad.size == 0, f"{bad.size} of {len(rows)} differ on {device['device']}:\n" + "\n".join(shown)
    assert len(rows) >= 20000
