// Closed-form window counts (window_counts.h). The convolution count follows XLA's
// GetConvolutionFlops condition exactly: an (output o, kernel k) pair of one spatial dimension
// reads input element u / base_dilation where u = o·stride + k·window_dilation - padding_low,
// when u >= 0, u is a multiple of base_dilation and u / base_dilation < input. For a fixed o
// (or k) the partners form an arithmetic progression cut by an interval, so each is counted
// with one modular inverse instead of a loop; products use 128-bit integers so that extreme
// windows cannot overflow.
#include "sim/cost/window_counts.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace perfsim {
namespace cost_internal {
namespace {

__extension__ typedef __int128 Wide;

template <typename Int>
Int FloorDiv(Int a, Int b) {  // b > 0
  Int q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}

template <typename Int>
Int CeilDiv(Int a, Int b) {
  return -FloorDiv<Int>(-a, b);
}

template <typename Int>
Int FloorMod(Int a, Int m) {  // m > 0
  return a - FloorDiv<Int>(a, m) * m;
}

template <typename Int>
Int Gcd(Int a, Int b) {
  while (b != 0) {
    const Int r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// a^-1 mod m for gcd(a, m) = 1, m >= 1 (extended Euclid).
template <typename Int>
Int ModInverse(Int a, Int m) {
  Int old_r = FloorMod<Int>(a, m), r = m, old_s = 1, s = 0;
  while (r != 0) {
    const Int q = old_r / r;
    const Int next_r = old_r - q * r;
    old_r = r;
    r = next_r;
    const Int next_s = old_s - q * s;
    old_s = s;
    s = next_s;
  }
  return FloorMod<Int>(old_s, m);
}

// #{y in [0, count): v = t + b·y has 0 <= v <= limit and v ≡ 0 (mod m)}, b >= 0, m >= 1,
// for many t: the modular part, which depends only on b and m, is worked out once. Int is
// int64_t when every intermediate fits (ConvValidPositions checks), 128 bits otherwise.
template <typename Int>
class PartnerCounter {
 public:
  PartnerCounter(Int b, Int count, Int limit, Int m)
      : b_(b), count_(count), limit_(limit), m_(m), g_(b == 0 ? m : Gcd<Int>(b, m)),
        period_(m / g_), inverse_(b == 0 ? 0 : ModInverse<Int>(b / g_, period_)) {}

  Int operator()(Int t) const {
    if (count_ <= 0 || limit_ < 0) return 0;
    if (b_ == 0) return t >= 0 && t <= limit_ && FloorMod<Int>(t, m_) == 0 ? count_ : 0;
    const Int lo = std::max<Int>(0, CeilDiv<Int>(-t, b_));
    const Int hi = std::min<Int>(count_ - 1, FloorDiv<Int>(limit_ - t, b_));
    if (lo > hi) return 0;
    // b·y ≡ -t (mod m): solvable iff g = gcd(b, m) divides t; then y ≡ y0 (mod m / g).
    if (FloorMod<Int>(t, g_) != 0) return 0;
    if (period_ == 1) return hi - lo + 1;
    const Int y0 = FloorMod<Int>(FloorMod<Int>(-t / g_, period_) * inverse_, period_);
    return FloorDiv<Int>(hi - y0, period_) - FloorDiv<Int>(lo - 1 - y0, period_);
  }

 private:
  Int b_, count_, limit_, m_, g_, period_, inverse_;
};

// The sum over the outer positions x of the inner partners of t = x·outer_step - padding.
template <typename Int>
Wide SumPartners(int64_t outer_count, Int outer_step, Int padding_low, Int inner_step,
                 Int inner_count, Int limit, Int base_dilation) {
  const PartnerCounter<Int> partners(inner_step, inner_count, limit, base_dilation);
  Wide total = 0;
  for (int64_t x = 0; x < outer_count; ++x) {
    total += partners(static_cast<Int>(x) * outer_step - padding_low);
  }
  return total;
}

}  // namespace

int64_t ConvValidPositions(const ConvDimensionSizes& sizes, const WindowDimension& window) {
  if (sizes.input <= 0 || sizes.kernel <= 0 || sizes.output <= 0) return 0;
  const Wide stride = std::max<int64_t>(1, window.stride);
  const Wide window_dilation = std::max<int64_t>(1, window.window_dilation);
  const Wide base_dilation = std::max<int64_t>(1, window.base_dilation);
  const Wide limit = Wide{sizes.input - 1} * base_dilation;  // the last real element's u
  // u = o·stride + k·window_dilation - padding_low: loop over the shorter side.
  const bool outer_is_kernel = sizes.kernel <= sizes.output;
  const int64_t outer_count = outer_is_kernel ? sizes.kernel : sizes.output;
  const Wide outer_step = outer_is_kernel ? window_dilation : stride;
  const Wide inner_count = outer_is_kernel ? sizes.output : sizes.kernel;
  const Wide inner_step = outer_is_kernel ? stride : window_dilation;
  // 64-bit arithmetic when every value the count forms stays below 2^61 (the residue times
  // the inverse is below base_dilation², kept below 2^60); 128-bit otherwise.
  constexpr Wide kSmall = Wide{1} << 61;
  const Wide reach = Wide{outer_count} * outer_step + inner_count * inner_step +
                     (window.padding_low < 0 ? -Wide{window.padding_low} : Wide{window.padding_low}) +
                     limit;
  Wide total = 0;
  if (reach < kSmall && base_dilation < (Wide{1} << 30)) {
    total = SumPartners<int64_t>(outer_count, static_cast<int64_t>(outer_step), window.padding_low,
                                 static_cast<int64_t>(inner_step),
                                 static_cast<int64_t>(inner_count), static_cast<int64_t>(limit),
                                 static_cast<int64_t>(base_dilation));
  } else {
    total = SumPartners<Wide>(outer_count, outer_step, window.padding_low, inner_step,
                              inner_count, limit, base_dilation);
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return total > Wide{kMax} ? kMax : static_cast<int64_t>(total);
}

double WindowElements(const std::vector<WindowDimension>& window) {
  double elements = 1;
  for (const WindowDimension& w : window) elements *= static_cast<double>(w.size);
  return elements;
}

double ReduceWindowApplications(const std::vector<WindowDimension>& window,
                                int64_t output_elements) {
  return (WindowElements(window) - 1) * static_cast<double>(output_elements);
}

double XlaReduceWindowApplications(const std::vector<WindowDimension>& window,
                                   const Shape& result0, bool result_is_array) {
  const int64_t output_elements = result0.IsArray() ? result0.ElementCount() : 0;
  const double general = ReduceWindowApplications(window, output_elements);
  int64_t reduction_dimensions = 0;
  int64_t padded_dimensions = 0;
  for (const WindowDimension& w : window) {
    if (w.size != 1) ++reduction_dimensions;
    if (w.padding_low != 0 || w.padding_high != 0) ++padded_dimensions;
  }
  if (reduction_dimensions != 1 || padded_dimensions != 1 || !result_is_array) return general;
  for (size_t d = 0; d < window.size(); ++d) {
    const WindowDimension& w = window[d];
    // XLA takes the first dimension of this form (absl::c_find_if) and checks only it.
    if (w.size == 1 || w.padding_low == 0 || w.padding_high == 0 ||
        w.padding_low != w.padding_high || (w.size - 1) % 2 != 0 ||
        (w.size - 1) / 2 != w.padding_low) {
      continue;
    }
    const int64_t rank = result0.IsArray() ? result0.rank() : 0;
    if (static_cast<int64_t>(d) >= rank) return general;
    const int64_t n = result0.dimensions(static_cast<int64_t>(d));
    if (n <= 0 || w.padding_low != n - 1) return general;
    return static_cast<double>(output_elements / n) + static_cast<double>(n - 1);
  }
  return general;
}

}  // namespace cost_internal
}  // namespace perfsim
