/* xf_portable.h: the prelude that lets one source of operations compile both as C++17 (the host: the
 * emulated accelerator thread and the reference) and as OpenCL C 1.2 (the interpreter kernel on PoCL or a
 * GPU). The operation headers (posit32.h, enc64.h) include it; an OpenCL program prepends its text, then
 * theirs, to the kernel source, so no include path is needed on the device.
 *
 * What the shared code may use: the fixed-width types below, XF_FN functions, integer arithmetic with
 * shift counts below the operand's width (OpenCL C masks larger counts, C++ leaves them undefined),
 * structs returned by value. Not: 128-bit integers, recursion, function pointers, globals, the standard
 * library.
 *
 * OpenCL C facts used (Khronos, The OpenCL Specification 1.2, OpenCL C language chapter): uint/int are
 * 32 bits and ulong/long 64 bits; `static` is allowed on non-kernel functions; clz() is defined for 0
 * (it returns the type's width); as_ulong/as_double reinterpret bits; double needs the cl_khr_fp64
 * extension, which defines the macro cl_khr_fp64 where the device supports it.
 */
#ifndef XF_PORTABLE_H
#define XF_PORTABLE_H

#if defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)

#define XF_OPENCL 1
typedef uint xf_u32;
typedef int xf_i32;
typedef ulong xf_u64;
typedef long xf_i64;
#define XF_FN static inline

XF_FN int xf_clz32(xf_u32 x) { return (int)clz(x); }
XF_FN int xf_clz64(xf_u64 x) { return (int)clz(x); }

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define XF_HAVE_F64 1
XF_FN xf_u64 xf_f64_bits(double d) { return as_ulong(d); }
XF_FN double xf_bits_f64(xf_u64 u) { return as_double(u); }
#endif

#else /* C++17 (also C99) on the host */

#include <stdint.h>
#include <string.h>
typedef uint32_t xf_u32;
typedef int32_t xf_i32;
typedef uint64_t xf_u64;
typedef int64_t xf_i64;
#define XF_FN static inline

#if defined(__GNUC__) || defined(__clang__)
/* __builtin_clz* are undefined for 0: guard it, as OpenCL's clz defines it. */
XF_FN int xf_clz32(xf_u32 x) { return x ? __builtin_clz(x) : 32; }
XF_FN int xf_clz64(xf_u64 x) { return x ? __builtin_clzll(x) : 64; }
#else
XF_FN int xf_clz64(xf_u64 x) {
    int n = 0;
    if (x == 0) return 64;
    while (!(x >> 63)) { x <<= 1; n++; }
    return n;
}
XF_FN int xf_clz32(xf_u32 x) { return x ? xf_clz64((xf_u64)x) - 32 : 32; }
#endif

#define XF_HAVE_F64 1
XF_FN xf_u64 xf_f64_bits(double d) { xf_u64 u; memcpy(&u, &d, sizeof u); return u; }
XF_FN double xf_bits_f64(xf_u64 u) { double d; memcpy(&d, &u, sizeof d); return d; }

#endif

#endif
