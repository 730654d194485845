// Test driver for native/runtime/ops/enc64.h, built by tests/test_enc64.py with
//   g++ -O2 -std=c++17 -I native/runtime/ops tests/enc64_driver.cpp
// It reads commands on stdin, one a line, and answers each with one line on stdout:
//   key L2 L1 L0 K0        set the key (four hex words, in the paper's order)  -> "ok"
//   encrypt HEX | decrypt HEX   one raw SPECK-64/128 block                    -> hex block
//   value V                enc_encrypt_i64 then enc_decrypt_i64 of the int64 V -> "cV v"
//   op NAME A B C          encrypt the int64 values A, B, C, apply enc_NAME to the ciphertexts (C is used
//                          only by select(A, B, C), which is B if A != 0 else C) -> "cA cB cC cR r":
//                          the ciphertexts in hex, then the result decrypted
//   sort V...              oblivious bubble sort on encrypted values          -> the sorted values
//   gcd BOUND V...         gcd of the (positive) values by oblivious subtraction Euclid, BOUND steps a pair
//   kadane V...            maximum subarray sum with enc_add and enc_max
// The kernels are in the style of VIP-Bench (Biernacki et al., IEEE SEED 2021: bubble-sort, gcd-list, kadane):
// they never branch on an encrypted value; only the fixed loop bounds shape the work.
#include "enc64.h"

#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

xf_u32 rk[SPECK64_ROUNDS];
bool have_key = false;

std::vector<xf_u64> encrypt_all(const std::vector<long long>& values) {
    std::vector<xf_u64> out;
    for (long long v : values) out.push_back(enc_encrypt_i64(rk, v));
    return out;
}

// Bubble sort: every adjacent pair is compared and swapped with selects, whatever the data.
void bubble_sort(std::vector<xf_u64>& a) {
    for (size_t pass = 1; pass < a.size(); pass++) {
        for (size_t j = 0; j + pass < a.size(); j++) {
            xf_u64 swap = enc_lt(rk, a[j + 1], a[j]);
            xf_u64 low = enc_select(rk, swap, a[j + 1], a[j]);
            xf_u64 high = enc_select(rk, swap, a[j], a[j + 1]);
            a[j] = low;
            a[j + 1] = high;
        }
    }
}

// Euclid by subtraction for positive a, b: the larger becomes the difference; after max(a, b) - 1 steps
// both equal the gcd, and further steps change nothing. `bound` steps are always taken.
xf_u64 gcd_pair(xf_u64 a, xf_u64 b, long long bound) {
    for (long long step = 0; step < bound; step++) {
        xf_u64 a_larger = enc_lt(rk, b, a);
        xf_u64 b_larger = enc_lt(rk, a, b);
        xf_u64 a_next = enc_select(rk, a_larger, enc_sub(rk, a, b), a);
        xf_u64 b_next = enc_select(rk, b_larger, enc_sub(rk, b, a), b);
        a = a_next;
        b = b_next;
    }
    return a;
}

xf_u64 gcd_list(const std::vector<xf_u64>& values, long long bound) {
    xf_u64 g = values.at(0);
    for (size_t i = 1; i < values.size(); i++) g = gcd_pair(g, values[i], bound);
    return g;
}

// Kadane: best ending here = max(v, best ending before + v); overall best = max of those.
xf_u64 kadane(const std::vector<xf_u64>& values) {
    xf_u64 here = values.at(0), best = values.at(0);
    for (size_t i = 1; i < values.size(); i++) {
        here = enc_max(rk, values[i], enc_add(rk, here, values[i]));
        best = enc_max(rk, best, here);
    }
    return best;
}

xf_u64 apply(const std::string& name, xf_u64 a, xf_u64 b, xf_u64 c) {
    if (name == "add") return enc_add(rk, a, b);
    if (name == "sub") return enc_sub(rk, a, b);
    if (name == "mul") return enc_mul(rk, a, b);
    if (name == "lt") return enc_lt(rk, a, b);
    if (name == "eq") return enc_eq(rk, a, b);
    if (name == "min") return enc_min(rk, a, b);
    if (name == "max") return enc_max(rk, a, b);
    if (name == "select") return enc_select(rk, a, b, c);
    throw std::runtime_error("unknown op " + name);
}

std::vector<long long> read_values(std::istringstream& in) {
    std::vector<long long> values;
    long long v;
    while (in >> v) values.push_back(v);
    if (!in.eof()) throw std::runtime_error("not an int64 value");
    return values;
}

void print_values(const std::vector<xf_u64>& cipher) {
    for (size_t i = 0; i < cipher.size(); i++)
        std::printf("%s%" PRId64, i ? " " : "", enc_decrypt_i64(rk, cipher[i]));
    std::printf("\n");
}

void run(const std::string& line) {
    std::istringstream in(line);
    std::string command;
    in >> command;
    if (command == "key") {
        xf_u32 w[4];
        for (xf_u32& word : w)
            if (!(in >> std::hex >> word)) throw std::runtime_error("key needs four hex words");
        speck64_expand(w[0], w[1], w[2], w[3], rk);
        have_key = true;
        std::printf("ok\n");
        return;
    }
    if (!have_key) throw std::runtime_error("no key set");
    if (command == "encrypt" || command == "decrypt") {
        xf_u64 block;
        if (!(in >> std::hex >> block)) throw std::runtime_error("needs a hex block");
        block = command == "encrypt" ? speck64_encrypt(rk, block) : speck64_decrypt(rk, block);
        std::printf("%016" PRIx64 "\n", block);
    } else if (command == "value") {
        long long v;
        if (!(in >> v)) throw std::runtime_error("value needs an int64");
        xf_u64 cv = enc_encrypt_i64(rk, v);
        std::printf("%016" PRIx64 " %" PRId64 "\n", cv, enc_decrypt_i64(rk, cv));
    } else if (command == "op") {
        std::string name;
        long long a, b, c;
        if (!(in >> name >> a >> b >> c)) throw std::runtime_error("op needs NAME A B C");
        xf_u64 ca = enc_encrypt_i64(rk, a), cb = enc_encrypt_i64(rk, b), cc = enc_encrypt_i64(rk, c);
        xf_u64 cr = apply(name, ca, cb, cc);
        std::printf("%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %" PRId64 "\n", ca, cb, cc, cr,
                    enc_decrypt_i64(rk, cr));
    } else if (command == "sort") {
        std::vector<xf_u64> cipher = encrypt_all(read_values(in));
        bubble_sort(cipher);
        print_values(cipher);
    } else if (command == "gcd") {
        long long bound;
        if (!(in >> bound)) throw std::runtime_error("gcd needs BOUND");
        print_values({gcd_list(encrypt_all(read_values(in)), bound)});
    } else if (command == "kadane") {
        print_values({kadane(encrypt_all(read_values(in)))});
    } else {
        throw std::runtime_error("unknown command " + command);
    }
}

}  // namespace

int main() {
    std::string line;
    int number = 0;
    while (std::getline(std::cin, line)) {
        number++;
        try {
            run(line);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "line %d: %s: %s\n", number, e.what(), line.c_str());
            return 2;
        }
    }
    return 0;
}
