// Parser for HLO text, as XLA prints it and as perfsim's printer writes it.
//
//   absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "moe.hlo");
//
// Reads real XLA dumps: the `HloModule` header and its attributes (or no header at all),
// `%`-prefixed or bare names, typed operands, `ENTRY`/`ROOT` (or neither: the last computation
// is the entry and the last instruction the root), inline anonymous computations, layouts with
// tiles/element size/memory space, dynamic dimensions, constants of every element type,
// metadata, backend_config (JSON or string), frontend_attributes, sharding, replica groups in
// explicit and iota form, async -start/-done pairs, fusion/while/conditional. An attribute
// perfsim does not model is kept as text, never an error.
//
// It does not verify shapes: call VerifyModule for that. It does resolve every operand and
// called-computation name and rejects unknown opcodes, wrong operand counts, duplicate names
// and malformed text with InvalidArgument errors of the form
//   "<filename>:<line>:<col>: expected <what>; got <what>"
// (without "<filename>:" when filename is empty). Never crashes, never hangs: nesting depth and
// sizes are bounded.
#ifndef PERFSIM_SIM_IR_HLO_PARSER_H_
#define PERFSIM_SIM_IR_HLO_PARSER_H_

#include <memory>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "sim/ir/instruction.h"

namespace perfsim {

absl::StatusOr<std::unique_ptr<Module>> ParseHloModule(absl::string_view text,
                                                       absl::string_view filename = "");

// Parses a shape such as "f32[8,128]{1,0:T(8,128)}" or "(s32[], bf16[2])".
absl::StatusOr<Shape> ParseShape(absl::string_view text);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_HLO_PARSER_H_
