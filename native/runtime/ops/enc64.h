/* enc64: computation on encrypted 64-bit integers, for the offload runtime (issue 7).
 *
 * One source for the host (C++17) and for OpenCL C kernels: the runtime prepends this text to its kernel
 * source. It stands in for the sequestered encryption enclave of the Zipper seed
 * (seed 002: Chen, Zhang and Austin, Zipper; see docs/architecture.md): the device holds the key,
 * requests carry only ciphertexts, and every operation decrypts its operands, computes on int64, and
 * encrypts the result.
 *
 * Cipher: SPECK-64/128 as specified in Beaulieu, Shors, Smith, Treatman-Clark, Weeks, Wingers, "The SIMON
 * and SPECK Families of Lightweight Block Ciphers", IACR ePrint 2013/404: 32-bit words, 27 rounds, right
 * rotation 8 and left rotation 3, a key of four words. Written from that specification.
 *
 * Packing: a block is one xf_u64 holding the paper's word pair (x, y) as x * 2^32 + y, so a block printed
 * in hex reads as the paper prints it: plaintext "3b726574 7475432d" is 0x3b7265747475432d. The cipher
 * works on these integer values, not on bytes; stored as a little-endian xf_u64 the block's bytes are y's
 * four bytes (least significant first), then x's. A signed value v is the block (xf_u64)v (two's complement).
 *
 * Leaks (this is a stand-in for an enclave, not a secure scheme): one value is one block encrypted on its
 * own (ECB, deterministic), so equal plaintexts give equal ciphertexts: whoever sees ciphertexts learns
 * which values are equal, and a select result is recognisable as one of its operands. A 64-bit block
 * also limits how much data one key should encrypt (birthday bound, about 2^32 blocks).
 *
 * Key: speck64_expand makes the 27 round keys; in a kernel they live in a private array of 27 xf_u32
 * (the runtime's device state), never in requests. Functions take them as `const xf_u32 *rk`: in OpenCL C
 * an unqualified pointer is private (1.x) or generic (2.0+), so pass a private array.
 */
#ifndef XF_ENC64_H
#define XF_ENC64_H

/* The prelude (types, XF_FN). An OpenCL program prepends its text, so the include is skipped there. */
#ifndef XF_PORTABLE_H
#include "xf_portable.h"
#endif

#define SPECK64_ROUNDS 27

XF_FN xf_u32 speck64_ror(xf_u32 v, int r) { return (v >> r) | (v << (32 - r)); }
XF_FN xf_u32 speck64_rol(xf_u32 v, int r) { return (v << r) | (v >> (32 - r)); }

/* The paper's Speck key schedule. The paper writes a key as (l2, l1, l0, k0), e.g. the test vector's
 * 1b1a1918 13121110 0b0a0908 03020100; pass the words in that order. Then, for i = 0..25,
 * l[i+3] = (k[i] + S^-8 l[i]) xor i and k[i+1] = S^3 k[i] xor l[i+3]. Writes rk[0..26]. */
XF_FN void speck64_expand(xf_u32 l2, xf_u32 l1, xf_u32 l0, xf_u32 k0, xf_u32 *rk) {
    xf_u32 l[3] = {l0, l1, l2}; /* l[i % 3] is l_i, then l_{i+3} */
    rk[0] = k0;
    for (int i = 0; i < SPECK64_ROUNDS - 1; i++) {
        xf_u32 next = (rk[i] + speck64_ror(l[i % 3], 8)) ^ (xf_u32)i;
        l[i % 3] = next;
        rk[i + 1] = speck64_rol(rk[i], 3) ^ next;
    }
}

/* The paper's Speck round: x = (S^-8 x + y) xor k; y = S^3 y xor x. Decryption undoes the rounds in
 * reverse order. */
XF_FN xf_u64 speck64_encrypt(const xf_u32 *rk, xf_u64 block) {
    xf_u32 x = (xf_u32)(block >> 32), y = (xf_u32)block;
    for (int i = 0; i < SPECK64_ROUNDS; i++) {
        x = (speck64_ror(x, 8) + y) ^ rk[i];
        y = speck64_rol(y, 3) ^ x;
    }
    return ((xf_u64)x << 32) | (xf_u64)y;
}

