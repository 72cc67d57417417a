// Static checks on a lowered step, run by `perfsim validate` before any numbers:
//   - every dot, ragged-dot and grouped-matmul kernel contracts dimensions with the same logical
//     name (D with D, never D with F: known_bugs.md #1, including its silent D == F form), and
//     batches dimensions with the same name;
//   - a grouped matmul's rhs is rank 3 with the group dimension (E) first (known_bugs.md #2);
//   - a ragged-all-to-all's output buffer holds the worst case the routing allows
//     (known_bugs.md #10), when the backend declared what it receives (DeclareReceivedRows).
// Instructions without recorded names (constants, helper computations) are not checked.
#ifndef PERFSIM_SIM_LOWERING_CHECKS_H_
#define PERFSIM_SIM_LOWERING_CHECKS_H_

#include "absl/status/status.h"
#include "sim/lowering/lowering.h"

namespace perfsim {

// FailedPrecondition naming the instruction, both dimensions and their names.
absl::Status CheckDimensionNames(const LoweredStep& step);

// What a ragged-all-to-all's receive buffer holds, declared by the lowering that emits it, so
// the check can bound the rows any routing sends there from the spec alone:
//   kExpertRows  the assignments of the n = |replica group| shards' tokens routed to this shard's
//                E_l = E/n experts. The K picks of a token are distinct experts, so at most
//                min(K, E_l) of a token's rows land on one shard; every one of the n·T_l tokens
//                can send that many: worst = n·T_l·min(K, E_l) (= min(n·T_l·K, T_l·E), MaxText's
//                T_l·K·min(EP, E/K) exactly). With per-expert alignment A > 1 each sender pads each
//                of my E_l experts' chunks by up to A − 1 rows: + n·E_l·(A − 1).
//   kTokenRows   this shard's own T_l·K assignments coming back (the combine; the transposed
//                dispatch): worst = T_l·K, + E·(A − 1) with alignment (the sender's padded
//                layout). T_l = spec.tokens_per_device(), K, E from spec.model.
enum class ReceivedRows { kExpertRows, kTokenRows };

// Marks `ragged_all_to_all` with frontend_attributes={perfsim_receive="expert_rows"|"token_rows"
// [,perfsim_align="A"]}: the declaration travels with the instruction (printed by
// `perfsim lower`, kept by a test that mutates the module).
void DeclareReceivedRows(Instruction* ragged_all_to_all, ReceivedRows received, int64_t align);

// FailedPrecondition when a declared ragged-all-to-all's output operand (its receive buffer)
// has fewer rows than the worst case above, naming the instruction, the buffer and the formula
// with its numbers. Undeclared ones (user HLO) are not checked.
absl::Status CheckReceiveBuffers(const LoweredStep& step);

// All static checks.
absl::Status CheckLoweredStep(const LoweredStep& step);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_CHECKS_H_
