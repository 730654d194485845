/* interp.h: the request interpreter of xferlab's offload runtime, one source for the host (the emulated
 * accelerator thread, C++17) and the device (an OpenCL C kernel: the OpenCL backend prepends
 * xf_portable.h, posit32.h, enc64.h and this file to its kernel source).
 *
 * A window of requests is an array of XF_WORDS 64-bit words per request (flat words, so that host and
 * device agree on the layout without struct padding rules):
 *
 *   word 0: bits  0-15 opcode (XF_OP_*)
 *           bits 16-21 operand kinds, 2 bits each for a, b, c: XF_VALUE (the word is the operand) or
 *                      XF_SLOT (the word is the index of a result slot on the device: forwarding)
 *           bit  24    want: also copy the result to out[out index] (read back with the window)
 *           bits 32-63 level: the request's depth in the window's dependency graph (0: no operand
 *                      produced in this window); requests of one level are independent
 *   word 1: bits  0-31 destination slot; bits 32-63 out index
 *   words 2-4: operands a, b, c
 *
 * A posit32 operand or result sits in the low 32 bits of its word; an enc64 one fills the word. Results
 * live in the slot ring on the device until a later request forwards them or the host reads them.
 * enc64's key never travels with requests: its round keys are device state (see docs/enc64.md).
 *
 * Errors (an unknown opcode, a slot index past the ring) set *err to XF_ERR_* and the request's result to
 * 0; the host checks the status word after every window and raises instead of waiting for a result
 * that will not come.
 */
#ifndef XF_INTERP_H
#define XF_INTERP_H

#define XF_WORDS 5
#define XF_VALUE 0u
#define XF_SLOT 1u
#define XF_WANT (1u << 24)

/* posit32 (es = 2) operations: Posit Standard (2022) */
#define XF_OP_P_ADD 0x101u
#define XF_OP_P_SUB 0x102u
#define XF_OP_P_MUL 0x103u
#define XF_OP_P_DIV 0x104u
#define XF_OP_P_SQRT 0x105u
#define XF_OP_P_FMA 0x106u
#define XF_OP_P_NEG 0x107u
#define XF_OP_P_LT 0x108u  /* results 0 or 1 (a plain integer: a comparison's outcome is for the host) */
#define XF_OP_P_LE 0x109u
#define XF_OP_P_EQ 0x10Au
#define XF_OP_P_FROM_I32 0x10Bu
#define XF_OP_P_TO_I32 0x10Cu
/* enc64 operations on SPECK-64/128 ciphertexts (docs/enc64.md) */
#define XF_OP_E_ADD 0x201u
#define XF_OP_E_SUB 0x202u
#define XF_OP_E_MUL 0x203u
#define XF_OP_E_LT 0x204u  /* an encrypted 0 or 1 */
#define XF_OP_E_EQ 0x205u
#define XF_OP_E_MIN 0x206u
#define XF_OP_E_MAX 0x207u
#define XF_OP_E_SELECT 0x208u  /* c ? a : b, c an encrypted 0/1 */
#define XF_OP_E_DECRYPT 0x209u /* the plaintext (for a result the host may see, e.g. a final answer) */

#define XF_ERR_NONE 0u
#define XF_ERR_OPCODE 1u
#define XF_ERR_SLOT 2u  /* a slot index past the ring, or an out index past the window */
#define XF_ERR_INJECTED 3u /* XF_OP_FAIL: a request that fails on purpose (tests: errors surface, no hang) */
#define XF_OP_FAIL 0xFFFFu

XF_FN xf_u32 xf_p(xf_u64 w) { return (xf_u32)(w & 0xFFFFFFFFu); }

