// The module verifier: structural checks plus shape inference re-run on every instruction.
//
//   PERFSIM_RETURN_IF_ERROR(VerifyModule(module));
//
// Checks, in order, every computation:
//   - computation names unique in the module, instruction names unique in their computation
//     (real dumps reuse names such as `param_0` across computations); one root; parameters
//     numbered 0..n-1 with no gaps or duplicates;
//   - operand counts match the opcode table; called computations exist and their signatures
//     fit the caller (reduce's to_apply takes 2·N scalars, while's condition returns pred[], ...);
//   - no cycles (operands and control predecessors), no recursive calls;
//   - InferShape(instruction) equals the declared shape, layouts ignored.
// The first failure is returned as InvalidArgument (FailedPrecondition for cycles), in the form
//   "<instruction>: expected <inferred shape>; got <declared shape>"
// prefixed by "line:col: " when the instruction came from text.
#ifndef PERFSIM_SIM_IR_VERIFIER_H_
#define PERFSIM_SIM_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "sim/ir/instruction.h"

namespace perfsim {

absl::Status VerifyModule(const Module& module);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_VERIFIER_H_
