/* posit32: 32-bit posit arithmetic (posit<32,2>: n = 32, es = 2) for the offload runtime (issue 7).
 *
 * One source for the host (C++17) and for OpenCL C kernels (see xf_portable.h). Written from the
 * definition in "Standard for Posit Arithmetic (2022)", Posit Working Group:
 *   - a posit is an n-bit two's-complement pattern; 0...0 is zero and 10...0 is NaR (not a real);
 *   - a positive pattern reads, after the sign bit, a regime (a run of m equal bits ended by the opposite
 *     bit or by the end of the pattern: r = m - 1 for a run of 1s, r = -m for a run of 0s), then es = 2
 *     exponent bits e, then the fraction f; bits cut off by the end of the pattern count as 0;
 *   - its value is (1 + f) * 2^(4r + e); a negative pattern's value is minus that of its two's
 *     complement, so negation is integer negation and posits order as signed integers (NaR smallest);
 *   - maxpos = 0x7FFFFFFF = 2^120, minpos = 0x00000001 = 2^-120;
 *   - rounding: a value that is not a posit rounds to one of its two neighbouring posits u < x < w, by
 *     comparing x with the (n+1)-bit posit whose pattern is u's followed by a 1 bit; on a tie, to the one
 *     whose pattern ends in 0. A nonzero value never rounds to 0 or to NaR: above maxpos it is maxpos,
 *     below minpos it is minpos (and likewise for negatives).
 *   - any operation with a NaR operand, x / 0 and sqrt of a negative give NaR.
 * Rounding the infinitely long bit string of x (regime, exponent, fraction, then all further bits) to
 * n bits with round-to-nearest-even on the pattern is that rule; p32_round below does exactly this.
 *
 * Arithmetic is exact on 64-bit integers: a decoded significand has at most 28 bits (hidden bit and at
 * most 27 fraction bits), so products fit in 56 bits; division is a shift-subtract loop and sqrt a
 * bit-by-bit integer root, each leaving a sticky bit for what remains; add and fma align the smaller
 * operand and keep the bits shifted out as a sticky bit. fma(a, b, c) is a*b + c with one rounding
 * (the standard itself offers fused sums through the quire; this is the accelerator's kernel op).
 *
 * Conversions: p32_from_i32 rounds like any value; p32_to_i32 rounds to nearest, ties to even, and
 * saturates to INT32_MIN/INT32_MAX outside the int32 range; NaR gives INT32_MIN (0x80000000): these
 * two out-of-range choices are this library's, not the standard's text. Doubles (where the device has
 * cl_khr_fp64; always on the host): every posit32 is exactly a double; NaN and infinities give NaR,
 * NaR gives the quiet NaN 0x7FF8000000000000, -0.0 gives 0.
 *
 * Checked against tests/data/posit32_vectors.txt, which tests/posit_ref.py builds from the definition
 * with exact rational arithmetic (tests/test_posit.py runs these functions on the host and on OpenCL).
 */
#ifndef XF_POSIT32_H
#define XF_POSIT32_H

#ifndef XF_PORTABLE_H
#include "xf_portable.h"
#endif

#define P32_ZERO ((xf_u32)0x00000000u)
#define P32_NAR ((xf_u32)0x80000000u)
#define P32_ONE ((xf_u32)0x40000000u)
#define P32_MAXPOS ((xf_u32)0x7FFFFFFFu)
#define P32_MINPOS ((xf_u32)0x00000001u)

/* A nonzero, non-NaR posit taken apart: value = (-1)^neg * sig * 2^(scale - 63), sig has bit 63 set. */
typedef struct {
    int neg;
    int scale;
    xf_u64 sig;
} p32_parts;

XF_FN p32_parts p32_unpack(xf_u32 p) {
    p32_parts r;
    xf_u32 mag, body;
    xf_u64 rest;
    int run, k;
    r.neg = (int)(p >> 31);
    mag = r.neg ? (xf_u32)(0u - p) : p;
    body = mag << 1; /* the regime starts at bit 31; bit 0 is 0 */
    if (body >> 31) {
        run = xf_clz32(~body); /* at most 31: ~body has bit 0 set */
        k = run - 1;
    } else {
        run = xf_clz32(body); /* at most 30: body >= 2 */
        k = -run;
    }
    /* drop the regime run and its terminating bit; what is left starts with the exponent */
    rest = ((xf_u64)body << 32) << run;
    rest <<= 1;
    r.scale = 4 * k + (int)(rest >> 62);
    r.sig = ((xf_u64)1 << 63) | ((rest << 2) >> 1);
    return r;
}

/* Round (-1)^neg * x * 2^(scale63 - 63) to a posit, x != 0; `sticky` says nonzero bits lie below x's
 * bit 0. The body (31 bits after the sign) is regime, exponent, fraction; the next bit is the guard and
 * anything after it is sticky: round to nearest, ties to the even pattern. */