/* The result of one operation on operand values a, b, c; rk: enc64 round keys (27 words). */
XF_FN xf_u64 xf_exec(xf_u32 op, xf_u64 a, xf_u64 b, xf_u64 c, const xf_u32 *rk, xf_u32 *err) {
    switch (op) {
    case XF_OP_P_ADD: return p32_add(xf_p(a), xf_p(b));
    case XF_OP_P_SUB: return p32_sub(xf_p(a), xf_p(b));
    case XF_OP_P_MUL: return p32_mul(xf_p(a), xf_p(b));
    case XF_OP_P_DIV: return p32_div(xf_p(a), xf_p(b));
    case XF_OP_P_SQRT: return p32_sqrt(xf_p(a));
    case XF_OP_P_FMA: return p32_fma(xf_p(a), xf_p(b), xf_p(c));
    case XF_OP_P_NEG: return p32_neg(xf_p(a));
    case XF_OP_P_LT: return (xf_u64)p32_lt(xf_p(a), xf_p(b));
    case XF_OP_P_LE: return (xf_u64)p32_le(xf_p(a), xf_p(b));
    case XF_OP_P_EQ: return (xf_u64)p32_eq(xf_p(a), xf_p(b));
    case XF_OP_P_FROM_I32: return p32_from_i32((xf_i32)xf_p(a));
    case XF_OP_P_TO_I32: return (xf_u64)(xf_u32)p32_to_i32(xf_p(a));
    case XF_OP_E_ADD: return enc_add(rk, a, b);
    case XF_OP_E_SUB: return enc_sub(rk, a, b);
    case XF_OP_E_MUL: return enc_mul(rk, a, b);
    case XF_OP_E_LT: return enc_lt(rk, a, b);
    case XF_OP_E_EQ: return enc_eq(rk, a, b);
    case XF_OP_E_MIN: return enc_min(rk, a, b);
    case XF_OP_E_MAX: return enc_max(rk, a, b);
    case XF_OP_E_SELECT: return enc_select(rk, c, a, b);
    case XF_OP_E_DECRYPT: return (xf_u64)enc_decrypt_i64(rk, a);
    case XF_OP_FAIL: *err = XF_ERR_INJECTED; return 0;
    default: *err = XF_ERR_OPCODE; return 0;
    }
}

/* Operand k (0: a, 1: b, 2: c) of the request at words r: its value, forwarded from a slot if it is a
 * slot reference. A slot index past the ring sets *err. The slot array is the caller's address space:
 * XF_GLOBAL is __global in OpenCL C and nothing on the host. */
#ifdef XF_OPENCL
#define XF_GLOBAL __global
#else
#define XF_GLOBAL
#endif

XF_FN xf_u64 xf_operand(XF_GLOBAL const xf_u64 *r, int k, XF_GLOBAL const xf_u64 *slots, xf_u32 nslots,
                        xf_u32 *err) {
    xf_u32 kind = (xf_u32)(r[0] >> (16 + 2 * k)) & 3u;
    xf_u64 w = r[2 + k];
    if (kind == XF_VALUE) return w;
    if (w >= nslots) { *err = XF_ERR_SLOT; return 0; }
    return slots[w];
}

/* Execute request i of a window of n: read its operands (forwarding slot references), compute, write
 * its slot and, if wanted, its out entry (an out index is a place in the window: below n). Returns the
 * error, XF_ERR_NONE if none. */
XF_FN xf_u32 xf_step(XF_GLOBAL const xf_u64 *req, xf_u32 i, xf_u32 n, XF_GLOBAL xf_u64 *slots, xf_u32 nslots,
                     XF_GLOBAL xf_u64 *out, const xf_u32 *rk) {
    XF_GLOBAL const xf_u64 *r = req + (xf_u64)i * XF_WORDS;
    xf_u32 err = XF_ERR_NONE;
    xf_u64 a = xf_operand(r, 0, slots, nslots, &err);
    xf_u64 b = xf_operand(r, 1, slots, nslots, &err);
    xf_u64 c = xf_operand(r, 2, slots, nslots, &err);
    xf_u64 v = err ? 0 : xf_exec((xf_u32)(r[0] & 0xFFFFu), a, b, c, rk, &err);
    xf_u32 dst = (xf_u32)(r[1] & 0xFFFFFFFFu);
    if (dst >= nslots) return XF_ERR_SLOT;
    slots[dst] = v;
    if (r[0] & XF_WANT) {
        if ((r[1] >> 32) >= n) return XF_ERR_SLOT;
        out[r[1] >> 32] = v;
    }
    return err;
}

XF_FN xf_u32 xf_level(XF_GLOBAL const xf_u64 *req, xf_u32 i) { return (xf_u32)(req[(xf_u64)i * XF_WORDS] >> 32); }

#ifdef XF_OPENCL
/* One launch runs one window: work-item i executes request i when its level comes; a work-group barrier
 * between levels makes level k's results visible to level k + 1 (the host keeps a window within one
 * work-group). The first error is kept in status[0]. */
__kernel void xf_window(__global const ulong *req, __global ulong *slots, __global ulong *out,
                        __global uint *status, __global const uint *round_keys, uint n, uint levels, uint nslots) {
    uint i = (uint)get_local_id(0);
    xf_u32 rk[27];
    for (int k = 0; k < 27; k++) rk[k] = round_keys[k];
    for (uint level = 0; level < levels; level++) {
        if (i < n && xf_level(req, i) == level) {
            xf_u32 err = xf_step(req, i, n, slots, nslots, out, rk);
            if (err) atomic_cmpxchg(status, 0u, err);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}
#endif

#endif
