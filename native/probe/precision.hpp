// Adaptive repetition: time a point until the 95 % confidence interval of its median is narrow enough.
//
// The interval is distribution-free (no assumption about the shape of the timings): with n samples
// sorted x(1) <= ... <= x(n), the true median M lies in [x(l), x(n + 1 - l)] with probability
// 1 - 2 P(B <= l - 1), B ~ Binomial(n, 1/2), because x(l) > M exactly when fewer than l samples fall
// below M. The rank l is the largest one with P(B <= l - 1) <= 0.025, so the coverage is at least 95 %.
// Up to kExactLimit samples the binomial tail is summed exactly (in log space, so 2^-n does not
// underflow to a wrong answer); above it, the normal approximation l = floor(n/2 + 1/2 - 1.96 sqrt(n)/2),
// which differs from the exact rank by at most one there. Below 6 samples no rank qualifies
// (2^-5 > 0.025) and the interval is (nan, nan).
//
// A `Repeat` drives one point's timing loop: `more(seconds)` keeps the sample and says whether to
// take another. Without a precision target it answers as the fixed loops always did (at least
// `min_iterations`, and on until `min_time` of timed work, at most `max_iterations`). With one it
// stops as soon as at least `min_iterations` are done and the interval's relative half-width
// ((high - low) / 2 / median) is at most the target, or at `max_iterations`, or once `max_time`
// seconds of timed work are spent. The interval is checked every max(1, n/32) samples, on a sorted
// copy, so a point of n samples costs O(n log n) in all, not a sort per sample.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "args.hpp"
#include "json.hpp"

namespace xferlab {
namespace precision {

constexpr long long kExactLimit = 100000;
constexpr double kTail = 0.025;  // each side of a 95 % interval

// The 1-based rank l of the lower end of the 95 % interval of the median of n samples (the upper end
// is n + 1 - l), or 0 when n is too small for any interval to reach 95 %.
inline long long lower_rank(long long n) {
  if (n < 1) return 0;
  if (n > kExactLimit) {
    // P(B <= l - 1) ~ Phi((l - 1/2 - n/2) / (sqrt(n)/2)), with the continuity correction.
    double l = std::floor(0.5 * n + 0.5 - 0.5 * 1.959963984540054 * std::sqrt(static_cast<double>(n)));
    return std::max(1LL, static_cast<long long>(l));
  }
  // cdf(k) = P(B <= k); find the largest l with cdf(l - 1) <= kTail.
  double log_pmf = -static_cast<double>(n) * std::log(2.0);  // P(B = 0)
  double cdf = 0.0;
  long long l = 0;
  for (long long k = 0; k <= n / 2; ++k) {
    cdf += std::exp(log_pmf);
    if (cdf > kTail) break;
    l = k + 1;  // cdf(k) <= kTail, so rank k + 1 qualifies
    log_pmf += std::log(static_cast<double>(n - k) / static_cast<double>(k + 1));
  }
  return l;
}

struct Interval {
  double median = std::numeric_limits<double>::quiet_NaN();
  double low = std::numeric_limits<double>::quiet_NaN();
  double high = std::numeric_limits<double>::quiet_NaN();
  double relative_half_width() const { return (high - low) / 2.0 / median; }  // nan while undefined
};

// The median (the mean of the two middle samples for an even count, as the Python statistics) and
// its 95 % interval, of samples already sorted.
inline Interval interval_sorted(const std::vector<double>& x) {
  Interval out;
  const size_t n = x.size();
  if (n == 0) return out;
  out.median = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2.0;
  const long long l = lower_rank(static_cast<long long>(n));
  if (l >= 1) {
    out.low = x[static_cast<size_t>(l - 1)];
    out.high = x[n - static_cast<size_t>(l)];
  }
  return out;
}

inline Interval interval(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return interval_sorted(x);
}

// How a point's repetition is bounded; the defaults are those of a fixed loop of one iteration.
struct Policy {
  long long min_iterations = 1;
  long long max_iterations = 1;
  double min_time = 0.0;   // fixed mode only: keep going until this much timed work
  double precision = 0.0;  // 0: fixed mode
  double max_time = std::numeric_limits<double>::infinity();  // seconds of timed work per point
  bool adaptive() const { return precision > 0.0; }
};

// Reads --precision FRACTION (0 < p < 1) and --max-time SECONDS (> 0) into `policy`; a bad value
// throws BadArgument naming it (the probe exits 2).
inline void read_options(Args& args, Policy& policy) {
  if (args.given("precision")) {
    const std::string text = args.text("precision", "");
    char* end = nullptr;
    const double p = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(p > 0.0 && p < 1.0))
      throw BadArgument("--precision '" + text + "' is not a fraction between 0 and 1 (exclusive), e.g. 0.02");
    policy.precision = p;
  }
  if (args.given("max-time")) {
    const std::string text = args.text("max-time", "");
    char* end = nullptr;
    const double t = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(t > 0.0 && t <= 86400.0))
      throw BadArgument("--max-time '" + text + "' is not a number of seconds in (0, 86400]");
    policy.max_time = t;
  }
}

class Repeat {
 public:
  explicit Repeat(const Policy& policy) : policy_(policy) {}

  // Keeps one sample (seconds of timed work); true when the point wants another.
  bool more(double seconds) { return more(seconds, seconds); }
  // The same for a sample `value` (e.g. seconds per load) that took `seconds` of timed work.
  bool more(double value, double seconds) {
    samples_.push_back(value);
    spent_ += seconds;
    const long long n = static_cast<long long>(samples_.size());
    if (n >= policy_.max_iterations) return stop("max-iterations");
    if (spent_ >= policy_.max_time) return stop("max-time");
    if (!policy_.adaptive()) {
      if (n < policy_.min_iterations || spent_ < policy_.min_time) return true;
      return stop("fixed");
    }
    if (n < policy_.min_iterations) return true;
    if (n >= next_check_) {
      next_check_ = n + std::max(1LL, n / 32);
      if (current().relative_half_width() <= policy_.precision) return stop("precision");
    }
    return true;
  }

  const std::string& stopped() const { return stopped_; }
  long long iterations() const { return static_cast<long long>(samples_.size()); }
  double spent() const { return spent_; }
  Interval current() const { return interval(samples_); }

  // The fields that say how the point ended, added to a "point" record.
  JsonLine& describe(JsonLine& line) const {
    const Interval ci = current();
    return line.str("stopped", stopped_.empty() ? "fixed" : stopped_)
        .integer("iterations", iterations())
        .number("median_seconds", ci.median)
        .number("median_ci_low_seconds", ci.low)
        .number("median_ci_high_seconds", ci.high)
        .number("relative_half_width", ci.relative_half_width())
        .number("precision", policy_.adaptive() ? policy_.precision : std::numeric_limits<double>::quiet_NaN())
        .number("timed_seconds", spent_);
  }

 private:
  bool stop(const std::string& why) {
    // A fixed loop ended by its count or its --min-time reports "fixed": both were asked for.
    stopped_ = policy_.adaptive() || why == "max-time" ? why : "fixed";
    return false;
  }
  Policy policy_;
  std::vector<double> samples_;
  double spent_ = 0.0;
  long long next_check_ = 0;
  std::string stopped_;
};

}  // namespace precision
}  // namespace xferlab
