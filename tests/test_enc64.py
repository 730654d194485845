"""enc64 (native/runtime/ops/enc64.h): SPECK-64/128 against the paper's test vector, round trips, every
operation against plain int64 arithmetic, the VIP-style kernels on encrypted data, and the same header
compiled as OpenCL C giving identical results on a real OpenCL device (PoCL).

The host side runs through tests/enc64_driver.cpp, compiled here; the expected values are computed in Python
(integers reduced to int64), independently of the C++ code."""

import functools
import math
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import cl_kernel

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "native" / "runtime" / "ops" / "enc64.h"
IN_CI = os.environ.get("CI") == "true"

# Beaulieu et al., "The SIMON and SPECK Families of Lightweight Block Ciphers", IACR ePrint 2013/404,
# its Speck64/128 test vector: key (l2, l1, l0, k0), plaintext (x, y), ciphertext (x, y).
PAPER_KEY = ("1b1a1918", "13121110", "0b0a0908", "03020100")
PAPER_PLAINTEXT = 0x3B726574_7475432D
PAPER_CIPHERTEXT = 0x8C6FA548_454E028B

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
EDGES = [INT64_MIN, INT64_MIN + 1, -(2**32), -2, -1, 0, 1, 2, 2**31, 2**32, 3037000500, INT64_MAX - 1, INT64_MAX]
OPS = ["add", "sub", "mul", "lt", "eq", "min", "max", "select"]


def int64(v):
    """v reduced modulo 2^64 into the int64 range (two's complement wrap-around)."""
    v &= 2**64 - 1
    return v - 2**64 if v >> 63 else v


