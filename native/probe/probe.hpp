// The probe's subcommands. Each prints JSON lines on stdout and returns an exit code:
// 0 success, 2 bad arguments, 1 anything else (as the xferlab CLI does).
#pragma once

namespace xferlab {

int run_clock(int samples);

}  // namespace xferlab
