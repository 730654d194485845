// The probe's clock (clock.cpp measures what it resolves): std::chrono::steady_clock, which every
// timing loop of the probe uses, and the seconds since a reading of it.
#pragma once
#include <chrono>

namespace xferlab {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace xferlab
