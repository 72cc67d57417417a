// Fit-checking the kernel custom-calls of a lowered module (DESIGN.md "Fit": a lowering whose
// kernel tiling does not fit is a lowering failure).
//
//   PERFSIM_ASSIGN_OR_RETURN(std::vector<InstructionFit> fits,
//                            FitCheckModule(module, chip, /*vmem_limit_bytes=*/std::nullopt));
//   PERFSIM_RETURN_IF_ERROR(CheckModuleFits(module, chip, std::nullopt));   // or all at once
//
// Every custom-call with target perfsim.gmm or perfsim.tgmm (sim/ir/custom_call_targets.h), in
// any computation, is read as the megablox v1 kernel with the convention documented in
// sim/interp/custom_calls.h:
//   perfsim.gmm   lhs [m, k], rhs [G_local, k, n] ([G_local, n, k] with "transpose_rhs": true),
//                 group_sizes [G]; result [m, n]
//   perfsim.tgmm  lhs [k, m], rhs [m, n], group_sizes [G]; result [G_local, k, n]
//   backend_config {"tiling": [tm, tk, tn], ...}; without a tiling, megablox's default
//                 (128, 128, 128).
// The operand and result element types are the kernel's dtypes; G (the group_sizes length)
// sizes the SMEM group metadata.
//
// A misfit becomes ResourceExhausted (XLA's code for "Ran out of memory in memory space vmem"):
//   "gmm_wi0 (perfsim.gmm at 12:8): gmm tiling (512, 1024, 1024) needs 18 MiB of VMEM
//    (18874368 bytes); limit 16 MiB (16777216 bytes, default scoped VMEM limit of tpu_v5p),
//    short by 2 MiB; largest buffers: rhs 2 x [1024,1024] f32 = 8 MiB, lhs ..., out ..."
// (12:8 is the line and column of the instruction's name in the HLO text.) Malformed kernel
// calls (wrong operand count or ranks, a tiling that is not three integers) are InvalidArgument
// naming the instruction.
#ifndef PERFSIM_SIM_FIT_MODULE_FIT_H_
#define PERFSIM_SIM_FIT_MODULE_FIT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// The kernel problem and tiling of one perfsim.gmm / perfsim.tgmm custom-call; nullopt for
// any other instruction.
absl::StatusOr<std::optional<std::pair<KernelProblem, Tiling>>> KernelCallProblem(
    const Instruction& instruction);

// One report per kernel custom-call, in computation then instruction (text) order.
absl::StatusOr<std::vector<InstructionFit>> FitCheckModule(const Module& module, const Chip& chip,
                                                           std::optional<int64_t> vmem_limit_bytes);

// OK when the kernel fits; otherwise ResourceExhausted with the message shown above (a broken
// kernel rule gives the rule instead of the byte counts).
absl::Status MisfitStatus(const InstructionFit& fit);

// OK when every kernel call fits; otherwise ResourceExhausted listing each misfit on its own
// line.
absl::Status CheckModuleFits(const Module& module, const Chip& chip,
                             std::optional<int64_t> vmem_limit_bytes);

}  // namespace perfsim

#endif  // PERFSIM_SIM_FIT_MODULE_FIT_H_
