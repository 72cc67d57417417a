// Residuals saved for the backward are the forward values they stand for (known_bugs.md #17;
// checks.h, lowering.h). Two rules:
//   1. Every operand a backward-stage instruction takes from outside the backward is a
//      parameter, a constant, or a value the forward saved (LoweredStep::saved). A backward
//      that reaches into some other forward tensor (the shard-local pre-all-to-all expert
//      outputs instead of the ones the combine received) reads a value nobody declared it
//      stands for.
//   2. Every residual role (NamedBuilder::SaveForBackward / UseResidual) is read, at each of its
//      recorded uses, as the very instruction the forward op consumed: identity of the SSA
//      value, not only equal shapes, so the silent case where the two shapes coincide fails too.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/checks.h"

namespace perfsim {
namespace {

std::string Describe(const Instruction& i) {
  const std::string stage = StageNameOf(i);
  return absl::StrCat(i.name(), " ", i.shape().ToString(false),
                      stage.empty() ? "" : absl::StrCat(" (moe/", stage, ")"));
}

// Instructions whose value depends on no input: constants, iotas, partition ids and what is
// computed from them alone. A backward may rebuild or share them freely.
absl::flat_hash_map<const Instruction*, bool> InputFree(const Computation& computation) {
  absl::flat_hash_map<const Instruction*, bool> free;
  for (const auto& instruction : computation.instructions()) {  // operands come first
    bool value = false;
    switch (instruction->opcode()) {
      case Opcode::kConstant:
      case Opcode::kIota:
      case Opcode::kPartitionId:
      case Opcode::kReplicaId: value = true; break;
      case Opcode::kParameter:
      case Opcode::kCustomCall: value = false; break;
      default: {
        value = instruction->operand_count() > 0;
        for (const Instruction* operand : instruction->operands()) {
          auto it = free.find(operand);
          value = value && it != free.end() && it->second;
        }
      }
    }
    free[instruction.get()] = value;
  }
  return free;
}

absl::Status CheckReads(const LoweredStep& step) {
  const Computation& entry = *step.module->entry();
  const absl::flat_hash_map<const Instruction*, bool> input_free = InputFree(entry);
  for (const auto& instruction : entry.instructions()) {
    if (!IsBackwardInstruction(*instruction)) continue;
    const std::string stage = StageNameOf(*instruction);
    for (const Instruction* operand : instruction->operands()) {
      if (operand->opcode() == Opcode::kParameter || IsBackwardInstruction(*operand)) {
        continue;
      }
      if (step.saved.contains(operand)) continue;
      if (auto it = input_free.find(operand); it != input_free.end() && it->second) continue;
      // Name the saved residuals of the same shape: the value this read most likely stands for.
      std::string candidates;
      for (const auto& [saved, key] : step.saved) {
        if (saved->shape() == operand->shape()) {
          absl::StrAppend(&candidates, candidates.empty() ? "" : ", ", key, " = ", saved->name());
        }
      }
      return absl::FailedPreconditionError(absl::StrCat(
          instruction->name(), " (moe/", stage, "): expected its operands from the forward to be "
          "residuals the forward saved; got ", Describe(*operand),
          ", which stands for no saved forward value",
          candidates.empty() ? "" : absl::StrCat(" (saved residuals of that shape: ", candidates,
                                                 ")"),
          " (known_bugs.md #17: a backward fed a tensor other than the forward value it "
          "differentiates)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRoles(const LoweredStep& step) {
  for (const Residual& r : step.residuals) {
    for (const ResidualUse& use : r.uses) {
      const Instruction* got = use.consumer->operand(use.operand);
      if (got == r.value) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          "residual ", r.role, " (", r.stands_for, "): ", use.consumer->name(), " (moe/",
          StageNameOf(*use.consumer), ") operand ", use.operand, " reads ", Describe(*got),
          "; expected the forward value ", Describe(*r.value),
          got->shape() == r.value->shape() ? " (same shape: the silent form)" : "",
          " (known_bugs.md #17: the backward must read the very tensor its forward consumed)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckResiduals(const LoweredStep& step) {
  if (absl::Status s = CheckRoles(step); !s.ok()) return s;
  return CheckReads(step);
}

}  // namespace perfsim
