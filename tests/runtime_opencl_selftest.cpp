// A C++ self-test of the runtime's OpenCL backend (native/runtime/opencl_backend.cpp) on a real device
// (PoCL in CI): windows of request records built by hand run through make_opencl(device) and, on the
// host, through the same interpreter (ops/interp.h: xf_step, level by level as the kernel xf_window runs
// them); out entries, slots and the status word must agree, and the few results with a known value
// (posit arithmetic that is exact, enc64 arithmetic on small integers) must have it. Then it times
// windows of 32 requests.
//
// Build and run (from the repository root; `inc` is a directory holding kernel_source.inc, as
// CMakeLists.txt generates it into build/.../generated):
//   g++ -std=c++17 -Wall -Wextra -O2 -I native/runtime -I native/runtime/ops -I native/loaders -I inc
//       tests/runtime_opencl_selftest.cpp native/runtime/opencl_backend.cpp native/loaders/opencl_loader.cpp
//       -ldl -o runtime_opencl_selftest && ./runtime_opencl_selftest [DEVICE] [--no-timing]
// Prints one line per check group and "ok N" at the end (N checks); exits 1 at the first failure, 77 if
// there is no OpenCL device (the skip code of automake and meson).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime.hpp"
#include "xf_portable.h"
#include "posit32.h"
#include "enc64.h"
#include "interp.h"

using namespace xferlab::runtime;

static int checks = 0;
#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            std::printf("FAIL (%s:%d) ", __FILE__, __LINE__);   \
            std::printf(__VA_ARGS__);                           \
            std::printf("\n");                                  \
            std::exit(1);                                       \
        }                                                       \
        checks++;                                               \
    } while (0)

static int device = 0;
static uint32_t keys[27];  // SPECK-64/128 round keys of the paper's test-vector key (ePrint 2013/404)

// An operand of a request: a value, or a slot reference (forwarded on the device).
struct Arg {
    uint64_t word = 0;
    uint32_t kind = XF_VALUE;
};
static Arg V(uint64_t v) { return Arg{v, XF_VALUE}; }
static Arg S(uint32_t slot) { return Arg{slot, XF_SLOT}; }

// One window of request records, laid out as interp.h describes.
struct Window {
    std::vector<uint64_t> words;
    uint32_t levels = 0;
    uint32_t n_out = 0;
    uint32_t size() const { return uint32_t(words.size() / XF_WORDS); }
    // Adds a request; want_out: also copy the result to the next out entry. Returns its out index or -1.
    int add(uint32_t op, uint32_t level, uint32_t dst, Arg a, Arg b = V(0), Arg c = V(0), bool want_out = false) {
        uint64_t w0 = op | (a.kind << 16) | (b.kind << 18) | (c.kind << 20) | (want_out ? XF_WANT : 0u);
        w0 |= uint64_t(level) << 32;
        int out = want_out ? int(n_out++) : -1;
        uint64_t w1 = dst | (uint64_t(want_out ? out : 0) << 32);
        words.insert(words.end(), {w0, w1, a.word, b.word, c.word});
        if (level + 1 > levels) levels = level + 1;
        return out;
    }
};

// The host's copy of the device: the same interpreter over the same records, level by level.
struct Host {
    std::vector<uint64_t> slots, out;
    uint32_t status = XF_ERR_NONE;
    Host(uint32_t nslots, uint32_t max_window) : slots(nslots, 0), out(max_window, 0) {}
    void run(const Window& w) {
        for (uint32_t level = 0; level < w.levels; level++)
            for (uint32_t i = 0; i < w.size(); i++)
                if (xf_level(w.words.data(), i) == level) {
                    uint32_t err = xf_step(w.words.data(), i, w.size(), slots.data(), uint32_t(slots.size()), out.data(), keys);
                    if (err && status == XF_ERR_NONE) status = err;
                }
    }
};

