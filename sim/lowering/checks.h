// Static checks on a lowered step, run by `perfsim validate` before any numbers (each returns
// FailedPrecondition naming the instruction, the tensors and the known_bugs.md entry):
//   - CheckDimensionNames: every dot, ragged-dot and grouped-matmul kernel contracts dimensions
//     with the same logical name (D with D, never D with F: known_bugs.md #1, including its
//     silent D == F form), and batches dimensions with the same name;
//   - CheckGroupedOperands: a grouped matmul's rhs is rank 3 with the group dimension first,
//     whatever the names say (known_bugs.md #2: a stacked [E, 2, D, F] rhs, or [D, E, F]);
//   - CheckKernelRoles: a gmm/tgmm kernel runs the spec's tiling for the role it declares
//     (wi.fwd, wo.dlhs, ...), tk on its contraction and tn on its output, as configured, not
//     shrunk to the dimensions (known_bugs.md #4; #23: blocks are allocated at full tile size);
//   - CheckRouterPrecision: the router's math is f32 (known_bugs.md #28);
//   - CheckResiduals (checks_residuals.cc): the backward reads only forward values the forward
//     saved, and each VJP reads the very value its forward op consumed (known_bugs.md #17);
//   - CheckReceiveBuffers, CheckGroupSums (checks_buffers.cc): a ragged-all-to-all's receive
//     buffer holds the worst case any routing sends (known_bugs.md #10), and the group sizes of
//     every ragged-dot / gmm / tgmm / fused kernel sum to at most the rows it has, both bounded
//     symbolically from the spec through what the lowering declares the buffer or the groups
//     count (DeclareReceivedRows, DeclareTruncatedTo, DeclareGroupRows: typed fields of the
//     instruction's annotation, proto/annotation.proto RaggedBuffer and RaggedSizes).
// Instructions without recorded names (constants, helper computations) are not name-checked.
#ifndef PERFSIM_SIM_LOWERING_CHECKS_H_
#define PERFSIM_SIM_LOWERING_CHECKS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/annotation.pb.h"
#include "sim/lowering/lowering.h"

namespace perfsim {

absl::Status CheckDimensionNames(const LoweredStep& step);
absl::Status CheckGroupedOperands(const LoweredStep& step);
absl::Status CheckKernelRoles(const LoweredStep& step);
absl::Status CheckRouterPrecision(const LoweredStep& step);
absl::Status CheckResiduals(const LoweredStep& step);

// What a ragged-all-to-all's receive buffer holds (proto/annotation.proto RaggedBuffer), declared
// by the lowering that emits it, so the check can bound the rows any routing sends there from
// the spec alone:
//   RECEIVED_EXPERT_ROWS  the assignments of the n = |replica group| shards' tokens routed to this
//                shard's E_l = E/n experts. The K picks of a token are distinct experts, so at most
//                min(K, E_l) of a token's rows land on one shard; every one of the n·T_l tokens
//                can send that many: worst = n·T_l·min(K, E_l) (= min(n·T_l·K, T_l·E), MaxText's
//                T_l·K·min(EP, E/K) exactly). With per-expert alignment A > 1 each sender pads each
//                of my E_l experts' chunks by up to A − 1 rows: + n·E_l·(A − 1).
//   RECEIVED_TOKEN_ROWS   this shard's own T_l·K assignments coming back (the combine; the
//                transposed dispatch): worst = T_l·K, + E·(A − 1) with alignment (the sender's
//                padded layout). T_l = spec.tokens_per_device(), K, E from spec.model.
//
// Sets the annotation's buffer { received: ... align: A } (align only when A > 1) on
// `ragged_all_to_all`: the declaration travels with the instruction, printed by `perfsim lower`
// inside perfsim_annotation and parsed back, and kept by a test that mutates the module.
void DeclareReceivedRows(Instruction* ragged_all_to_all, RaggedBuffer::Received received,
                         int64_t align);

// Declares that the lowering truncated a ragged-all-to-all's send sizes to `rows` per receiver
// (ep_ragged_a2a with ragged_buffer_factor > 0: MaxText's _truncate_matrix): the annotation's
// buffer.truncated_rows; or, on the group sizes of such a buffer (declared by DeclareGroupRows
// first), ragged.truncated_rows. The checks below then bound the rows by min(worst case, rows):
// a truncating exchange drops what does not fit instead of overflowing (the drops are the
// lowering's documented behaviour; validate's numbers show them).
void DeclareTruncatedTo(Instruction* instruction, int64_t rows);

// FailedPrecondition when a declared ragged-all-to-all's output operand (its receive buffer)
// has fewer rows than the worst case above, naming the instruction, the buffer and the formula
// with its numbers, or when its annotation has a buffer without `received`. Undeclared ones
// (no buffer in the annotation: user HLO) are not checked.
absl::Status CheckReceiveBuffers(const LoweredStep& step);

// What a group-sizes tensor counts, declared on the instruction that produces it, so the check
// can bound Σ group_sizes from the spec (T_l, K, E, EP from step.spec):
//   kAssignments          this device's T_l·K sorted assignments (a bincount): Σ = T_l·K
//   kAlignedAssignments   the same, each group padded to a multiple of A: Σ ≤ T_l·K + E·(A − 1)
//   kGatheredAssignments  the EP·T_l·K assignments of the ep group (ring_of_experts): Σ = EP·T_l·K
//   kReceivedRows         the rows a shard received for its E_l experts (after the dispatch
//                         exchange): Σ ≤ the kExpertRows worst case above
enum class GroupRows { kAssignments, kAlignedAssignments, kGatheredAssignments, kReceivedRows };

// Annotates the group-sizes producer with what it holds (RaggedSizes: `holds`, the kind above,
// which the check reads back; the device's or the EP group's rows, E_l received groups at r·E_l,
// gathered groups rolled by r·roll, and the alignment A when A > 1, read back as ragged.align).
void DeclareGroupRows(Instruction* group_sizes, GroupRows rows, int64_t align,
                      int64_t roll_per_ep_rank = 0);

// For every ragged-dot (operand 2), perfsim.gmm / perfsim.tgmm (operand 2) and
// perfsim.fused_ffn (operand 4): FailedPrecondition when the group sizes are undeclared, or
// when their worst-case sum exceeds the rows of the ragged dimension (lhs dim 0; tgmm: lhs
// dim 1), naming the instruction and the formula with its numbers.
absl::Status CheckGroupSums(const LoweredStep& step);

// All static checks, in the order above.
absl::Status CheckLoweredStep(const LoweredStep& step);

// Whether the instruction's annotation puts it in the backward (sim/lowering/annotations.h
// StageNameOf gives its stage).
bool IsBackwardInstruction(const Instruction& instruction);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_CHECKS_H_
