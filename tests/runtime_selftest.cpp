// A C++ self-test of the runtime core on the emulated backend, built by tests/test_runtime.py with
// AddressSanitizer and UndefinedBehaviorSanitizer: handles copied, moved and destroyed while pending
// (no lost or double-read results, no use after free), a ring of one slot, every mode giving the same
// bits, and a device-side error surfacing as an exception instead of a hang. Prints one line per check
// and "ok N" at the end; exits 1 at the first failure.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime.hpp"
#include "xf_portable.h"
#include "posit32.h"
#include "enc64.h"
#include "interp.h"

using namespace xferlab::runtime;

static int checks = 0;
#define CHECK(cond, what)                                                         \
    do {                                                                          \
        if (!(cond)) {                                                            \
            std::printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__);           \
            std::exit(1);                                                         \
        }                                                                         \
        checks++;                                                                 \
    } while (0)

static Runtime* make(Mode mode, uint32_t ring, uint32_t window, double latency = 200e-9) {
    Options o;
    o.mode = mode;
    o.ring = ring;
    o.window = window;
    speck64_expand(0x1b1a1918u, 0x13121110u, 0x0b0a0908u, 0x03020100u, o.round_keys);
    return new Runtime(make_emulated(latency, 16e9), o);
}

// A chain with reuse: x_{k+1} = x_k * 1.5 + y, read every 7th; returns every value read, as bits.
static std::vector<uint32_t> chain(Runtime& rt, int n) {
    Posit x(rt, 1.0), y(rt, 0.25);
    std::vector<uint32_t> seen;
    for (int k = 0; k < n; k++) {
        x = x * Posit(rt, 1.5) + y;
        if (k % 7 == 0) seen.push_back(x.bits());
    }
    seen.push_back(x.bits());
    return seen;
}

static std::vector<uint32_t> chain_on_host(int n) {
    uint32_t x = p32_from_f64(1.0), y = p32_from_f64(0.25), h = p32_from_f64(1.5);
    std::vector<uint32_t> seen;
    for (int k = 0; k < n; k++) {
        x = p32_add(p32_mul(x, h), y);
        if (k % 7 == 0) seen.push_back(x);
    }
    seen.push_back(x);
    return seen;
}

int main() {
    const auto want = chain_on_host(200);
    for (Mode mode : {Mode::sync, Mode::parallel, Mode::forward}) {
        for (uint32_t ring : {1u, 2u, 8u, 64u}) {
            Runtime* rt = make(mode, ring, 16);
            CHECK(chain(*rt, 200) == want, (std::string("chain equals host posits: ") + mode_name(mode) + " ring " +
                                            std::to_string(ring)).c_str());
            delete rt;
        }
    }
    {  // copies, moves and destruction while pending
        Runtime* rt = make(Mode::forward, 4, 8);
        std::vector<Posit> keep;
        Posit a(*rt, 2.0);
        for (int i = 0; i < 50; i++) {
            Posit p = a * Posit(*rt, 1.0 + i);  // pending
            Posit copy = p;                       // shares the cell
            Posit moved = std::move(p);
            keep.push_back(copy);
            { Posit dropped = moved + a; }        // destroyed while pending: its slot is simply reused
        }
        for (int i = 0; i < 50; i++) CHECK(keep[i].to_double() == 2.0 * (1.0 + i), "kept handle reads its own result");
        CHECK(keep[7].bits() == keep[7].bits(), "a second read gives the same bits");
        CHECK(rt->counters().drains > 0, "slots reused under live handles were drained first");
        delete rt;
CHECK(keep.back().to_double() == 2.0 * 50, "a value read before its runtime was destroyed stays readable");
    }
    {  // enc64 in every mode
        for (Mode mode : {Mode::sync, Mode::parallel, Mode::forward}) {
            Runtime* rt = make(mode, 16, 8);
            Enc s = Enc::encrypt(*rt, 0);
            for (int i = 1; i <= 100; i++) s = s + Enc::encrypt(*rt, i) * Enc::encrypt(*rt, i % 3 - 1);
            int64_t plain = 0;
            for (int i = 1; i <= 100; i++) plain += static_cast<int64_t>(i) * (i % 3 - 1);
            CHECK(s.decrypt() == plain, "enc64 sum of products equals int64");
            CHECK(max(Enc::encrypt(*rt, -5), Enc::encrypt(*rt, 3)).decrypt() == 3, "enc64 max");
            CHECK(select(Enc::encrypt(*rt, 4).lt(Enc::encrypt(*rt, 9)), Enc::encrypt(*rt, 1), Enc::encrypt(*rt, 2)).decrypt() == 1,
                  "enc64 select on an encrypted comparison");
            delete rt;
        }
    }
    {  // a device-side error surfaces as an exception
        Runtime* rt = make(Mode::forward, 8, 4);
        CellRef bad = rt->submit(XF_OP_FAIL, Operand(uint64_t(1)));
        bool threw = false;
        try {
            rt->read(bad);
        } catch (const std::runtime_error& e) {
            threw = std::string(e.what()).find("on purpose") != std::string::npos;
        }
        CHECK(threw, "a failing request raises on read");
        delete rt;
    }
    {  // forwarding saves reads and transactions
        Runtime* s = make(Mode::sync, 64, 32), *f = make(Mode::forward, 64, 32);
        chain(*s, 200);
        chain(*f, 200);
        CHECK(f->counters().bus_transactions() < s->counters().bus_transactions() / 2, "forward uses under half the transactions");
        CHECK(f->counters().forwarded > 150, "forward sends pending operands as slot references");
        for (Runtime* rt : {s, f}) {  // the device thread's own count of what crossed, read under TSan too
            rt->drain();
            const Counters& c = rt->counters();
            const BusCounters b = rt->backend().counted();
            CHECK(b.records == c.requests && b.doorbells == c.doorbells && b.lines_received == c.lines_written,
                  "the device received every record, line and doorbell the runtime counted");
            CHECK(b.forwarded == c.forwarded && b.read_requests == c.result_reads && b.lines_sent == c.lines_read,
                  "the device forwarded and answered what the runtime counted");
            CHECK(b.transactions() == c.bus_transactions() + c.result_reads, "a read's request is one more message");
        }
        delete s;
        delete f;
    }
    {  // bad options
        bool threw = false;
        try {
            Options o;
            o.ring = 0;
            Runtime rt(make_emulated(0, 1e9), o);
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        CHECK(threw, "ring 0 refused");
    }
    std::printf("ok %d\n", checks);
    return 0;
}