// A backend and its host twin, opened with the same ring and window.
struct Pair {
    std::unique_ptr<Bus> dev;
    Host host;
    Pair(uint32_t nslots, uint32_t max_window) : dev(make_opencl(device)), host(nslots, max_window) {
        dev->open(nslots, max_window, keys);
    }
    void launch(const Window& w) {
        dev->launch(w.words.data(), w.size(), w.levels);
        host.run(w);
    }
    // Reads the last window's out entries and compares them with the host's.
    std::vector<uint64_t> out(const Window& w, const char* what) {
        std::vector<uint64_t> got(w.n_out);
        dev->read_out(got.data(), w.n_out);
        for (uint32_t k = 0; k < w.n_out; k++)
            CHECK(got[k] == host.out[k], "%s: out[%u] is %016llx on the device, %016llx on the host", what, k,
                  (unsigned long long)got[k], (unsigned long long)host.out[k]);
        return got;
    }
    void same_slots(const char* what) {
        for (uint32_t s = 0; s < host.slots.size(); s++) {
            uint64_t got = dev->read_slot(s);
            CHECK(got == host.slots[s], "%s: slot %u is %016llx on the device, %016llx on the host", what, s,
                  (unsigned long long)got, (unsigned long long)host.slots[s]);
        }
    }
    void same_status(uint32_t expected, const char* detail, const char* what) {
        std::string text;
        uint32_t code = dev->status(&text);
        CHECK(code == expected && host.status == expected, "%s: status %u on the device, %u on the host, expected %u",
              what, code, host.status, expected);
        CHECK(text == detail, "%s: status detail \"%s\", expected \"%s\"", what, text.c_str(), detail);
    }
};

static uint64_t P(double x) { return p32_from_f64(x); }
static uint64_t E(int64_t v) { return enc_encrypt_i64(keys, v); }

// Posit add, then a mul in the next window that takes the sum from its slot (forwarding across windows).
static void posit_forwarded() {
    Pair p(8, 32);
    Window w1;
    w1.add(XF_OP_P_ADD, 0, 0, V(P(1.5)), V(P(2.25)));
    p.launch(w1);
    Window w2;
    w2.add(XF_OP_P_MUL, 0, 1, S(0), V(P(3.0)), V(0), true);
    p.launch(w2);
    auto out = p.out(w2, "posit forwarded");
    CHECK(out[0] == P(11.25), "(1.5 + 2.25) * 3 gave posit %08llx, expected %08llx", (unsigned long long)out[0],
          (unsigned long long)P(11.25));
    CHECK(p.dev->read_slot(0) == P(3.75), "the sum's slot holds %016llx", (unsigned long long)p.dev->read_slot(0));
    p.same_slots("posit forwarded");
    p.same_status(XF_ERR_NONE, "", "posit forwarded");
    std::printf("posit add/mul forwarded through a slot: %s\n", p.dev->name().c_str());
}

// enc64 with the device's round keys: (7 + -12) * 3, decrypted on the device.
static void enc64_ops() {
    Pair p(8, 32);
    Window w;
    w.add(XF_OP_E_ADD, 0, 0, V(E(7)), V(E(-12)));
    w.add(XF_OP_E_MUL, 1, 1, S(0), V(E(3)));
    int dec = w.add(XF_OP_E_DECRYPT, 2, 2, S(1), V(0), V(0), true);
    int mn = w.add(XF_OP_E_MIN, 2, 3, S(1), V(E(-14)), V(0), true);
    int sel = w.add(XF_OP_E_SELECT, 1, 4, V(E(40)), V(E(41)), V(E(1)), true);
    p.launch(w);
    auto out = p.out(w, "enc64");
    CHECK(int64_t(out[dec]) == -15, "decrypt((7 + -12) * 3) gave %lld", (long long)int64_t(out[dec]));
    CHECK(enc_decrypt_i64(keys, out[mn]) == -15, "min(-15, -14) decrypts to %lld",
          (long long)enc_decrypt_i64(keys, out[mn]));
    CHECK(out[sel] == E(40), "select(1, 40, 41) is not the ciphertext of 40");
    p.same_slots("enc64");
    p.same_status(XF_ERR_NONE, "", "enc64");
    std::printf("enc64 add/mul/min/select/decrypt with round keys on the device\n");
}

