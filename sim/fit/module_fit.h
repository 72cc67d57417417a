// Fit-checking the kernel custom-calls of a lowered module (DESIGN.md "Fit": a lowering whose
// kernel tiling does not fit is a lowering failure).
//
//   PERFSIM_ASSIGN_OR_RETURN(std::vector<InstructionFit> fits,
//                            FitCheckModule(module, chip, /*vmem_limit_bytes=*/std::nullopt));
//   PERFSIM_RETURN_IF_ERROR(CheckModuleFits(module, chip, std::nullopt));   // or all at once
//
// Every kernel custom-call perfsim's lowerings emit (sim/ir/custom_call_targets.h), in any
// computation, is checked, with the conventions documented in sim/interp/custom_calls.h:
//   perfsim.gmm        megablox v1 gmm: lhs [m, k], rhs [G_local, k, n] ([G_local, n, k] with
//                      "transpose_rhs": true), group_sizes [G]; result [m, n]
//   perfsim.tgmm       megablox v1 tgmm: lhs [k, m], rhs [m, n], group_sizes [G];
//                      result [G_local, k, n]
//     backend_config {"tiling": [tm, tk, tn], ...}; without a tiling, megablox's default
//     (128, 128, 128).
//   perfsim.fused_ffn  x [m, D], wi_0 and wi_1 [G_local, D, F], wo [G_local, F, D],
//                      group_sizes [G]; result [m, D]. backend_config {"tiling": [tm, td, tf],
//                      "tiled_dim": "D" | "F", ...} (both required, as the interpreter requires
//                      them): "D" is fused_ffn_d_tiled (tm, td, F), "F" fused_ffn_f_tiled
//                      (tm, D, tf); k = D, n = F.
// The operand and result element types are the kernel's dtypes (the fused FFN's weights are
// wi_0's); G (the group_sizes length) sizes the SMEM group metadata. AllocateBuffer is no
// kernel and is skipped, as is every other instruction.
//
// A misfit becomes ResourceExhausted (XLA's code for "Ran out of memory in memory space vmem"):
//   "gmm_wi0 (perfsim.gmm at 12:8): gmm tiling (512, 1024, 1024) needs 18 MiB of VMEM
//    (18874368 bytes); limit 16 MiB (16777216 bytes, default scoped VMEM limit of tpu_v5p),
//    short by 2 MiB; largest buffers: rhs 2 x [1024,1024] f32 = 8 MiB, lhs ..., out ..."
// (12:8 is the line and column of the instruction's name in the HLO text.) The status carries
// the payload kMisfitPayloadUrl, which says "a check failed" rather than "the input is bad":
// the command line turns it into exit 1 (cli/cli.h), where other ResourceExhausted statuses
// (the interpreter's memory budget, say) stay exit 2. Annotate (sim/util/status.h) drops
// payloads, so callers that add context pass it to CheckModuleFits instead. Malformed kernel
// calls (wrong operand count or ranks, a tiling that is not three integers, a fused FFN
// without "tiled_dim") are InvalidArgument naming the instruction, without the payload.
#ifndef PERFSIM_SIM_FIT_MODULE_FIT_H_
#define PERFSIM_SIM_FIT_MODULE_FIT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/fit/fit_report.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"

namespace perfsim {

struct InstructionFit {
  const Instruction* instruction = nullptr;
  FitReport report;
};

// megablox's default tiling, used when a kernel call's backend_config names none.
inline constexpr Tiling kMegabloxDefaultTiling{128, 128, 128};

// Type URL of the payload that marks a misfit status as a failed check (see above).
inline constexpr absl::string_view kMisfitPayloadUrl = "type.perfsim.dev/perfsim.FitMisfit";

// Whether `status` is a misfit from MisfitStatus / CheckModuleFits (it carries the payload).
bool IsMisfit(const absl::Status& status);

// The kernel problem and tiling of one kernel custom-call (perfsim.gmm, perfsim.tgmm,
// perfsim.fused_ffn); nullopt for any other instruction.
absl::StatusOr<std::optional<std::pair<KernelProblem, Tiling>>> KernelCallProblem(
    const Instruction& instruction);

// One report per kernel custom-call, in computation then instruction (text) order.
absl::StatusOr<std::vector<InstructionFit>> FitCheckModule(const Module& module, const Chip& chip,
                                                           std::optional<int64_t> vmem_limit_bytes);

// OK when the kernel fits; otherwise ResourceExhausted with the message shown above (a broken
// kernel rule gives the rule instead of the byte counts), marked with kMisfitPayloadUrl.
absl::Status MisfitStatus(const InstructionFit& fit);

// OK when every kernel call fits; otherwise ResourceExhausted listing each misfit on its own
// line, marked with kMisfitPayloadUrl. A non-empty `context` is prefixed as Annotate does
// ("context: message"), to errors and misfits alike, keeping the mark.
absl::Status CheckModuleFits(const Module& module, const Chip& chip,
                             std::optional<int64_t> vmem_limit_bytes,
                             absl::string_view context = "");

}  // namespace perfsim

#endif  // PERFSIM_SIM_FIT_MODULE_FIT_H_
