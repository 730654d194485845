// Test driver for native/probe/precision.hpp, built by tests/test_precision.py with g++.
//
//   precision_driver interval          stdin: one sample set per line (numbers separated by spaces);
//                                      stdout per line: n lower_rank median low high
//   precision_driver repeat MIN MAX MIN_TIME PRECISION MAX_TIME
//                                      stdin: samples, one per line, fed to a Repeat until it stops;
//                                      stdout: stopped iterations median low high relative_half_width
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "precision.hpp"

using namespace xferlab::precision;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "interval") {
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::vector<double> x;
      double v;
      while (in >> v) x.push_back(v);
      Interval ci = interval(x);
      std::printf("%zu %lld %.17g %.17g %.17g\n", x.size(), lower_rank(static_cast<long long>(x.size())), ci.median,
                  ci.low, ci.high);
    }
    return 0;
  }
  if (mode == "repeat" && argc == 7) {
    Policy p;
    p.min_iterations = std::atoll(argv[2]);
    p.max_iterations = std::atoll(argv[3]);
    p.min_time = std::atof(argv[4]);
    p.precision = std::atof(argv[5]);
    p.max_time = std::atof(argv[6]) > 0 ? std::atof(argv[6]) : p.max_time;
    Repeat r(p);
    double v;
    while (std::cin >> v)
      if (!r.more(v)) break;
    Interval ci = r.current();
    std::printf("%s %lld %.17g %.17g %.17g %.17g\n", r.stopped().empty() ? "running" : r.stopped().c_str(),
                r.iterations(), ci.median, ci.low, ci.high, ci.relative_half_width());
    return 0;
  }
  std::fprintf(stderr, "usage: precision_driver interval | repeat MIN MAX MIN_TIME PRECISION MAX_TIME\n");
  return 2;
}