def plain(op, a, b, c):
    """The unencrypted host computation each enc_ op must match; select(a, b, c) is b if a != 0 else c."""
    return {"add": lambda: int64(a + b), "sub": lambda: int64(a - b), "mul": lambda: int64(a * b),
            "lt": lambda: int(a < b), "eq": lambda: int(a == b), "min": lambda: min(a, b),
            "max": lambda: max(a, b), "select": lambda: b if a != 0 else c}[op]()


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    compiler = shutil.which("g++")
    if compiler is None and not IN_CI:
        pytest.skip("no g++ here to build tests/enc64_driver.cpp (CI has one)")
    exe = tmp_path_factory.mktemp("enc64") / "enc64_driver"
    build = subprocess.run([compiler or "g++", "-O2", "-std=c++17", "-I", str(HEADER.parent),
                            str(ROOT / "tests" / "enc64_driver.cpp"), "-o", str(exe)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    return exe


def run(driver, key, lines):
    """Sends the key and the command lines to the driver; returns one answer per command line."""
    done = subprocess.run([driver], input="\n".join([f"key {' '.join(key)}", *lines]) + "\n",
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    answers = done.stdout.splitlines()
    assert answers[0] == "ok" and len(answers) == len(lines) + 1, done.stdout[:500]
    return answers[1:]


def random_key(rng):
    return tuple(f"{rng.getrandbits(32):08x}" for _ in range(4))


def random_values(rng, count):
    """Full-range int64 values, small ones (so that equal operands and sign changes are common), edges."""
    values = []
    for i in range(count):
        kind = i % 3
        values.append(rng.randint(INT64_MIN, INT64_MAX) if kind == 0 else
                      rng.randint(-5, 5) if kind == 1 else rng.choice(EDGES))
    return values


def test_paper_test_vector(driver):
    enc, dec = run(driver, PAPER_KEY, [f"encrypt {PAPER_PLAINTEXT:016x}", f"decrypt {PAPER_CIPHERTEXT:016x}"])
    assert int(enc, 16) == PAPER_CIPHERTEXT
    assert int(dec, 16) == PAPER_PLAINTEXT


def test_every_key_word_matters(driver):
    """Flipping one bit of any key word changes the test vector's ciphertext: all four words are used."""
    for word in range(4):
        key = list(PAPER_KEY)
        key[word] = f"{int(key[word], 16) ^ 0x80:08x}"
        (enc,) = run(driver, key, [f"encrypt {PAPER_PLAINTEXT:016x}"])
        assert int(enc, 16) != PAPER_CIPHERTEXT


def test_round_trip_random_blocks_and_values(driver):
    rng = random.Random(7)
    for _ in range(3):
        key = random_key(rng)
        blocks = [rng.getrandbits(64) for _ in range(2000)] + [0, 2**64 - 1]
        cipher = [int(c, 16) for c in run(driver, key, [f"encrypt {b:016x}" for b in blocks])]
        assert len(set(cipher)) == len(blocks)  # a permutation: no two blocks collide
        assert sum(c == b for c, b in zip(cipher, blocks)) == 0
        back = [int(p, 16) for p in run(driver, key, [f"decrypt {c:016x}" for c in cipher])]
        assert back == blocks
        values = random_values(rng, 1000)
        answers = [line.split() for line in run(driver, key, [f"value {v}" for v in values])]
        assert [int(v) for _, v in answers] == values
        # A signed value is the block (uint64)v: its ciphertext is the raw cipher of v mod 2^64.
        raw = run(driver, key, [f"encrypt {v % 2**64:016x}" for v in values])
        assert [c for c, _ in answers] == raw


def test_every_op_against_int64(driver):
    rng = random.Random(11)
    key = random_key(rng)
    cases = [(op, a, b, rng.choice([0, 1, -1, INT64_MIN])) for op in OPS for a in EDGES for b in EDGES]
    values = random_values(rng, 3 * 3000)
    cases += [(OPS[i % len(OPS)], *values[3 * i:3 * i + 3]) for i in range(3000)]
    answers = run(driver, key, [f"op {op} {a} {b} {c}" for op, a, b, c in cases])
    for (op, a, b, c), line in zip(cases, answers):
        assert int(line.split()[4]) == plain(op, a, b, c), (op, a, b, c)
    # The overflow cases wrap as int64 does.
    wrapped = {(op, a, b): int(line.split()[4]) for (op, a, b, _), line in zip(cases, answers)}
    assert wrapped["add", INT64_MAX, 1] == INT64_MIN
    assert wrapped["sub", INT64_MIN, 1] == INT64_MAX
    assert wrapped["mul", INT64_MIN, -1] == INT64_MIN
    assert wrapped["mul", 3037000500, 3037000500] == int64(3037000500**2) < 0


def test_comparison_results_are_encrypted(driver):
    """lt and eq answer with ciphertexts of 0 and 1, the same ones the key gives to those values."""
    key = random_key(random.Random(3))
    zero, one, lt_true, lt_false, eq_true = run(driver, key, ["value 0", "value 1", "op lt -1 0 0",
                                                              "op lt 0 -1 0", "op eq 5 5 0"])
    assert lt_true.split()[3] == eq_true.split()[3] == one.split()[0]
    assert lt_false.split()[3] == zero.split()[0]
    assert zero.split()[0] not in ("0" * 16, "0" * 15 + "1")


def test_bubble_sort_on_encrypted_values(driver):
    rng = random.Random(5)
    lists = [[rng.choice([*EDGES, *range(-20, 20)]) for _ in range(rng.randint(1, 40))] for _ in range(20)]
    lists += [[3, 2, 1], [1, 1, 1], [INT64_MAX, INT64_MIN]]
    answers = run(driver, random_key(rng), ["sort " + " ".join(map(str, values)) for values in lists])
    for values, line in zip(lists, answers):
        assert [int(v) for v in line.split()] == sorted(values)


def test_gcd_list_on_encrypted_values(driver):
    rng = random.Random(9)
    bound = 300  # subtraction Euclid on values in 1..300 finishes within 299 steps a pair
    lists = [[rng.randint(1, bound) for _ in range(rng.randint(2, 6))] for _ in range(15)]
    lists += [[12 * rng.randint(1, 25) for _ in range(5)], [300, 1], [7, 7], [bound]]
    answers = run(driver, random_key(rng), [f"gcd {bound} " + " ".join(map(str, values)) for values in lists])
    for values, line in zip(lists, answers):
        assert int(line) == functools.reduce(math.gcd, values), values


def test_kadane_on_encrypted_values(driver):
    rng = random.Random(13)
    lists = [[rng.randint(-50, 50) for _ in range(rng.randint(1, 60))] for _ in range(25)]
    lists += [[-5, -2, -9], [4], [-2, 1, -3, 4, -1, 2, 1, -5, 4]]
    answers = run(driver, random_key(rng), ["kadane " + " ".join(map(str, values)) for values in lists])
    for values, line in zip(lists, answers):
        best = max(sum(values[i:j]) for i in range(len(values)) for j in range(i + 1, len(values) + 1))
        assert int(line) == best, values


KERNELS = """
__kernel void blocks(uint l2, uint l1, uint l0, uint k0, __global const ulong *in,
                     __global ulong *enc, __global ulong *dec) {
    size_t i = get_global_id(0);
    xf_u32 rk[SPECK64_ROUNDS];
    speck64_expand(l2, l1, l0, k0, rk);
    enc[i] = speck64_encrypt(rk, in[i]);
    dec[i] = speck64_decrypt(rk, in[i]);
}

__kernel void ops(uint l2, uint l1, uint l0, uint k0, __global const int *op, __global const ulong *a,
                  __global const ulong *b, __global const ulong *c, __global ulong *out) {
    size_t i = get_global_id(0);
    xf_u32 rk[SPECK64_ROUNDS];
    speck64_expand(l2, l1, l0, k0, rk);
    switch (op[i]) {
    case 0: out[i] = enc_add(rk, a[i], b[i]); break;
    case 1: out[i] = enc_sub(rk, a[i], b[i]); break;
    case 2: out[i] = enc_mul(rk, a[i], b[i]); break;
    case 3: out[i] = enc_lt(rk, a[i], b[i]); break;
    case 4: out[i] = enc_eq(rk, a[i], b[i]); break;
    case 5: out[i] = enc_min(rk, a[i], b[i]); break;
    case 6: out[i] = enc_max(rk, a[i], b[i]); break;
    case 7: out[i] = enc_select(rk, a[i], b[i], c[i]); break;
    default: out[i] = 0;
    }
}
"""


@pytest.fixture(scope="module")
def cl_driver(tmp_path_factory):
    return cl_kernel.build(tmp_path_factory.mktemp("cl"))


def test_opencl_kernel_gives_the_host_results(driver, cl_driver):
    # Through xferlab's own run-time OpenCL loader (tests/cl_kernel.py): CI runs it on PoCL.
    import numpy as np

    source = (HEADER.parent / "xf_portable.h").read_text() + HEADER.read_text() + KERNELS
    rng = random.Random(17)
    key = random_key(rng)
    words = [("u32", int(w, 16)) for w in key]
    paper_words = [("u32", int(w, 16)) for w in PAPER_KEY]

    # Raw blocks: the paper's vector and random blocks, against the paper and the host driver.
    blocks = np.array([PAPER_PLAINTEXT, PAPER_CIPHERTEXT] + [rng.getrandbits(64) for _ in range(2000)],
                      dtype=np.uint64)
    _, (enc, dec) = cl_kernel.run(cl_driver, source, "blocks", len(blocks),
                                  [*paper_words, blocks, ("out", np.uint64, len(blocks)), ("out", np.uint64, len(blocks))])
    assert int(enc[0]) == PAPER_CIPHERTEXT and int(dec[1]) == PAPER_PLAINTEXT
    host = run(driver, PAPER_KEY, [f"{way} {int(b):016x}" for way in ("encrypt", "decrypt") for b in blocks])
    assert [f"{int(v):016x}" for v in enc] + [f"{int(v):016x}" for v in dec] == host

    # Operations on ciphertexts the host made: the device's result ciphertexts equal the host's.
    values = random_values(rng, 3 * 4000)
    cases = [(OPS[i % len(OPS)], *values[3 * i:3 * i + 3]) for i in range(4000)]
    answers = [line.split() for line in run(driver, key, [f"op {op} {a} {b} {c}" for op, a, b, c in cases])]
    operands = [np.array([int(line[k], 16) for line in answers], dtype=np.uint64) for k in range(3)]
    codes = np.array([OPS.index(op) for op, *_ in cases], dtype=np.int32)
    _, (out,) = cl_kernel.run(cl_driver, source, "ops", len(cases), [*words, codes, *operands, ("out", np.uint64, len(cases))])
    assert [f"{int(v):016x}" for v in out] == [line[3] for line in answers]
    assert [int(line[4]) for line in answers] == [plain(op, a, b, c) for op, a, b, c in cases]