// A dependency two levels deep inside one window: (3 * 4) + 3, then to an integer.
static void levels_in_window() {
    Pair p(8, 32);
    Window w;
    w.add(XF_OP_P_FROM_I32, 0, 2, V(3));
    w.add(XF_OP_P_FROM_I32, 0, 3, V(4));
    w.add(XF_OP_P_MUL, 1, 4, S(2), S(3));
    int sum = w.add(XF_OP_P_ADD, 2, 5, S(4), S(2), V(0), true);
    int as_int = w.add(XF_OP_P_TO_I32, 3, 6, S(5), V(0), V(0), true);
    p.launch(w);
    auto out = p.out(w, "levels");
    CHECK(out[sum] == P(15.0), "3 * 4 + 3 gave posit %08llx", (unsigned long long)out[sum]);
    CHECK(out[as_int] == 15, "to_i32(15) gave %llu", (unsigned long long)out[as_int]);
    p.same_slots("levels");
    std::printf("a level-2 (and level-3) dependency inside one window\n");
}

// Random windows of 32 requests mixing every operation, operands forwarded from this window's earlier
// levels or from the previous window's slots, compared with the host after each window.
static void random_windows() {
    const uint32_t ring = 64, window = 32;
    Pair p(ring, window);
    std::mt19937_64 rng(20240607);
    const uint32_t ops[] = {XF_OP_P_ADD,  XF_OP_P_SUB,      XF_OP_P_MUL,     XF_OP_P_DIV,  XF_OP_P_SQRT,
                            XF_OP_P_FMA,  XF_OP_P_NEG,      XF_OP_P_LT,      XF_OP_P_LE,   XF_OP_P_EQ,
                            XF_OP_P_FROM_I32, XF_OP_P_TO_I32, XF_OP_E_ADD,   XF_OP_E_SUB,  XF_OP_E_MUL,
                            XF_OP_E_LT,   XF_OP_E_EQ,       XF_OP_E_MIN,     XF_OP_E_MAX,  XF_OP_E_SELECT,
                            XF_OP_E_DECRYPT};
    const uint32_t nops = sizeof ops / sizeof ops[0];
    uint32_t deepest = 0;
    for (int k = 0; k < 40; k++) {
        // Window k writes slots [base, base + 32) and may read the other half (the previous window's).
        const uint32_t base = (k % 2) * window, other = window - base;
        Window w;
        std::vector<uint32_t> level_of(window);
        for (uint32_t i = 0; i < window; i++) {
            uint32_t op = ops[rng() % nops];
            Arg args[3];
            uint32_t level = 0;
            for (auto& a : args) {
                switch (rng() % 4) {
                    case 0:  // a value: a posit of a random double, a ciphertext, or raw bits
                        a = V(op >= XF_OP_E_ADD ? E(int64_t(rng() % 2001) - 1000)
                                                : P(std::ldexp(double(int64_t(rng() % 20001) - 10000), -int(rng() % 12))));
                        break;
                    case 1: a = V(rng()); break;
                    case 2: a = S(other + uint32_t(rng() % window)); break;  // the previous window's result
                    default:                                                // a result of this window
                        if (i == 0) {
                            a = V(rng());
                        } else {
                            uint32_t j = uint32_t(rng() % i);
                            a = S(base + j);
                            if (level_of[j] + 1 > level) level = level_of[j] + 1;
                        }
                }
            }
            level_of[i] = level;
            w.add(op, level, base + i, args[0], args[1], args[2], rng() % 3 == 0);
        }
        if (w.levels > deepest) deepest = w.levels;
        p.launch(w);
        p.out(w, "random window");
        if (k % 8 == 7) p.same_slots("random windows");
    }
    p.same_slots("random windows");
    p.same_status(XF_ERR_NONE, "", "random windows");
    std::printf("40 random windows of 32 requests (every opcode, up to %u levels) equal the host's interpreter\n",
                deepest);
}

