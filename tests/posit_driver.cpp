// Runs native/runtime/ops/posit32.h over posit test vectors read on stdin (the format of
// tests/data/posit32_vectors.txt: "op operand... expected" in hex, '#' starts a comment line) and prints
// each mismatch, then "checked N mismatches M". Built and run by tests/test_posit.py:
//   g++ -O2 -std=c++17 -I native/runtime/ops tests/posit_driver.cpp -o posit_driver
#include "posit32.h"

#include <cstdio>
#include <cstring>

static bool run(const char *op, const xf_u64 *x, int n, xf_u64 *out) {
    auto p = [&](int i) { return (xf_u32)x[i]; };
    if (!std::strcmp(op, "add") && n == 2) *out = p32_add(p(0), p(1));
    else if (!std::strcmp(op, "sub") && n == 2) *out = p32_sub(p(0), p(1));
    else if (!std::strcmp(op, "mul") && n == 2) *out = p32_mul(p(0), p(1));
    else if (!std::strcmp(op, "div") && n == 2) *out = p32_div(p(0), p(1));
    else if (!std::strcmp(op, "fma") && n == 3) *out = p32_fma(p(0), p(1), p(2));
    else if (!std::strcmp(op, "sqrt") && n == 1) *out = p32_sqrt(p(0));
    else if (!std::strcmp(op, "neg") && n == 1) *out = p32_neg(p(0));
    else if (!std::strcmp(op, "lt") && n == 2) *out = (xf_u64)p32_lt(p(0), p(1));
    else if (!std::strcmp(op, "le") && n == 2) *out = (xf_u64)p32_le(p(0), p(1));
    else if (!std::strcmp(op, "eq") && n == 2) *out = (xf_u64)p32_eq(p(0), p(1));
    else if (!std::strcmp(op, "fromi32") && n == 1) *out = p32_from_i32((xf_i32)p(0));
    else if (!std::strcmp(op, "toi32") && n == 1) *out = (xf_u32)p32_to_i32(p(0));
    else if (!std::strcmp(op, "fromf64") && n == 1) *out = p32_from_f64(xf_bits_f64(x[0]));
    else if (!std::strcmp(op, "tof64") && n == 1) *out = xf_f64_bits(p32_to_f64(p(0)));
    else return false;
    return true;
}

int main() {
    char line[256];
    long checked = 0, mismatches = 0, lineno = 0;
    while (std::fgets(line, sizeof line, stdin)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n') continue;
        char op[16];
        xf_u64 v[5];
        unsigned long long t[5];
        int got = std::sscanf(line, "%15s %llx %llx %llx %llx %llx", op, &t[0], &t[1], &t[2], &t[3], &t[4]);
        int n = got - 2;  // operands; the last number is the expected result
        for (int i = 0; i < got - 1; i++) v[i] = (xf_u64)t[i];
        xf_u64 result = 0;
        if (n < 1 || !run(op, v, n, &result)) {
            std::printf("line %ld: cannot read: %s", lineno, line);
            mismatches++;
            continue;
        }
        checked++;
        if (result != v[n]) {
            mismatches++;
            if (mismatches <= 50) std::printf("line %ld: %.*s -> got %llx\n", lineno, (int)std::strcspn(line, "\n"),
                                              line, (unsigned long long)result);
        }
    }
    std::printf("checked %ld mismatches %ld\n", checked, mismatches);
    return 0;
}
