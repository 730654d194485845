// Runs every workload of native/runtime/workloads*.cpp in the three modes on the emulated backend and
// prints, per run, whether it validated, its wall time and what crossed the bus; then, per workload,
// forward's and parallel's speedup over sync and the bus transactions forward saved (issue 7's
// acceptance figures: forward >= 2x over sync, transactions cut >= 46 % (VIP) and 77 % (posit), from
// seed 002). Exits 1 if any run fails to validate.
//
// Build (from the repository root):
//   g++ -std=c++17 -O2 -pthread -I native/runtime -I native/runtime/ops tests/runtime_workloads_selftest.cpp
//       native/runtime/runtime.cpp native/runtime/emulated_backend.cpp native/runtime/workloads*.cpp -o wl
// Run: wl [ONE_WAY_LATENCY_SECONDS [RING [WINDOW [WORKLOAD [SIZE [SEED]]]]]]
//   (defaults: 1e-6 256 32, every workload at its default size, seed 1)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime.hpp"
#include "workloads.hpp"
#include "xf_portable.h"
#include "enc64.h"

using namespace xferlab::runtime;

int main(int argc, char** argv) {
    const double latency = argc > 1 ? std::atof(argv[1]) : 1e-6;
    const uint32_t ring = argc > 2 ? (uint32_t)std::atoi(argv[2]) : 256;
    const uint32_t window = argc > 3 ? (uint32_t)std::atoi(argv[3]) : 32;
    const std::vector<std::string> names = argc > 4 ? std::vector<std::string>{argv[4]} : workload_names();
    const uint64_t size = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 0;
    const uint64_t seed = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 1;
    const double bandwidth = 16e9;  // PCIe Gen3 x16's order; the records are small, latency dominates
    std::printf("# emulated bus: one-way latency %.0f ns, %.0f GB/s; ring %u, window %u\n", latency * 1e9,
                bandwidth / 1e9, ring, window);
    std::printf("%-7s %-8s %-3s %9s %9s %7s %7s %7s %7s %6s %6s %6s %6s %6s  %s\n", "name", "mode", "ok", "seconds",
                "host_s", "reqs", "windows", "bus_tx", "l_wr", "l_rd", "bells", "waits", "fwd", "drains", "detail");
    bool all_ok = true;
    for (const std::string& name : names) {
        double seconds[3] = {};
        uint64_t bus[3] = {};
        const Mode modes[3] = {Mode::sync, Mode::parallel, Mode::forward};
        for (int k = 0; k < 3; k++) {
            Options o;
            o.mode = modes[k];
            o.ring = ring;
            o.window = window;
            speck64_expand(0x1b1a1918u, 0x13121110u, 0x0b0a0908u, 0x03020100u, o.round_keys);
            Runtime rt(make_emulated(latency, bandwidth), o);
            WorkloadResult r = run_workload(rt, name, size, seed);
            rt.drain();
            const Counters& c = rt.counters();
            seconds[k] = r.seconds;
            bus[k] = c.bus_transactions();
            all_ok = all_ok && r.ok;
            std::printf("%-7s %-8s %-3s %9.4f %9.6f %7llu %7llu %7llu %7llu %6llu %6llu %6llu %6llu %6llu  %s\n",
                        r.name.c_str(), mode_name(modes[k]), r.ok ? "ok" : "BAD", r.seconds, r.host_seconds,
                        (unsigned long long)c.requests, (unsigned long long)c.windows,
                        (unsigned long long)c.bus_transactions(), (unsigned long long)c.lines_written,
                        (unsigned long long)c.lines_read, (unsigned long long)c.doorbells,
                        (unsigned long long)c.waits, (unsigned long long)c.forwarded, (unsigned long long)c.drains,
                        k == 2 ? r.detail.c_str() : "");
        }
        std::printf("%-7s forward/sync speedup %.2fx, parallel/sync %.2fx, bus transactions cut %.1f %% (forward vs sync)\n",
                    name.c_str(), seconds[0] / seconds[2], seconds[0] / seconds[1], 100.0 * (1.0 - (double)bus[2] / bus[0]));
    }
    std::printf(all_ok ? "all ok\n" : "FAILED\n");
    return all_ok ? 0 : 1;
}
