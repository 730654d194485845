"""Writes tests/data/posit32_vectors.txt: posit<32,2> test vectors whose expected results come from the exact
reference tests/posit_ref.py (built from the definition in "Standard for Posit Arithmetic (2022)", Posit
Working Group). Deterministic (fixed seed); regenerate from the repository root with

    PYTHONPATH=src .venv/bin/python tests/make_posit_vectors.py

(about half a minute). One vector a line, in hex: `op operand... expected`; posits and int32 as 8 digits,
doubles as 16 (IEEE 754 binary64 bits). Ops: add sub mul div fma sqrt neg lt le eq fromi32 toi32 fromf64
tof64 (compare results are 0 or 1).

What is in it:
- special values crossed with each other (0, NaR, +-minpos, +-maxpos, +-1, 0.5, 2, 3 and the neighbours of
  1 and of the range ends) for every two-operand op, and sampled triples for fma;
- regime boundaries and powers of two with their neighbouring patterns, through every one-operand op and
  as random partners;
- exact ties, built so that the exact result is an (n+1)-bit midpoint: additions of half an ulp, products
  (1 + x 2^-14)(1 + y 2^-14) with xy odd, products of powers of two in the range where exponent bits are cut
  off (the tie there is geometric, e.g. 2^118 between 2^116 and 2^120), quotients and fma results placed
  on a midpoint;
- massive cancellation (b close to -a for add, c close to -a*b for fma);
- about 20,000 random operand sets spread over magnitudes: random patterns, random values near 1, and
  random values with a uniformly drawn scale in [-124, 124];
- integers and doubles around the edges of both ranges for the conversions.
"""

from fractions import Fraction
from pathlib import Path
import random
import struct
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))
import posit_ref as P  # noqa: E402

SEED = 7  # issue 7
OUT = Path(__file__).resolve().parent / "data" / "posit32_vectors.txt"

POS_CORE = [1, 2, 3, P.MAXPOS, P.MAXPOS - 1, P.MAXPOS - 2, 0x40000000, 0x40000001, 0x3FFFFFFF,
            0x38000000, 0x48000000, 0x4C000000]
CORE = sorted({0, P.NAR, *POS_CORE, *(P.neg(p) for p in POS_CORE)})


def boundaries():
    """Regime boundaries (where the regime run gets one bit longer) and powers of two, each with the
    patterns either side, and their negatives."""
    pos = set()
    for j in range(31):
        for base in ((1 << j), P.MAXPOS - (1 << j) + 1):
            pos.update(base + d for d in (-1, 0, 1))
    for k in range(-120, 121):
        p = P.encode(Fraction(2) ** k)
        pos.update(p + d for d in (-1, 0, 1))
    pos = {p for p in pos if 0 < p <= P.MAXPOS}
    return sorted(pos | {P.neg(p) for p in pos})


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.bounds = boundaries()

    def sign(self, p):
        return P.neg(p) if self.r.random() < 0.5 else p

    def uniform(self):
        return self.r.getrandbits(32)

    def near1(self):
        return self.sign(0x40000000 + self.r.randint(-(1 << 26), 1 << 26))  # |x| in [0.75, 2]

    def scaled(self, lo=-124, hi=124):
        f = Fraction(self.r.getrandbits(30) + (1 << 30), 1 << 30)
        return self.sign(P.encode(f * Fraction(2) ** self.r.randint(lo, hi)))

    def operand(self):
        u = self.r.random()
        if u < 0.3:
            return self.uniform()
        if u < 0.6:
            return self.near1()
        if u < 0.9:
            return self.scaled()
        return self.r.choice(self.bounds)

    def short(self, bits):
        """A posit with at most `bits` fraction bits and a moderate scale (so products stay exact)."""
        f = Fraction(self.r.getrandbits(bits) + (1 << bits), 1 << bits)
        return self.sign(P.encode(f * Fraction(2) ** self.r.randint(-20, 20)))


