// Window arithmetic of the counting pass, closed form: the number of window positions that
// touch real input, and XLA's reduce-window special case, without enumerating positions.
//
//   // 1-D convolution, input 10, kernel 3, output 8, stride 1, no padding: 8 * 3 = 24 pairs.
//   ConvValidPositions({.input = 10, .kernel = 3, .output = 8}, window_dim) == 24
//
// Costs O(min(kernel, output)) per spatial dimension (one closed-form count per position of
// the shorter side), never O(kernel * output): XLA's HloCostAnalysis "extreme" convolutions
// (a 524,288-wide kernel with base dilation 524,288 or padding 524,287) take milliseconds.
#ifndef PERFSIM_SIM_COST_WINDOW_COUNTS_H_
#define PERFSIM_SIM_COST_WINDOW_COUNTS_H_

#include <cstdint>
#include <vector>

#include "sim/ir/attributes.h"
#include "sim/ir/shape.h"

namespace perfsim {
namespace cost_internal {

// The sizes of one spatial dimension of a convolution (elements, not bytes).
struct ConvDimensionSizes {
  int64_t input = 1;   // lhs spatial size, before base dilation and padding
  int64_t kernel = 1;  // rhs spatial size, before window dilation
  int64_t output = 1;  // result spatial size
};

// The number of (output position, kernel position) pairs of one spatial dimension that read
// a real input element: not padding, not a hole left by base dilation. This is what XLA's
// HloCostAnalysis::GetConvolutionFlops counts per dimension (it enumerates the pairs; this
// counts each kernel or output position's partners in closed form). Window fields as in
// HLO text: stride, padding_low, window_dilation (rhs_dilate), base_dilation (lhs_dilate);
// dilations below 1 count as 1. Saturates at int64's maximum.
int64_t ConvValidPositions(const ConvDimensionSizes& sizes, const WindowDimension& window);

// XLA's HandleReduceWindow application count: (window elements - 1) · E(output), except for
// a reduce along one dimension of size N broadcast back (one window dimension of size 2p+1
// padded p on both sides, p = N - 1, the only padded and the only non-unit dimension), which
// XLA charges E(output)/N + (N - 1). As a double: the product can exceed int64.
double XlaReduceWindowApplications(const std::vector<WindowDimension>& window,
                                   const Shape& result0, bool result_is_array);

// (window elements - 1) · E(output): every output combines its window (true cost).
double ReduceWindowApplications(const std::vector<WindowDimension>& window,
                                int64_t output_elements);

// The product of the window sizes, as a double (it can exceed int64).
double WindowElements(const std::vector<WindowDimension>& window);

}  // namespace cost_internal
}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_WINDOW_COUNTS_H_
