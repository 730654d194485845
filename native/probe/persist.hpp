// Making stores persistent: write back the cache lines of a range, then fence.
//
// On a DAX mapping (device DAX, or a file on an fsdax mount mapped with MAP_SYNC) stores reach
// persistence once their cache lines are written back: clwb (keeps the line cached) is preferred,
// then clflushopt, then clflush, as CPUID reports them; an sfence orders the write-backs. On any
// other mapping the page cache stands between the stores and the medium, and msync(MS_SYNC) is
// the only way to persist them.
#pragma once
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define XFERLAB_X86 1
#endif

namespace xferlab {

enum class Flush { none, clwb, clflushopt, clflush };

inline Flush best_flush() {
#ifdef XFERLAB_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    if (ebx & (1u << 24)) return Flush::clwb;
    if (ebx & (1u << 23)) return Flush::clflushopt;
  }
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (edx & (1u << 19))) return Flush::clflush;
#endif
  return Flush::none;
}

inline const char* flush_name(Flush f) {
  switch (f) {
    case Flush::clwb: return "clwb";
    case Flush::clflushopt: return "clflushopt";
    case Flush::clflush: return "clflush";
    default: return "none";
  }
}

constexpr size_t kLine = 64;

// Writes back every cache line of [p, p + bytes). No fence: call store_fence() after.
inline void write_back(const void* p, size_t bytes, Flush f) {
#ifdef XFERLAB_X86
  auto addr = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t)(kLine - 1);
  const auto end = reinterpret_cast<uintptr_t>(p) + bytes;
  switch (f) {
    case Flush::clwb:
      for (; addr < end; addr += kLine) asm volatile("clwb %0" : "+m"(*reinterpret_cast<volatile char*>(addr)));
      break;
    case Flush::clflushopt:
      for (; addr < end; addr += kLine) asm volatile("clflushopt %0" : "+m"(*reinterpret_cast<volatile char*>(addr)));
      break;
    case Flush::clflush:
      for (; addr < end; addr += kLine) asm volatile("clflush %0" : "+m"(*reinterpret_cast<volatile char*>(addr)));
      break;
    default:
      break;
  }
#else
  (void)p, (void)bytes, (void)f;
#endif
}

inline void store_fence() {
#ifdef XFERLAB_X86
  asm volatile("sfence" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

}  // namespace xferlab