XF_FN xf_u32 p32_round(int neg, int scale63, xf_u64 x, int sticky) {
    int z = xf_clz64(x);
    int scale = scale63 - z;
    xf_u64 sig = x << z;
    xf_u32 body;
    if (scale >= 120) {
        body = P32_MAXPOS; /* at or above maxpos = 2^120 */
    } else if (scale < -120) {
        body = P32_MINPOS; /* below minpos = 2^-120: never 0 */
    } else {
        int k = scale >= 0 ? scale / 4 : -((3 - scale) / 4); /* floor(scale / 4), in -30..29 */
        int e = scale - 4 * k;
        int len = k >= 0 ? k + 2 : 1 - k; /* regime bits with terminator, at most 31 */
        int avail = 31 - len;             /* exponent and fraction bits that fit, 0..29 */
        xf_u32 regime = k >= 0 ? (((xf_u32)1 << (k + 1)) - 1u) << 1 : 1u;
        xf_u64 frac = sig << 1; /* fraction, left-aligned */
        xf_u64 tail = ((xf_u64)e << 62) | (frac >> 2);
        if (frac & 3u) sticky = 1;
        body = regime << avail;
        if (avail > 0) body |= (xf_u32)(tail >> (64 - avail));
        if ((tail << (avail + 1)) != 0) sticky = 1;
        if (((tail >> (63 - avail)) & 1u) && (sticky || (body & 1u))) body += 1u; /* never past maxpos */
    }
    return neg ? (xf_u32)(0u - body) : body;
}

XF_FN xf_u32 p32_neg(xf_u32 a) { return (xf_u32)(0u - a); }

/* Order: posits compare as two's-complement integers; flipping the sign bit maps that order onto
 * unsigned order, without a signed conversion. NaR equals itself and is below every real. */
XF_FN int p32_lt(xf_u32 a, xf_u32 b) { return (a ^ 0x80000000u) < (b ^ 0x80000000u); }
XF_FN int p32_le(xf_u32 a, xf_u32 b) { return (a ^ 0x80000000u) <= (b ^ 0x80000000u); }
XF_FN int p32_eq(xf_u32 a, xf_u32 b) { return a == b; }

/* (-1)^nx * x * 2^(ex - 61) + (-1)^ny * y * 2^(ey - 61), both x and y with bit 61 as leading bit (so two
 * bits of headroom), one rounding. The smaller magnitude is shifted right; bits shifted out become the
 * sticky bit, and when subtracting they borrow one unit: the exact difference lies strictly between
 * x - y - 1 and x - y. Aligned differences by 0 or 1 lose nothing (the low bits of x and y are 0). */
XF_FN xf_u32 p32_add_aligned(int nx, int ex, xf_u64 x, int ny, int ey, xf_u64 y) {
    int d, sticky = 0;
    xf_u64 s;
    if (ey > ex || (ey == ex && y > x)) {
        int ti = nx;
        xf_u64 tu = x;
        nx = ny; ny = ti;
        ti = ex; ex = ey; ey = ti;
        x = y; y = tu;
    }
    d = ex - ey;
    if (d >= 62) {
        sticky = 1;
        y = 0;
    } else if (d > 0) {
        sticky = (y << (64 - d)) != 0;
        y >>= d;
    }
    if (nx == ny) {
        s = x + y;
    } else {
        s = x - y - (xf_u64)sticky;
        if (s == 0) return P32_ZERO; /* exact cancellation (sticky is 0 then) */
    }
    return p32_round(nx, ex + 2, s, sticky);
}

XF_FN xf_u32 p32_add(xf_u32 a, xf_u32 b) {
    p32_parts pa, pb;
    if (a == P32_NAR || b == P32_NAR) return P32_NAR;
    if (a == 0) return b;
    if (b == 0) return a;
    pa = p32_unpack(a);
    pb = p32_unpack(b);
    return p32_add_aligned(pa.neg, pa.scale, pa.sig >> 2, pb.neg, pb.scale, pb.sig >> 2);
}

XF_FN xf_u32 p32_sub(xf_u32 a, xf_u32 b) { return p32_add(a, p32_neg(b)); }

XF_FN xf_u32 p32_mul(xf_u32 a, xf_u32 b) {
    p32_parts pa, pb;
    if (a == P32_NAR || b == P32_NAR) return P32_NAR;
    if (a == 0 || b == 0) return P32_ZERO;
    pa = p32_unpack(a);
    pb = p32_unpack(b);
    /* 28-bit significands (value = m * 2^(scale - 27)); the product has 55 or 56 bits */
    return p32_round(pa.neg ^ pb.neg, pa.scale + pb.scale + 9, (pa.sig >> 36) * (pb.sig >> 36), 0);
}

XF_FN xf_u32 p32_div(xf_u32 a, xf_u32 b) {
    p32_parts pa, pb;
    xf_u64 r, d, q = 0;
    int s, i;
    if (a == P32_NAR || b == P32_NAR || b == 0) return P32_NAR;
    if (a == 0) return P32_ZERO;
    pa = p32_unpack(a);
    pb = p32_unpack(b);
    r = pa.sig >> 36;
    d = pb.sig >> 36;
    s = pa.scale - pb.scale;
    if (r < d) { /* make r / d lie in [1, 2) */
        r <<= 1;
        s -= 1;
    }
    /* 32 quotient bits by shift and subtract: q = floor(2^31 * r / d), r < 2d throughout */
    for (i = 0; i < 32; i++) {
        q <<= 1;
        if (r >= d) {
            r -= d;
            q |= 1u;
        }
        r <<= 1;
    }
    return p32_round(pa.neg ^ pb.neg, s, q << 32, r != 0);
}