def midpoint_above(p):
    """The 33-bit posit between p and the next pattern up."""
    return P.decode((2 * P.signed(p) + 1) & ((1 << 33) - 1), 33)


def exact(x):
    """The pattern of x if x is a posit, else None."""
    p = P.encode(x)
    return p if P.decode(p) == x else None


def vectors(seed=SEED):
    g = Gen(seed)
    r = g.r
    out = []

    def emit(op, *args):
        out.append((op, args))

    # specials crossed
    for op in ("add", "sub", "mul", "div", "lt", "le", "eq"):
        for a in CORE:
            for b in CORE:
                emit(op, a, b)
    for _ in range(1500):
        emit("fma", r.choice(CORE), r.choice(CORE), r.choice(CORE))
    for op in ("sqrt", "neg", "tof64", "toi32"):
        for a in CORE + g.bounds:
            emit(op, a)

    # ties
    n = 0
    while n < 400:  # a + half an ulp (or the 33-bit midpoint's distance)
        a = g.operand() if r.random() < 0.5 else g.near1()
        if a in (0, P.NAR) or P.signed(a) in (P.MAXPOS, -1):
            continue
        b = exact(midpoint_above(a) - P.decode(a))
        if b is not None:
            pair = (a, b) if r.random() < 0.5 else (b, a)
            emit("add", *pair)
            emit("sub", pair[0], P.neg(pair[1]))
            n += 1
    for _ in range(300):
        x, y = (r.randrange(1, 1 << 13, 2) for _ in range(2))
        a = P.encode(1 + Fraction(x, 1 << 14))
        b = P.encode(1 + Fraction(y, 1 << 14))
        emit("mul", g.sign(a), g.sign(b))
    for _ in range(300):  # powers of two whose product lands where exponent bits are cut off
        s = r.choice([-1, 1]) * r.randint(100, 126)
        i = r.randint(max(-120, s - 120), min(120, s + 120))
        emit("mul", g.sign(P.encode(Fraction(2) ** i)), g.sign(P.encode(Fraction(2) ** (s - i))))
    n = 0
    while n < 300:  # quotients on a midpoint v: a = v * b, with v far from 1 (few fraction bits) and a near 1
        s = r.choice([-1, 1]) * r.randint(40, 110)
        v = midpoint_above(P.encode(Fraction(r.getrandbits(20) + (1 << 20), 1 << 20) * Fraction(2) ** s))
        b = P.encode(Fraction(r.getrandbits(6) + (1 << 6), 1 << 6) * Fraction(2) ** (r.randint(-8, 8) - s))
        a = exact(v * P.decode(b))
        if a is not None:
            emit("div", g.sign(a), g.sign(b))
            n += 1
    n = 0
    while n < 300:  # fma on a midpoint: c = v - a*b
        a, b = g.short(10), g.short(10)
        prod = P.decode(a) * P.decode(b)
        v = midpoint_above(P.encode(prod))
        c = exact(v - prod)
        if c is not None:
            emit("fma", a, b, c)
            n += 1

    # cancellation
    for _ in range(400):
        a = g.operand()
        emit("add", a, (P.neg(a) + r.randint(-(1 << 12), 1 << 12)) & P.MASK)
    for _ in range(300):
        a = g.operand()
        emit("sub", a, (a + r.randint(-(1 << 12), 1 << 12)) & P.MASK)
    for _ in range(400):
        a, b = g.operand(), g.operand()
        x, y = P.decode(a), P.decode(b)
        if x is None or y is None or x * y == 0:
            continue
        emit("fma", a, b, (P.neg(P.encode(x * y)) + r.randint(-(1 << 10), 1 << 10)) & P.MASK)

    # random, spread over magnitudes
    for op, count in (("add", 3000), ("sub", 2000), ("mul", 3000), ("div", 3000)):
        for _ in range(count):
            emit(op, g.operand(), g.operand())
    for _ in range(3500):
        emit("fma", g.operand(), g.operand(), g.operand())
    for _ in range(1500):
        emit("sqrt", g.operand() & P.MAXPOS if r.random() < 0.9 else g.operand())
    for _ in range(200):  # perfect squares
        y = P.decode(g.short(13))
        emit("sqrt", P.encode(y * y))
    for op in ("lt", "le", "eq"):
        for _ in range(400):
            a = g.operand()
            b = a if r.random() < 0.2 else g.operand()
            emit(op, a, b)
    for _ in range(300):
        emit("neg", g.operand())
    for _ in range(300):
        emit("tof64", g.operand())

    # conversions
    ints = [0, 1, P.MASK, 0x7FFFFFFF, 0x80000000, 0x80000001]
    for j in range(31):
        for d in (-1, 0, 1):
            ints += [((1 << j) + d) & P.MASK, (-(1 << j) + d) & P.MASK]
    for _ in range(800):
        u = r.random()
        if u < 0.4:
            i = r.getrandbits(32)
        elif u < 0.7:
            i = r.getrandbits(r.randint(1, 31))
        else:  # just past the 27-bit fraction: odd multiples of half an ulp are ties
            i = (r.getrandbits(r.randint(20, 24)) << r.randint(4, 8)) | (1 << 3)
        ints.append(i if r.random() < 0.5 else (-i) & P.MASK)
    for i in ints:
        emit("fromi32", i & P.MASK)
    for _ in range(600):
        emit("toi32", g.scaled(-3, 33))
    for _ in range(200):  # k + 1/2: ties to even
        emit("toi32", g.sign(P.encode(Fraction(2 * r.randint(0, 1 << 24) + 1, 2))))
    for x in (2**31, 2**31 - 1, 2**31 + 1, Fraction(2**32 - 1, 2), Fraction(2**32 + 1, 2)):
        emit("toi32", P.encode(x))
        emit("toi32", P.neg(P.encode(x)))

    def f64(x):
        return struct.unpack("<Q", struct.pack("<d", x))[0]

    doubles = [f64(x) for x in (0.0, -0.0, float("inf"), float("-inf"), float("nan"), 5e-324, -5e-324,
                                2.2250738585072014e-308, 1.7976931348623157e308, 1.0, -1.0, 0.5, 3.0,
                                1.0 + 2.0**-28, 1.0 + 3 * 2.0**-28, 2.0**118, 2.0**-118, 2.0**120, 2.0**-120,
                                2.0**121, 2.0**-121, 2.0**119 * 1.5, 2.0**-119 * 1.5)]
    for _ in range(800):
        u = r.random()
        if u < 0.3:
            doubles.append(r.getrandbits(64))
        else:
            doubles.append((r.getrandbits(1) << 63) | ((1023 + r.randint(-130, 130)) << 52) | r.getrandbits(52))
    for d in doubles:
        emit("fromf64", d)
    return out


def line(op, args):
    arity, fn = P.OPS[op]
    assert len(args) == arity, (op, args)
    result = fn(*args)
    width = {"fromf64": (16, 8), "tof64": (8, 16)}.get(op, (8, 8))
    return " ".join([op, *(f"{a:0{width[0]}x}" for a in args), f"{result:0{width[1]}x}"])


def main():
    lines = [line(op, args) for op, args in vectors()]
    OUT.parent.mkdir(exist_ok=True)
    header = [
        "# posit<32,2> test vectors (Standard for Posit Arithmetic (2022), Posit Working Group)",
        "# expected results from tests/posit_ref.py (exact); written by tests/make_posit_vectors.py",
        "# format: op operand... expected (hex; posits and int32: 8 digits, doubles: 16)",
        f"# {len(lines)} vectors",
    ]
    OUT.write_text("\n".join(header + lines) + "\n")
    print(f"wrote {len(lines)} vectors to {OUT}")


if __name__ == "__main__":
    main()