// Device-side errors: each sets the status word (the first one stays) and a zero result; nothing hangs.
static void errors() {
    {
        Pair p(8, 4);
        Window w;
        w.add(0x7777u, 0, 0, V(1), V(2));
        w.add(XF_OP_P_ADD, 0, 1, V(P(1.0)), V(P(1.0)), V(0), true);
        p.launch(w);
        p.out(w, "bad opcode");
        p.same_slots("bad opcode");
        p.same_status(XF_ERR_OPCODE, "unknown opcode", "bad opcode");
        Window w2;  // a later, different error does not replace the first
        w2.add(XF_OP_FAIL, 0, 2, V(0));
        p.launch(w2);
        p.same_status(XF_ERR_OPCODE, "unknown opcode", "first error kept");
    }
    {
        Pair p(8, 4);
        Window w;
        w.add(XF_OP_P_NEG, 0, 0, S(8 + 5), V(0), V(0), true);  // an operand past the ring
        p.launch(w);
        p.out(w, "operand slot past the ring");
        p.same_slots("operand slot past the ring");
        p.same_status(XF_ERR_SLOT, "slot index past the ring, or out index past the window", "operand slot past the ring");
    }
    {
        Pair p(8, 4);
        Window w;
        w.add(XF_OP_P_NEG, 0, 100, V(P(2.0)));  // a destination past the ring
        p.launch(w);
        p.same_slots("destination past the ring");
        p.same_status(XF_ERR_SLOT, "slot index past the ring, or out index past the window", "destination past the ring");
    }
    {
        Pair p(8, 4);
        Window w;
        w.add(XF_OP_FAIL, 0, 0, V(0));
        p.launch(w);
        p.same_status(XF_ERR_INJECTED, "a request failed on purpose (XF_OP_FAIL)", "injected failure");
    }
    std::printf("bad opcode, slot past the ring (operand and destination), injected failure: status, no hang\n");
}

// A ring of one slot, one request per window, each reading the slot it overwrites; and 60 windows
// launched without a read in between (more than the backend's staging buffers), each adding a different
// number, so a staging buffer reused before its write ran would change the sum.
static void ring_of_one_and_pipelining() {
    {
        Pair p(1, 1);
        for (int k = 1; k <= 10; k++) {
            Window w;
            w.add(XF_OP_P_ADD, 0, 0, S(0), V(P(double(k))));
            p.launch(w);
        }
        CHECK(p.dev->read_slot(0) == P(55.0), "ring of 1: sum 1..10 gave posit %08llx",
              (unsigned long long)p.dev->read_slot(0));
        p.same_status(XF_ERR_NONE, "", "ring of 1");
    }
    {
        Pair p(4, 32);
        Window first;
        first.add(XF_OP_E_ADD, 0, 0, V(E(0)), V(E(0)));
        p.launch(first);
        for (int k = 1; k <= 60; k++) {
            Window w;  // 32 requests; the last one accumulates into slot k % 2 from slot (k - 1) % 2
            for (uint32_t i = 0; i < 31; i++) w.add(XF_OP_E_MUL, 0, 2 + i % 2, V(E(k)), V(E(int64_t(i))));
            w.add(XF_OP_E_ADD, 0, uint32_t(k % 2), S(uint32_t((k - 1) % 2)), V(E(k)));
            p.launch(w);
        }
        Window last;
        last.add(XF_OP_E_DECRYPT, 0, 0, S(0), V(0), V(0), true);
        p.launch(last);
        auto out = p.out(last, "pipelined windows");
        CHECK(int64_t(out[0]) == 60 * 61 / 2, "60 pipelined windows summed to %lld, expected 1830",
              (long long)int64_t(out[0]));
    }
    std::printf("a ring of 1 slot; 60 windows in flight without a read\n");
}

// What the backend refuses, with a message naming the values.
static void refusals() {
    bool threw = false;
    try {
        make_opencl(999);
    } catch (const std::runtime_error& e) {
        threw = true;
        std::string m = e.what();
        CHECK(m.find("999") != std::string::npos && m.find("does not exist") != std::string::npos,
              "bad device index message: %s", m.c_str());
        std::printf("  device 999: %s\n", m.c_str());
    }
    CHECK(threw, "device 999 was accepted");
    threw = false;
    try {
        make_opencl(-1);
    } catch (const std::runtime_error&) {
        threw = true;
    }
    CHECK(threw, "device -1 was accepted");
    threw = false;
    auto b = make_opencl(device);
    try {
        b->open(8, 1u << 30, keys);
    } catch (const std::runtime_error& e) {
        threw = true;
        std::string m = e.what();
        CHECK(m.find("1073741824") != std::string::npos && m.find("CL_KERNEL_WORK_GROUP_SIZE") != std::string::npos,
              "window too large message: %s", m.c_str());
        std::printf("  window 2^30: %s\n", m.c_str());
    }
    CHECK(threw, "a window of 2^30 requests was accepted");
    threw = false;
    try {
        b->launch(nullptr, 1, 1);
    } catch (const std::runtime_error&) {
        threw = true;
    }
    CHECK(threw, "launch before a successful open was accepted");
    b->open(8, 2, keys);  // a later open starts over and works
    Window w;
    w.add(XF_OP_P_SQRT, 0, 7, V(P(2.25)), V(0), V(0), true);
    b->launch(w.words.data(), w.size(), w.levels);
    uint64_t root = 0;
    b->read_out(&root, 1);
    CHECK(root == P(1.5), "sqrt(2.25) after a failed open gave posit %08llx", (unsigned long long)root);
    std::printf("refused: a device index out of range, a window past the work-group limit, launch before open;"
                " a later open works\n");
}

