// Custom-call targets perfsim's lowerings emit and its passes recognise. The convention of each
// (operands, backend_config, semantics) is documented with its reference implementation in
// sim/interp/custom_calls.h; the cost model and the fit checker read the same fields.
#ifndef PERFSIM_SIM_IR_CUSTOM_CALL_TARGETS_H_
#define PERFSIM_SIM_IR_CUSTOM_CALL_TARGETS_H_

#include "absl/strings/string_view.h"

namespace perfsim {

// Megablox grouped matmul: out[m,n] = lhs[m,k] @ rhs[group of row][k,n].
inline constexpr absl::string_view kGmmTarget = "perfsim.gmm";
// Megablox transposed grouped matmul (weight gradients): dw[g] = lhs[:, rows of g] @ rhs[rows].
inline constexpr absl::string_view kTgmmTarget = "perfsim.tgmm";
// A fused gated expert FFN per group (fused_expert_ffn): out[rows of g] =
// act(x_rows·wi_0[g], x_rows·wi_1[g])·wo[g], tiled over F or over D.
inline constexpr absl::string_view kFusedFfnTarget = "perfsim.fused_ffn";
// What jax.lax.empty lowers to: an uninitialised buffer.
inline constexpr absl::string_view kAllocateBufferTarget = "AllocateBuffer";

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_CUSTOM_CALL_TARGETS_H_
