// Shape inference: the result shape each opcode gives for its operands and attributes.
//
//   absl::StatusOr<Shape> s = InferShape(instruction);
//
// One function per op family, named in the opcode table (opcode.def), with XLA's semantics
// (xla/service/shape_inference.cc). The builder calls InferShape to make a result shape; the
// verifier calls it on parsed instructions and compares with the declared shape.
//
// Errors are InvalidArgument and read "<instruction name>: expected X; got Y", e.g.
//   "dot.3: expected lhs contracting dimension 1 (size 7168) to equal rhs contracting
//    dimension 1 (size 2048); got 7168 vs 2048"
//
// Functions read operand shapes from instruction.operand(i)->shape() and attributes from
// instruction.attributes(); called computations are read through the instruction. For ops
// whose result is given rather than derived (parameter, reshape, broadcast, iota, custom-call,
// convert's element type, ...) they check the declared instruction.shape() against the
// operands and return it. Layouts of inferred shapes are left unset; comparison ignores them.
#ifndef PERFSIM_SIM_IR_SHAPE_INFERENCE_H_
#define PERFSIM_SIM_IR_SHAPE_INFERENCE_H_

#include "absl/status/statusor.h"
#include "sim/ir/instruction.h"
#include "sim/ir/shape.h"

namespace perfsim {

// Dispatches on instruction.opcode() through the opcode table. Checks the operand count
// against the table's arity first.
absl::StatusOr<Shape> InferShape(const Instruction& instruction);

#define PERFSIM_OPCODE(name, spelling, arity, infer) \
  absl::StatusOr<Shape> infer(const Instruction& instruction);
#include "sim/ir/opcode.def"
#undef PERFSIM_OPCODE

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_SHAPE_INFERENCE_H_