XF_FN xf_u32 p32_sqrt(xf_u32 a) {
    p32_parts pa;
    xf_u64 x, root = 0, bit = (xf_u64)1 << 62;
    int e, t, i;
    if (a == 0) return P32_ZERO;
    if (a >> 31) return P32_NAR; /* NaR, or negative */
    pa = p32_unpack(a);
    e = pa.scale - 27; /* value = m * 2^e with m = sig >> 36 */
    t = (e & 1) ? 35 : 34; /* e - t even; x < 2^63 and the root has 31 or 32 bits */
    x = (pa.sig >> 36) << t;
    /* bit-by-bit integer square root: root = floor(sqrt(x)), x ends as the remainder */
    for (i = 0; i < 32; i++) {
        if (x >= root + bit) {
            x -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return p32_round(0, (e - t) / 2 + 63, root, x != 0);
}

/* a * b + c with one rounding: the exact 56-bit product is aligned with c like an addition. */
XF_FN xf_u32 p32_fma(xf_u32 a, xf_u32 b, xf_u32 c) {
    p32_parts pa, pb, pc;
    xf_u64 p;
    int neg, s;
    if (a == P32_NAR || b == P32_NAR || c == P32_NAR) return P32_NAR;
    if (a == 0 || b == 0) return c;
    pa = p32_unpack(a);
    pb = p32_unpack(b);
    p = (pa.sig >> 36) * (pb.sig >> 36); /* value = p * 2^(sa + sb - 54), p in [2^54, 2^56) */
    neg = pa.neg ^ pb.neg;
    s = pa.scale + pb.scale;
    if (c == 0) return p32_round(neg, s + 9, p, 0);
    if (p >> 55) { /* lead bit to bit 61; s becomes the scale of bit 61 */
        p <<= 6;
        s += 1;
    } else {
        p <<= 7;
    }
    pc = p32_unpack(c);
    return p32_add_aligned(neg, s, p, pc.neg, pc.scale, pc.sig >> 2);
}

XF_FN xf_u32 p32_from_i32(xf_i32 v) {
    int neg = v < 0;
    if (v == 0) return P32_ZERO;
    return p32_round(neg, 63, neg ? (xf_u64)(-(xf_i64)v) : (xf_u64)v, 0);
}

XF_FN xf_i32 p32_to_i32(xf_u32 a) {
    p32_parts pa;
    xf_u64 w, ip;
    int sh;
    if (a == P32_NAR) return (xf_i32)(-2147483647 - 1);
    if (a == 0) return 0;
    pa = p32_unpack(a);
    if (pa.scale >= 31) return pa.neg ? (xf_i32)(-2147483647 - 1) : (xf_i32)2147483647;
    if (pa.scale < -1) return 0; /* |a| < 1/2 */
    w = pa.sig >> 1;             /* lead bit at 62 (bit 0 of sig is 0) */
    sh = 62 - pa.scale;          /* 32..63 */
    ip = w >> sh;
    if (((w >> (sh - 1)) & 1u) && ((w & (((xf_u64)1 << (sh - 1)) - 1u)) != 0 || (ip & 1u))) ip += 1u;
    if (!pa.neg) return ip > 2147483647u ? (xf_i32)2147483647 : (xf_i32)ip;
    return ip >= 2147483648u ? (xf_i32)(-2147483647 - 1) : (xf_i32)(-(xf_i64)ip);
}

#ifdef XF_HAVE_F64
XF_FN double p32_to_f64(xf_u32 a) {
    p32_parts pa;
    if (a == 0) return 0.0;
    if (a == P32_NAR) return xf_bits_f64((xf_u64)0x7FF80000u << 32);
    pa = p32_unpack(a);
    return xf_bits_f64(((xf_u64)pa.neg << 63) | ((xf_u64)(pa.scale + 1023) << 52) | ((pa.sig << 1) >> 12));
}

XF_FN xf_u32 p32_from_f64(double d) {
    xf_u64 u = xf_f64_bits(d);
    int neg = (int)(u >> 63);
    int ef = (int)((u >> 52) & 0x7FFu);
    xf_u64 mant = u & (((xf_u64)1 << 52) - 1u);
    if (ef == 0x7FF) return P32_NAR; /* infinities and NaNs */
    if (ef == 0) {                   /* zeros and subnormals (all below minpos) */
        if (mant == 0) return P32_ZERO;
        return neg ? p32_neg(P32_MINPOS) : P32_MINPOS;
    }
    return p32_round(neg, ef - 1023, ((xf_u64)1 << 63) | (mant << 11), 0);
}
#endif

#endif
