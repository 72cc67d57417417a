// The module verifier. Structural checks come first so that shape inference can rely on
// them (operands resolved, parameters numbered, no cycles, no recursion); then every
// instruction's declared shape is compared with the inferred one, callees before callers so
// that an error is reported where it originates.
#include "sim/ir/verifier.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/ir/shape_inference.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

std::string LocationPrefix(const SourceLocation& location) {
  if (location.line <= 0) return "";
  return absl::StrCat(location.line, ":", location.column, ": ");
}

// "line:col: name: expected X; got Y" (no prefix when the instruction has no location).
absl::Status InstructionError(const Instruction& instruction, absl::string_view expected,
                              absl::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat(LocationPrefix(instruction.location()),
                                                 instruction.name(), ": expected ", expected,
                                                 "; got ", got));
}

absl::Status ComputationError(const Computation& computation, absl::string_view expected,
                              absl::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat(LocationPrefix(computation.location()),
                                                 "computation ", computation.name(), ": expected ",
                                                 expected, "; got ", got));
}

// Prefixes the instruction's location to a non-OK status, keeping its code.
absl::Status AtInstruction(const Instruction& instruction, const absl::Status& status) {
  if (status.ok()) return status;
  const std::string prefix = LocationPrefix(instruction.location());
  if (prefix.empty()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

absl::Status CheckParameters(const Computation& computation) {
  // Numbers are checked from the instructions themselves: Computation::parameters() keeps
  // only the first of duplicates and leaves out numbers beyond the instruction count.
  absl::flat_hash_map<int64_t, const Instruction*> by_number;
  int64_t count = 0;
  for (const auto& instruction : computation.instructions()) {
    if (instruction->opcode() != Opcode::kParameter) continue;
    ++count;
    const std::optional<int64_t>& number = instruction->attributes().parameter_number;
    if (!number.has_value()) return InstructionError(*instruction, "a parameter number", "none");
    auto [it, inserted] = by_number.emplace(*number, instruction.get());
    if (!inserted) {
      return InstructionError(
          *instruction,
          absl::StrCat("a parameter number used once in computation ", computation.name()),
          absl::StrCat("parameter(", *number, ") also used by ", it->second->name()));
    }
  }
  for (const auto& [number, instruction] : by_number) {
    if (number < 0 || number >= count) {
      return InstructionError(*instruction,
                              absl::StrCat("a parameter number in [0, ", count,
                                           ") (parameters numbered 0..n-1 without gaps)"),
                              absl::StrCat("parameter(", number, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInstructionLinks(const Module& module, const Computation& computation,
                                   const Instruction& instruction) {
  if (instruction.parent() != &computation) {
    return InstructionError(instruction,
                            absl::StrCat("to belong to computation ", computation.name()),
                            "another parent");
  }
  const int arity = OpcodeArity(instruction.opcode());
  if (arity != kVariadic && instruction.operand_count() != arity) {
    return InstructionError(
        instruction, absl::StrCat(arity, " operands for ", OpcodeSpelling(instruction.opcode())),
        absl::StrCat(instruction.operand_count()));
  }
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    const Instruction* operand = instruction.operand(i);
    if (operand == nullptr) {
      return InstructionError(instruction, absl::StrCat("operand ", i), "none");
    }
    if (operand->parent() != &computation) {
      return InstructionError(instruction,
                              absl::StrCat("operand ", i, " from computation ", computation.name()),
                              absl::StrCat(operand->name(), " from another computation"));
    }
  }
  for (const Instruction* predecessor : instruction.control_predecessors()) {
    if (predecessor == nullptr || predecessor->parent() != &computation) {
      return InstructionError(
          instruction, absl::StrCat("control predecessors from computation ", computation.name()),
          predecessor == nullptr ? "none" : predecessor->name());
    }
  }
  for (const Computation* callee : instruction.called_computations()) {
    if (callee == nullptr || callee->parent() != &module) {
      return InstructionError(instruction, "called computations of this module",
                              callee == nullptr ? "a null computation" : callee->name());
    }
    if (callee == &computation) {
      return InstructionError(instruction, "a call to another computation",
                              absl::StrCat("a call to its own computation ", computation.name()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckComputationStructure(const Module& module, const Computation& computation) {
  if (computation.parent() != &module) {
    return ComputationError(computation, absl::StrCat("to belong to module ", module.name()),
                            "another module");
  }
  if (computation.instructions().empty()) {
    return ComputationError(computation, "at least one instruction", "none");
  }
  const Instruction* root = computation.root();
  if (root == nullptr) return ComputationError(computation, "a root instruction", "none");
  if (root->parent() != &computation) {
    return ComputationError(computation, "a root from this computation", root->name());
  }
  absl::flat_hash_map<std::string, const Instruction*> names;
  for (const auto& instruction : computation.instructions()) {
    auto [it, inserted] = names.emplace(instruction->name(), instruction.get());
    if (!inserted) {
      return InstructionError(*instruction,
                              absl::StrCat("a name unique in computation ", computation.name()),
                              "a second instruction with this name");
    }
  }
  PERFSIM_RETURN_IF_ERROR(CheckParameters(computation));
  for (const auto& instruction : computation.instructions()) {
    PERFSIM_RETURN_IF_ERROR(CheckInstructionLinks(module, computation, *instruction));
  }
  return absl::OkStatus();
}

// Computation::PostOrder names an instruction on the cycle first in its message; add that
// instruction's location.
absl::Status WithCycleLocation(const Computation& computation, const absl::Status& status) {
  const absl::string_view message = status.message();
  const size_t colon = message.find(": ");
  if (colon == absl::string_view::npos) return status;
  const Instruction* instruction = computation.FindInstruction(message.substr(0, colon));
  return instruction == nullptr ? status : AtInstruction(*instruction, status);
}

absl::Status CheckShape(const Instruction& instruction) {
  PERFSIM_RETURN_IF_ERROR(
      AtInstruction(instruction, Annotate(ValidateShape(instruction.shape()), instruction.name())));
  absl::StatusOr<Shape> inferred = InferShape(instruction);
  if (!inferred.ok()) return AtInstruction(instruction, inferred.status());
  if (!SameShapeIgnoringLayout(*inferred, instruction.shape())) {
    return InstructionError(instruction, inferred->ToString(/*print_layout=*/false),
                            instruction.shape().ToString(/*print_layout=*/false));
  }
  return absl::OkStatus();
}

// The longest call chain below each computation, found in one pass over the computations
// ordered callees first (no recursion: the chain's length comes from the input).
struct CallChains {
  struct Link {
    int64_t depth = 1;  // computations on the longest chain starting here
    const Computation* deepest_callee = nullptr;
    // Instructions a walk from here visits when every call is expanded (saturating).
    int64_t expanded_instructions = 0;
  };
  absl::flat_hash_map<const Computation*, Link> links;
  const Computation* top = nullptr;  // where the longest chain starts
  int64_t depth = 0;
  int64_t expanded_instructions = 0;  // the most below any computation
};

absl::StatusOr<CallChains> LongestCallChains(const Module& module) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Computation*> order, module.ComputationPostOrder());
  CallChains chains;
  for (const Computation* computation : order) {
    CallChains::Link link;
    link.expanded_instructions = computation->instruction_count();
    for (const auto& instruction : computation->instructions()) {
      for (const Computation* callee : instruction->called_computations()) {
        auto it = chains.links.find(callee);
        if (it == chains.links.end()) continue;
        if (it->second.depth + 1 > link.depth) {
          link.depth = it->second.depth + 1;
          link.deepest_callee = callee;
        }
        if (!TryAdd(link.expanded_instructions, it->second.expanded_instructions,
                    &link.expanded_instructions)) {
          link.expanded_instructions = kInt64Max;
        }
      }
    }
    chains.links[computation] = link;
    chains.expanded_instructions =
        std::max(chains.expanded_instructions, link.expanded_instructions);
    if (link.depth > chains.depth) {
      chains.depth = link.depth;
      chains.top = computation;
    }
  }
  return chains;
}

}  // namespace

absl::StatusOr<int64_t> CallDepth(const Module& module) {
  PERFSIM_ASSIGN_OR_RETURN(CallChains chains, LongestCallChains(module));
  return chains.depth;
}

absl::Status CheckCallDepth(const Module& module) {
  PERFSIM_ASSIGN_OR_RETURN(CallChains chains, LongestCallChains(module));
  if (chains.depth <= kMaxCallDepth) return absl::OkStatus();
  std::vector<std::string> chain;
  for (const Computation* c = chains.top; c != nullptr && chain.size() < 4;
       c = chains.links.at(c).deepest_callee) {
    chain.push_back(c->name());
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "module ", module.name(), ": expected calls nested at most ", kMaxCallDepth,
      " deep; got ", chains.depth, " (", absl::StrJoin(chain, " > "), " > ...)"));
}

absl::Status CheckCallExpansion(const Module& module) {
  PERFSIM_ASSIGN_OR_RETURN(CallChains chains, LongestCallChains(module));
  if (chains.expanded_instructions <= kMaxExpandedInstructions) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "module ", module.name(), ": expected at most ", kMaxExpandedInstructions,
      " instructions with every call expanded; got ",
      chains.expanded_instructions == kInt64Max ? std::string("more than 2^63")
                                                : absl::StrCat(chains.expanded_instructions),
      " (computations called from many sites, nested)"));
}

absl::Status VerifyModule(const Module& module) {
  if (module.entry() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("module ", module.name(), ": expected an entry computation; got none"));
  }
  absl::flat_hash_map<std::string, const Computation*> names;
  bool entry_found = false;
  for (const auto& computation : module.computations()) {
    entry_found = entry_found || computation.get() == module.entry();
    auto [it, inserted] = names.emplace(computation->name(), computation.get());
    if (!inserted) {
      return ComputationError(*computation, absl::StrCat("a name unique in module ", module.name()),
                              "a second computation with this name");
    }
  }
  if (!entry_found) {
    return absl::InvalidArgumentError(absl::StrCat(
        "module ", module.name(), ": expected an entry computation owned by the module; got ",
        module.entry()->name()));
  }
  for (const auto& computation : module.computations()) {
    PERFSIM_RETURN_IF_ERROR(CheckComputationStructure(module, *computation));
  }
  std::vector<std::vector<Instruction*>> instruction_orders;
  absl::flat_hash_map<const Computation*, size_t> order_index;
  for (const auto& computation : module.computations()) {
    absl::StatusOr<std::vector<Instruction*>> order = computation->PostOrder();
    if (!order.ok()) return WithCycleLocation(*computation, order.status());
    order_index[computation.get()] = instruction_orders.size();
    instruction_orders.push_back(*std::move(order));
  }
  // No bound on call depth or expansion here: XLA accepts any (a chain of 100,000 nested
  // calls parses), and cost walks callees first with an explicit stack. The interpreter,
  // which recurses per call and runs every call site, checks both itself (RunModule).
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Computation*> computation_order,
                           module.ComputationPostOrder());
  for (const Computation* computation : computation_order) {
    for (const Instruction* instruction : instruction_orders[order_index.at(computation)]) {
      PERFSIM_RETURN_IF_ERROR(CheckShape(*instruction));
    }
  }
  return absl::OkStatus();
}

}  // namespace perfsim
