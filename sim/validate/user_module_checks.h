// Static checks on a user's own module (`perfsim validate --hlo`), which carries none of the
// names perfsim's lowerings record: the role of each entry parameter comes from its position
// (validate.h ValidateHloModule: x, router_w, wi_0, wi_1, wo, ...; dy last for fwd_bwd), its
// logical dimension names from the model (x "TD", wi_0 "EDF", wo "EFD", ...), and a dataflow
// pass carries those names, and two more facts, through every instruction (into fusions and
// calls):
//   - dimension names through views, elementwise ops, broadcasts, reshapes (dims kept at either
//     end), transposes, slices, gathers (the kept operand dims), reduces, dots, ragged-dots and
//     collectives. Every dot and ragged-dot must contract (and batch) dimensions of the same
//     name: with D == F a weight read transposed has the right shape and only its name shows it
//     (known_bugs.md #1):
//       "dot.3: wi_0 is contracted over its F axis (dimension 2), against D of x: shapes
//        [E,F,D] vs expected [E,D,F] (known_bugs.md #1)"
//   - the router matmul's precision: a dot reading router_w (through converts) must multiply
//     in the model's router dtype (f32 unless the model says otherwise; known_bugs.md #28):
//       "dot.1: router matmul in bf16: bf16[32,16] x bf16[16,8]; the model's router runs in
//        f32 (known_bugs.md #28)"
//   - token order: x and dy are in token order; a gather or scatter whose indices depend on the
//     routing (router_w) permutes its data (token -> sorted, sorted -> token). A multiply or dot
//     that weights expert outputs (values depending on wo) still in sorted order by router
//     weights in token order is a combine before the inverse permutation:
//       "dot.9: combine reads expert outputs before the inverse permutation: ..."
//     Order is tracked only where it is certain (collectives keep it, while loops and
//     conditionals forget it), so a lowering this pass cannot follow is not refused.
// Each check returns FailedPrecondition with the instruction's name and its cause.
#ifndef PERFSIM_SIM_VALIDATE_USER_MODULE_CHECKS_H_
#define PERFSIM_SIM_VALIDATE_USER_MODULE_CHECKS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sim/ir/instruction.h"
#include "sim/ir/primitive_type.h"
#include "sim/lowering/lowering.h"

namespace perfsim {

// `parameters[i]` is the role of entry parameter i (name and dims used); `router_type` the
// element type the router matmul must run in. On failure `*check` (when given) is the failing
// check: "contracting_dimensions", "router_precision" or "combine_order".
absl::Status CheckUserModule(const Module& module, const std::vector<TensorSpec>& parameters,
                             PrimitiveType router_type, std::string* check = nullptr);

}  // namespace perfsim

#endif  // PERFSIM_SIM_VALIDATE_USER_MODULE_CHECKS_H_
