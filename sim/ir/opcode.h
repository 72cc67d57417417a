// Opcodes of the op IR, generated from the one table in opcode.def.
//
//   Opcode op = Opcode::kRaggedDot;
//   OpcodeSpelling(op)  == "ragged-dot"
//   OpcodeArity(op)     == 3
//   ParseOpcode("ragged-dot") == Opcode::kRaggedDot
#ifndef PERFSIM_SIM_IR_OPCODE_H_
#define PERFSIM_SIM_IR_OPCODE_H_

#include <cstdint>
#include <optional>
#include "absl/strings/string_view.h"

namespace perfsim {

// Arity of an opcode that takes any number of operands.
inline constexpr int kVariadic = -1;

enum class Opcode : uint8_t {
#define PERFSIM_OPCODE(name, spelling, arity, infer) name,
#include "sim/ir/opcode.def"
#undef PERFSIM_OPCODE
};

inline constexpr int kOpcodeCount = 0
#define PERFSIM_OPCODE(name, spelling, arity, infer) +1
#include "sim/ir/opcode.def"
#undef PERFSIM_OPCODE
    ;

// HLO text spelling, e.g. "get-tuple-element".
absl::string_view OpcodeSpelling(Opcode opcode);

// Exact operand count, or kVariadic.
int OpcodeArity(Opcode opcode);

// The opcode spelled `spelling`, or nullopt. Accepts XLA's alternative spellings too
// ("optimization-barrier" for opt-barrier).
std::optional<Opcode> ParseOpcode(absl::string_view spelling);

// Elementwise ops with one operand (abs, exponential, convert, ...) and two (add, compare, ...).
bool IsElementwiseUnary(Opcode opcode);
bool IsElementwiseBinary(Opcode opcode);

// Ops that move data between devices: all-gather, all-reduce, all-to-all, ragged-all-to-all,
// reduce-scatter, collective-permute, collective-broadcast and their -start forms.
bool IsCollective(Opcode opcode);

// The `*-start` ops whose result is an async handle completed by a matching `*-done`.
bool IsAsyncStart(Opcode opcode);
bool IsAsyncDone(Opcode opcode);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_OPCODE_H_