XF_FN xf_u64 speck64_decrypt(const xf_u32 *rk, xf_u64 block) {
    xf_u32 x = (xf_u32)(block >> 32), y = (xf_u32)block;
    for (int i = SPECK64_ROUNDS - 1; i >= 0; i--) {
        y = speck64_ror(y ^ x, 3);
        x = speck64_rol((x ^ rk[i]) - y, 8);
    }
    return ((xf_u64)x << 32) | (xf_u64)y;
}

/* The edges: the data owner encrypts inputs and decrypts the values it reads back. The unsigned-to-signed
 * conversion is written out because C++17 leaves it implementation-defined above INT64_MAX. */
XF_FN xf_u64 enc_encrypt_i64(const xf_u32 *rk, xf_i64 v) { return speck64_encrypt(rk, (xf_u64)v); }

XF_FN xf_i64 enc_decrypt_i64(const xf_u32 *rk, xf_u64 c) {
    xf_u64 u = speck64_decrypt(rk, c);
    return (u >> 63) ? -(xf_i64)(~u) - 1 : (xf_i64)u;
}

/* The operations, on ciphertexts. add, sub and mul wrap modulo 2^64 (two's complement, as int64 on the
 * host wraps); they run on the unsigned words, where wrap-around is defined in both languages. */
XF_FN xf_u64 enc_add(const xf_u32 *rk, xf_u64 a, xf_u64 b) {
    return speck64_encrypt(rk, speck64_decrypt(rk, a) + speck64_decrypt(rk, b));
}

XF_FN xf_u64 enc_sub(const xf_u32 *rk, xf_u64 a, xf_u64 b) {
    return speck64_encrypt(rk, speck64_decrypt(rk, a) - speck64_decrypt(rk, b));
}

XF_FN xf_u64 enc_mul(const xf_u32 *rk, xf_u64 a, xf_u64 b) {
    return speck64_encrypt(rk, speck64_decrypt(rk, a) * speck64_decrypt(rk, b));
}

/* Signed a < b on the unsigned words: flipping the sign bit maps int64 order onto uint64 order. */
XF_FN xf_u64 enc64_signed_lt(xf_u64 a, xf_u64 b) {
    const xf_u64 sign = (xf_u64)1 << 63;
    return (xf_u64)((a ^ sign) < (b ^ sign));
}

/* Comparisons return an encrypted 0 or 1. */
XF_FN xf_u64 enc_lt(const xf_u32 *rk, xf_u64 a, xf_u64 b) {
    return speck64_encrypt(rk, enc64_signed_lt(speck64_decrypt(rk, a), speck64_decrypt(rk, b)));
}

XF_FN xf_u64 enc_eq(const xf_u32 *rk, xf_u64 a, xf_u64 b) {
    return speck64_encrypt(rk, (xf_u64)(speck64_decrypt(rk, a) == speck64_decrypt(rk, b)));
}

/* select(c, a, b) is a when c decrypts to non-zero, else b, chosen with a mask rather than a branch.
 * It picks between the ciphertexts: with deterministic encryption that equals decrypting a and b,
 * choosing, and encrypting again. */
XF_FN xf_u64 enc_select(const xf_u32 *rk, xf_u64 c, xf_u64 a, xf_u64 b) {
    xf_u64 take_a = (xf_u64)0 - (xf_u64)(speck64_decrypt(rk, c) != 0);
    return (a & take_a) | (b & ~take_a);
}

/* min and max pick a ciphertext the same way. */
XF_FN xf_u64 enc_min(const xf_u32 *rk, xf_u64 a, xf_u64 b) {
    xf_u64 take_a = (xf_u64)0 - enc64_signed_lt(speck64_decrypt(rk, a), speck64_decrypt(rk, b));
    return (a & take_a) | (b & ~take_a);
}

XF_FN xf_u64 enc_max(const xf_u32 *rk, xf_u64 a, xf_u64 b) {
    xf_u64 take_b = (xf_u64)0 - enc64_signed_lt(speck64_decrypt(rk, a), speck64_decrypt(rk, b));
    return (b & take_b) | (a & ~take_b);
}

#endif
