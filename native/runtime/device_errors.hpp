// What a device-side error code (XF_ERR_* of ops/interp.h) means, in words: one text for every backend.
#pragma once

#include <cstdint>
#include <string>

namespace xferlab::runtime {

// Not a code of ops/interp.h: the emulated device thread itself failed (an exception while it ran a
// message); its text comes with it.
constexpr uint32_t kDeviceThreadFailed = 100;

inline std::string describe_error(uint32_t code) {
  switch (code) {
    case 0: return "";                                                        // XF_ERR_NONE
    case 1: return "unknown opcode";                                          // XF_ERR_OPCODE
    case 2: return "slot index past the ring, or out index past the window";  // XF_ERR_SLOT
    case 3: return "a request failed on purpose (XF_OP_FAIL)";                // XF_ERR_INJECTED
    case kDeviceThreadFailed: return "the emulated device thread failed";
    default: return "device-side failure " + std::to_string(code);
  }
}

}  // namespace xferlab::runtime
