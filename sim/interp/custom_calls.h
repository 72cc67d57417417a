// Custom-call targets the interpreter runs, and the convention perfsim's lowerings use for the
// grouped-matmul kernels of shared/reference/backends.md (megablox gmm / tgmm) and for the fused
// expert-FFN kernel of fused_expert_ffn.
//
// Built-in targets:
//
//   AllocateBuffer   no operands; an uninitialised buffer of the result shape (what
//                    jax.lax.empty lowers to), poisoned: NaN for floats, kPoisonInteger for
//                    integers, true for pred, so a lowering that reads it shows NaN.
//   TopK             XLA:CPU's top-k (what jax.lax.top_k compiles to): (values, s32 indices)
//                    of the k largest along the last dimension, k from the result shape.
//   Sharding, SPMDFullToShardShape, SPMDShardToFullShape
//                    sharding annotations: the identity when operand and result dimensions
//                    agree; otherwise an error (run the SPMD-partitioned module instead).
//
//   perfsim.gmm      grouped matmul, megablox `gmm`:
//     %out = f32[m,n] custom-call(bf16[m,k] %lhs, bf16[G_local,k,n] %rhs, s32[G] %group_sizes
//                                 [, s32[] or s32[1] %group_offset]),
//            custom_call_target="perfsim.gmm",
//            backend_config={"tiling":[tm,tk,tn],"transpose_rhs":false,"group_offset":0}
//     rhs is [G_local,n,k] when transpose_rhs is true. The result element type is the
//     preferred_element_type; products accumulate in f32 (f64 for an f64 result).
//     Group g (g in [group_offset, group_offset + G_local)) owns rows [s_g, s_g + gs_g) with
//     s_g = gs_0 + ... + gs_{g-1}; those rows are lhs_rows @ rhs[g - group_offset].
//     Rows no active group owns are what the kernel leaves them: zero when G_local < G
//     (megablox's _zero_uninitialized_memory), otherwise never written, so poisoned (NaN).
//     The optional fourth operand (dynamic, e.g. derived from partition-id) overrides the
//     backend_config group_offset.
//
//   perfsim.tgmm     transposed grouped matmul, megablox `tgmm` (weight gradients):
//     %dw = f32[G_local,k,n] custom-call(bf16[k,m] %lhs, bf16[m,n] %rhs, s32[G] %group_sizes
//                                        [, group_offset]),
//           custom_call_target="perfsim.tgmm",
//           backend_config={"tiling":[tm,tk,tn],"group_offset":0}
//     lhs is the transposed activations [k, m], as megablox takes them. dw[g] =
//     lhs[:, rows of group group_offset+g] @ rhs[those rows, :]; empty groups give zeros
//     (tgmm visits them), G_local = num_actual_groups is the result's dimension 0.
//
//   Both kernels check what megablox checks: lhs rank 2, rhs rank 3 (gmm) / 2 (tgmm), matching
//   k and n, integer group sizes summing to at most m, and m % tm == 0 when a tiling is given
//   ("ValueError" in megablox; InvalidArgument here).
//
//   perfsim.fused_ffn   the whole gated expert FFN of each group in one kernel (fused_expert_ffn):
//     %out = f32[m,D] custom-call(f32[m,D] %x, f32[G_local,D,F] %wi_0, f32[G_local,D,F] %wi_1,
//                                 f32[G_local,F,D] %wo, s32[G] %group_sizes [, group_offset]),
//            custom_call_target="perfsim.fused_ffn",
//            backend_config={"tiling":[tm,td,tf],"tiled_dim":"F","activation":"silu",
//                            "group_offset":0}
//     Rows of group g (as for perfsim.gmm) are act(h0, h1)·wo[g - group_offset] with
//     h_j = x_rows·wi_j[g - group_offset]. "activation" is "silu" (h0·σ(h0)·h1), "gelu"
//     (gelu_tanh(h0)·h1) or "clipped_swiglu" with "clip_limit" L and "sigmoid_alpha" α
//     (g = min(h0, L), u = clamp(h1, −L, L), g·σ(α·g)·(u + 1)): sim/lowering/ffn.h's formulas.
//     h accumulates in f32 (f64 for an f64 result), the activation is computed there, rounded
//     to wo's element type (the second matmul's MXU input) and out accumulates in f32.
//     "tiled_dim" says which dimension the kernel tiles (sim/fit: fused_ffn_f_tiled (tm, D, tf)
//     or fused_ffn_d_tiled (tm, td, F)): over F requires td == D and 1 <= tf <= F, over D
//     requires tf == F and 1 <= td <= D; both give the same numbers here (the reference sums h
//     over all of D, then out over all of F). m % tm == 0 is required, as for perfsim.gmm.
//     Rows no active group owns are left as perfsim.gmm leaves them (poisoned, or zero when
//     G_local < G).
//
// The three kernels read their backend_config as KernelBackendConfig (proto/backend_config.proto)
// with protobuf's JSON parser: malformed JSON, or a field of the wrong type, is InvalidArgument
// "expected backend_config JSON for KernelBackendConfig; got {"tiling":"wide"}: ...".
//
// An unknown target is Unimplemented: "expected a custom-call target the interpreter knows
// (AllocateBuffer, perfsim.gmm, ...); got 'tpu_custom_call'".
#ifndef PERFSIM_SIM_INTERP_CUSTOM_CALLS_H_
#define PERFSIM_SIM_INTERP_CUSTOM_CALLS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/interp/evaluator.h"
#include "sim/ir/custom_call_targets.h"

namespace perfsim {

namespace interp {

// A reference implementation of one custom-call target. Errors name no instruction (the
// evaluator adds it).
using CustomCallFn = std::function<absl::StatusOr<Value>(
    DeviceEvaluator& ev, const Instruction& instruction, OperandValues operands)>;

// True when the interpreter runs `instruction` (a custom-call) by handing its operand on
// unchanged: the sharding annotations above when operand and result dimensions agree.
// memory_plan.h uses it to count no new buffer.
bool CustomCallPassesOperandThrough(const Instruction& instruction);

// Registers `fn` for `target` (process-wide; replaces an existing entry). Thread-safe.
void RegisterCustomCall(std::string target, CustomCallFn fn);

// The registered targets, sorted.
std::vector<std::string> RegisteredCustomCallTargets();

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_CUSTOM_CALLS_H_
