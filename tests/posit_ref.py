"""Reference posit<32,2> arithmetic, exact, from the definition in "Standard for Posit Arithmetic (2022)",
Posit Working Group. Slow and plain on purpose: it is what native/runtime/ops/posit32.h is checked against
(through tests/data/posit32_vectors.txt, written by tests/make_posit_vectors.py).

- Decoding (the standard's formula): an n-bit pattern with sign bit s, regime r (a run of m equal bits:
  r = -m for 0s, m - 1 for 1s), exponent e (es = 2 bits, cut-off bits read as 0) and fraction f (in
  [0, 1)) has the value ((1 - 3s) + f) * 2^((1 - 2s) * (4r + e + s)); 0...0 is 0 and 10...0 is NaR.
- Rounding (the standard's rule): a real x that is not a posit lies between two neighbouring posits
  u < x < w (found here by bisection over the signed patterns: posit values are monotone in them). x
  rounds to u if it is below the (n+1)-bit posit v whose pattern is u's followed by a 1 bit, to w if
  above, and on a tie to the one whose pattern ends in 0. Nonzero x never rounds to 0 or NaR: beyond
  maxpos it is maxpos, between 0 and minpos it is minpos (same for negatives).
- Every operation computes its exact result as a Fraction and rounds it once; sqrt rounds without ever
  forming the root, by comparing squares of the candidates (all exact).
- Conversions to int32 round to nearest, ties to even, saturate, and give INT32_MIN for NaR; doubles:
  NaN and infinities give NaR, NaR gives the quiet NaN 0x7FF8000000000000. (Choices, see posit32.h.)

Patterns are Python ints in [0, 2^32); NaR is represented by the pattern 0x80000000, and by None as a value.
"""

from fractions import Fraction
import math
import struct

N = 32
NAR = 0x80000000
MAXPOS = 0x7FFFFFFF  # 2^120
MINPOS = 0x00000001  # 2^-120
MASK = 0xFFFFFFFF
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
F64_QNAN = 0x7FF8000000000000


def decode(p: int, n: int = N) -> Fraction | None:
    """The value of the n-bit posit<n,2> pattern p, by the standard's formula; None for NaR."""
    p &= (1 << n) - 1
    if p == 0:
        return Fraction(0)
    if p == 1 << (n - 1):
        return None
    s = p >> (n - 1)
    bits = [(p >> i) & 1 for i in range(n - 2, -1, -1)]  # after the sign, most significant first
    m = 1
    while m < len(bits) and bits[m] == bits[0]:
        m += 1
    r = m - 1 if bits[0] == 1 else -m
    rest = bits[m + 1:]  # skip the terminating bit, if any
    ebits = (rest[:2] + [0, 0])[:2]
    e = 2 * ebits[0] + ebits[1]
    fbits = rest[2:]
    frac = Fraction(int("".join(map(str, fbits)) or "0", 2), 2 ** len(fbits))
    return ((1 - 3 * s) + frac) * Fraction(2) ** ((1 - 2 * s) * (4 * r + e + s))


def signed(p: int, n: int = N) -> int:
    """The pattern read as an n-bit two's-complement integer (the order posits follow)."""
    p &= (1 << n) - 1
    return p - (1 << n) if p >> (n - 1) else p


def _round(cmp) -> int:
    """The posit<32,2> pattern nearest to a nonzero real t, described by cmp(v) = sign(v - t) for a
    Fraction v; the standard's rounding rule."""
    lo, hi = -MAXPOS, MAXPOS  # signed patterns of -maxpos and maxpos
    if cmp(decode(hi)) <= 0:
        return MAXPOS
    if cmp(decode(lo)) >= 0:
        return lo & MASK
    while hi - lo > 1:  # decode(lo) < t < decode(hi)
        mid = (lo + hi) // 2
        c = cmp(decode(mid & MASK))
        if c == 0:
            return mid & MASK
        if c < 0:
            lo = mid
        else:
            hi = mid
    if lo == 0:  # 0 < t < minpos
        return MINPOS
    if hi == 0:  # -minpos < t < 0
        return lo & MASK
    c = cmp(decode((2 * lo + 1) & ((1 << (N + 1)) - 1), N + 1))  # the 33-bit posit between u and w
    if c < 0:
        return hi & MASK
    if c > 0:
        return lo & MASK
    return (lo if lo % 2 == 0 else hi) & MASK


def _sign(x) -> int:
    return (x > 0) - (x < 0)


def encode(x: Fraction | None) -> int:
    """The posit<32,2> pattern for the exact value x, rounded (None is NaR)."""
    if x is None:
        return NAR
    if x == 0:
        return 0
    return _round(lambda v: _sign(v - x))


def add(a, b):
    x, y = decode(a), decode(b)
    return NAR if x is None or y is None else encode(x + y)


def sub(a, b):
    x, y = decode(a), decode(b)
    return NAR if x is None or y is None else encode(x - y)


def mul(a, b):
    x, y = decode(a), decode(b)
    return NAR if x is None or y is None else encode(x * y)


def div(a, b):
    x, y = decode(a), decode(b)
    return NAR if x is None or y is None or y == 0 else encode(x / y)


def fma(a, b, c):
    x, y, z = decode(a), decode(b), decode(c)
    return NAR if x is None or y is None or z is None else encode(x * y + z)


def sqrt(a):
    x = decode(a)
    if x is None or x < 0:
        return NAR
    if x == 0:
        return 0
    # sign(v - sqrt(x)) without the root: for v > 0 it is sign(v^2 - x)
    return _round(lambda v: -1 if v <= 0 else _sign(v * v - x))


def neg(a):
    return (-a) & MASK


def lt(a, b):
    return int(signed(a) < signed(b))


def le(a, b):
    return int(signed(a) <= signed(b))


def eq(a, b):
    return int(a == b)


def from_i32(v):
    """v: an int32 given as its 32-bit pattern."""
    return encode(Fraction(signed(v)))


def to_i32(a):
    """The int32 (as its 32-bit pattern) nearest to a, ties to even, saturated; NaR gives INT32_MIN."""
    x = decode(a)
    i = INT32_MIN if x is None else min(max(round(x), INT32_MIN), INT32_MAX)  # Fraction rounds half to even
    return i & MASK


def from_f64(bits):
    """bits: an IEEE 754 binary64 pattern (a Python float is exactly one)."""
    d = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return NAR if not math.isfinite(d) else encode(Fraction(d))


def to_f64(a):
    x = decode(a)
    return F64_QNAN if x is None else struct.unpack("<Q", struct.pack("<d", float(x)))[0]


# name: (number of operands, function); the vector file's op names
OPS = {
    "add": (2, add), "sub": (2, sub), "mul": (2, mul), "div": (2, div), "fma": (3, fma), "sqrt": (1, sqrt),
    "neg": (1, neg), "lt": (2, lt), "le": (2, le), "eq": (2, eq),
    "fromi32": (1, from_i32), "toi32": (1, to_i32), "fromf64": (1, from_f64), "tof64": (1, to_f64),
}
