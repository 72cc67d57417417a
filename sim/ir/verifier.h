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
//   - no cycles (operands and control predecessors), no recursive calls (any depth of
//     nesting is valid, as in XLA; the interpreter bounds it itself, CheckCallDepth);
//   - InferShape(instruction) equals the declared shape, layouts ignored.
// The first failure is returned as InvalidArgument (FailedPrecondition for cycles), in the form
//   "<instruction>: expected <inferred shape>; got <declared shape>"
// prefixed by "line:col: " when the instruction came from text.
#ifndef PERFSIM_SIM_IR_VERIFIER_H_
#define PERFSIM_SIM_IR_VERIFIER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/ir/instruction.h"

namespace perfsim {

// The deepest chain of nested computations the interpreter runs: the entry calling a fusion
// calling a reduce's to_apply is 3 deep. Real XLA modules nest a few levels (a while body
// calling a fusion calling a reduction: 4); the evaluator and its memory plan recurse once
// per level, a few KiB of stack each, so 256 levels stay far inside a thread's stack,
// sanitizers included. Cost and op counts have no such limit (they walk callees first with
// an explicit stack), and VerifyModule does not apply it.
inline constexpr int64_t kMaxCallDepth = 256;

// The number of computations on the longest call chain of `module`, starting anywhere (1 for
// a module without calls), computed iteratively. FailedPrecondition on a recursive call graph.
absl::StatusOr<int64_t> CallDepth(const Module& module);

// InvalidArgument when CallDepth(module) > kMaxCallDepth, naming the limit, the depth and the
// chain's first computations:
//   "module deep: expected calls nested at most 256 deep; got 5001 (c0 > c1 > c2 > ...)"
// Run by the interpreter (RunModule, ComputeMemoryNeed) before it recurses.
absl::Status CheckCallDepth(const Module& module);

// The most instructions a walk over `module` visits when every call is expanded where it
// is made: a computation called from two sites counts twice. The interpreter and its memory
// plan walk every call site, so a few nested computations each calling the next twice would
// make them take time exponential in the module's size (cost remembers each computation's
// sum and is linear). Real modules expand to about their own size; the limit is far above.
inline constexpr int64_t kMaxExpandedInstructions = 100'000'000;

// InvalidArgument when the expansion exceeds kMaxExpandedInstructions:
//   "module fan: expected at most 100000000 instructions with every call expanded; got
//    more than 2^63 (computations called from many sites, nested)"
// Run by RunModule and ComputeMemoryNeed with CheckCallDepth.
absl::Status CheckCallExpansion(const Module& module);

absl::Status VerifyModule(const Module& module);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_VERIFIER_H_