using Clock = std::chrono::steady_clock;
static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// 1,000 windows of 32 requests (posit FMAs in 4 levels, forwarded): launch cost, throughput, round trip.
static void timing() {
    const uint32_t ring = 256, n = 32;
    auto dev = make_opencl(device);
    dev->open(ring, n, keys);
    Window w;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t level = i / 8;
        if (level == 0)
            w.add(XF_OP_P_FMA, 0, i, V(P(1.0 + i)), V(P(0.5)), V(P(0.25)), i % 4 == 0);
        else
            w.add(XF_OP_P_FMA, level, i, S(i - 8), V(P(1.5)), S(i - 8), i % 4 == 0);
    }
    std::vector<uint64_t> out(w.n_out);
    for (int k = 0; k < 20; k++) dev->launch(w.words.data(), n, w.levels);  // warm-up (and kernel specialization)
    dev->read_out(out.data(), w.n_out);

    const int windows = 1000;
    auto t0 = Clock::now();
    for (int k = 0; k < windows; k++) dev->launch(w.words.data(), n, w.levels);
    double issue = since(t0);
    dev->read_out(out.data(), w.n_out);
    double total = since(t0);

    auto t1 = Clock::now();
    for (int k = 0; k < windows; k++) {
        dev->launch(w.words.data(), n, w.levels);
        dev->read_out(out.data(), w.n_out);
    }
    double round = since(t1);

    auto t5 = Clock::now();  // as the runtime reads: the out entries, then the status word (read along)
    for (int k = 0; k < windows; k++) {
        dev->launch(w.words.data(), n, w.levels);
        dev->read_out(out.data(), w.n_out);
        CHECK(dev->status(nullptr) == XF_ERR_NONE, "status after timed window %d", k);
    }
    double round_status = since(t5);

    auto t3 = Clock::now();  // reads with nothing in flight: the cost of one blocking read
    uint64_t sink = 0;
    for (int k = 0; k < windows; k++) sink += dev->read_slot(uint32_t(k) % ring);
    double slot_reads = since(t3);
    CHECK(sink != 0, "every slot read 0 after the timed windows");

    // open: context, queue, program build and the kernel's first (empty) launch; PoCL caches builds on disk.
    auto t2 = Clock::now();
    auto dev2 = make_opencl(device);
    dev2->open(ring, n, keys);
    double open_seconds = since(t2);
    std::printf("timing, %d windows of %u requests on %s:\n", windows, n, dev->name().c_str());
    std::printf("  launch (host returns): %.2f us per window\n", issue / windows * 1e6);
    std::printf("  launched back to back, then one read: %.2f us per window\n", total / windows * 1e6);
    std::printf("  launch + read_out each window (round trip): %.2f us per window\n", round / windows * 1e6);
    std::printf("  launch + read_out + status each window: %.2f us per window\n", round_status / windows * 1e6);
    std::printf("  read_slot alone (nothing in flight): %.2f us\n", slot_reads / windows * 1e6);
    std::printf("  make_opencl + open (build, first launch): %.1f ms\n", open_seconds * 1e3);
}

int main(int argc, char** argv) {
    bool time_it = true;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--no-timing") == 0)
            time_it = false;
        else
            device = std::atoi(argv[i]);
    }
    speck64_expand(0x1b1a1918u, 0x13121110u, 0x0b0a0908u, 0x03020100u, keys);
    try {
        make_opencl(device);
    } catch (const std::runtime_error& e) {
        std::printf("skip: %s\n", e.what());
        return 77;
    }
    try {
        posit_forwarded();
        enc64_ops();
        levels_in_window();
        random_windows();
        errors();
        ring_of_one_and_pipelining();
        refusals();
        if (time_it) timing();
    } catch (const std::exception& e) {
        std::printf("FAIL exception: %s\n", e.what());
        return 1;
    }
    std::printf("ok %d\n", checks);
    return 0;
}
