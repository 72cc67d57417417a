// Platform evidence in a module (see the header for what is looked for and why).
#include "sim/ir/lowering_platform.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/opcode.h"

namespace perfsim {
namespace {

// Follows value-preserving or value-spreading ops (broadcast, reshape, convert, copy, bitcast)
// back to what produced the values. Bounded: the chains JAX emits are a few ops long.
const Instruction* Producer(const Instruction* instruction) {
  for (int step = 0; step < 8 && instruction->operand_count() == 1; ++step) {
    const Opcode opcode = instruction->opcode();
    if (opcode != Opcode::kBroadcast && opcode != Opcode::kReshape &&
        opcode != Opcode::kConvert && opcode != Opcode::kCopy && opcode != Opcode::kBitcast) {
      break;
    }
    instruction = instruction->operand(0);
  }
  return instruction;
}

bool ComparesAgainstIota(const Instruction& compare) {
  if (compare.opcode() != Opcode::kCompare) return false;
  for (const Instruction* operand : compare.operands()) {
    if (Producer(operand)->opcode() == Opcode::kIota) return true;
  }
  return false;
}

// select(and(compare(.., iota), compare(.., iota)), values, zeros) of rank >= 3: the
// [groups, rows, ...] operand of JAX's reference ragged_dot (jax/_src/lax/lax.py
// _ragged_dot_general_impl masks each group's rows [start, end) with two iota compares).
bool IsGroupMaskedOperand(const Instruction& operand) {
  const Instruction& select = *Producer(&operand);
  if (select.opcode() != Opcode::kSelect || select.shape().rank() < 3) return false;
  const Instruction& mask = *select.operand(0);
  if (mask.opcode() != Opcode::kAnd) return false;
  return ComparesAgainstIota(*mask.operand(0)) && ComparesAgainstIota(*mask.operand(1));
}

std::optional<PlatformEvidence> EvidenceOf(const Instruction& instruction) {
  const InstructionAttributes& attributes = instruction.attributes();
  if (instruction.opcode() == Opcode::kDot) {
    for (const Instruction* operand : instruction.operands()) {
      if (IsGroupMaskedOperand(*operand)) {
        return PlatformEvidence{
            LoweringPlatform::kCpu, instruction.name(),
            absl::StrCat("a dense dot over the group-masked operand ",
                         Producer(operand)->shape().ToString(false),
                         ": JAX's CPU decomposition of ragged_dot, which TPU and GPU lowerings "
                         "keep as one ragged-dot")};
      }
    }
  }
  if (instruction.opcode() == Opcode::kCustomCall) {
    const std::string& target = attributes.custom_call_target;
    struct Prefix {
      const char* text;
      LoweringPlatform platform;
    };
    static constexpr Prefix kPrefixes[] = {
        {"__onednn$", LoweringPlatform::kCpu}, {"__xla_cpu_", LoweringPlatform::kCpu},
        {"xla.cpu.", LoweringPlatform::kCpu},  {"__cublas$", LoweringPlatform::kGpu},
        {"__cudnn$", LoweringPlatform::kGpu},  {"__triton", LoweringPlatform::kGpu},
        {"__gpu$", LoweringPlatform::kGpu},    {"tpu_custom_call", LoweringPlatform::kTpu},
    };
    for (const Prefix& prefix : kPrefixes) {
      if (absl::StartsWith(target, prefix.text)) {
        return PlatformEvidence{prefix.platform, instruction.name(),
                                absl::StrCat("custom-call target \"", target, "\"")};
      }
    }
  }
  if (attributes.backend_config.has_value()) {
    const std::string& config = *attributes.backend_config;
    if (absl::StrContains(config, "\"outer_dimension_partitions\"")) {
      return PlatformEvidence{LoweringPlatform::kCpu, instruction.name(),
                              "XLA:CPU's backend_config (outer_dimension_partitions)"};
    }
    for (const char* key : {"\"operation_queue_id\"", "\"fusion_backend_config\""}) {
      if (absl::StrContains(config, key)) {
        return PlatformEvidence{LoweringPlatform::kGpu, instruction.name(),
                                absl::StrCat("XLA:GPU's backend_config (", key, ")")};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

absl::string_view LoweringPlatformName(LoweringPlatform platform) {
  switch (platform) {
    case LoweringPlatform::kCpu:
      return "CPU";
    case LoweringPlatform::kGpu:
      return "GPU";
    case LoweringPlatform::kTpu:
      return "TPU";
  }
  return "?";
}

std::optional<PlatformEvidence> FindLoweringPlatform(const Module& module) {
  for (const std::unique_ptr<Computation>& computation : module.computations()) {
    for (const std::unique_ptr<Instruction>& instruction : computation->instructions()) {
      std::optional<PlatformEvidence> evidence = EvidenceOf(*instruction);
      if (evidence.has_value()) return evidence;
    }
  }
  return std::nullopt;
}

absl::Status CheckNotStableHlo(absl::string_view text, absl::string_view filename) {
  // Skip whitespace and `//` comment lines, counting lines for the location.
  int64_t line = 1;
  size_t i = 0;
  size_t line_start = 0;
  while (i < text.size()) {
    if (text[i] == '\n') {
      ++line;
      line_start = ++i;
    } else if (absl::ascii_isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text.substr(i, 2) == "//") {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      break;
    }
  }
  const absl::string_view rest = text.substr(i);
  size_t word_end = 0;
  while (word_end < rest.size() && !absl::ascii_isspace(static_cast<unsigned char>(rest[word_end])) &&
         rest[word_end] != '{' && rest[word_end] != '(') {
    ++word_end;
  }
  const absl::string_view word = rest.substr(0, word_end);
  const absl::string_view after = absl::StripLeadingAsciiWhitespace(rest.substr(word_end));
  const bool mlir = (word == "module" && (absl::StartsWith(after, "@") ||
                                          absl::StartsWith(after, "attributes") ||
                                          (absl::StartsWith(after, "{") &&
                                           absl::StrContains(rest, "func.func")))) ||
                    word == "func.func" || absl::StartsWith(word, "#loc");
  if (!mlir) return absl::OkStatus();
  const absl::string_view first_line = rest.substr(0, std::min(rest.find('\n'), size_t{60}));
  return absl::InvalidArgumentError(absl::StrCat(
      filename, ":", line, ":", i - line_start + 1,
      ": expected HLO text (a module starting with 'HloModule'); got StableHLO (MLIR) text '",
      first_line,
      "'. perfsim reads XLA's HLO text: from JAX, print it with "
      "jax.jit(f).lower(*args).as_text(dialect=\"hlo\") or "
      ".compiler_ir(\"hlo\").as_hlo_text(); for the program a TPU runs, lower with "
      "jax.jit(f).trace(*args).lower(lowering_platforms=(\"tpu\",)); or take a module from an "
      "XLA dump (XLA_FLAGS=--xla_dump_to=DIR)"));
}

}  // namespace perfsim
