// Dimension names, grouped-matmul operands, kernel tilings by role and router precision
// (checks.h). The receive-buffer and group-sum checks live in checks_buffers.cc, the residual
// check in checks_residuals.cc.
#include "sim/lowering/checks.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/annotations.h"
#include "sim/moe/step_graph.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

const std::string* NamesOf(const LoweredStep& step, const Instruction* instruction) {
  auto it = step.dim_names.find(instruction);
  return it == step.dim_names.end() ? nullptr : &it->second;
}

absl::Status Mismatch(const Instruction& instruction, absl::string_view what, int64_t lhs_dim,
                      char lhs_name, int64_t rhs_dim, char rhs_name, absl::string_view hint) {
  const Instruction& lhs = *instruction.operand(0);
  const Instruction& rhs = *instruction.operand(1);
  return absl::FailedPreconditionError(absl::StrCat(
      instruction.name(), ": expected ", what, " dimensions with the same logical name; got lhs ",
      lhs.name(), " dimension ", lhs_dim, " (", std::string(1, lhs_name), ", size ",
      lhs.shape().dimensions(lhs_dim), ") vs rhs ", rhs.name(), " dimension ", rhs_dim, " (",
      std::string(1, rhs_name), ", size ", rhs.shape().dimensions(rhs_dim), ")", hint));
}

constexpr absl::string_view kTransposedHint =
    ": a weight read in the wrong layout (known_bugs.md #1)";
constexpr absl::string_view kGroupedHint =
    ": a grouped weight read as [G, N, K] instead of [G, K, N] (known_bugs.md #2; when the two "
    "sizes are equal only the names or the numbers show it)";

absl::Status CheckPairs(const Instruction& instruction, absl::string_view what,
                        const std::string& lhs, const std::string& rhs,
                        const std::vector<int64_t>& lhs_dims,
                        const std::vector<int64_t>& rhs_dims,
                        absl::string_view hint = kTransposedHint) {
  for (size_t i = 0; i < lhs_dims.size() && i < rhs_dims.size(); ++i) {
    if (lhs_dims[i] >= static_cast<int64_t>(lhs.size()) ||
        rhs_dims[i] >= static_cast<int64_t>(rhs.size())) {
      continue;  // a rank mismatch: CheckGroupedOperands or shape inference reports it
    }
    const char a = lhs[lhs_dims[i]], b = rhs[rhs_dims[i]];
    if (a == 'X' || b == 'X') continue;
    if (a != b) {
      return Mismatch(instruction, what, lhs_dims[i], a, rhs_dims[i], b, hint);
    }
  }
  return absl::OkStatus();
}

bool IsKernel(const Instruction& instruction, absl::string_view target) {
  return instruction.opcode() == Opcode::kCustomCall &&
         instruction.attributes().custom_call_target == target;
}

bool TransposedRhs(const Instruction& instruction) {
  const std::optional<std::string>& config = instruction.attributes().backend_config;
  return config.has_value() && config->find("\"transpose_rhs\":true") != std::string::npos;
}

absl::Status CheckNamesOf(const LoweredStep& step, const Instruction& instruction) {
  if (instruction.operand_count() < 2) return absl::OkStatus();
  const std::string* lhs = NamesOf(step, instruction.operand(0));
  const std::string* rhs = NamesOf(step, instruction.operand(1));
  if (lhs == nullptr || rhs == nullptr) return absl::OkStatus();
  const InstructionAttributes& a = instruction.attributes();
  switch (instruction.opcode()) {
    case Opcode::kDot: {
      const DotDimensionNumbers& d = *a.dot_dimension_numbers;
      if (absl::Status s = CheckPairs(instruction, "contracting", *lhs, *rhs,
                                      d.lhs_contracting_dimensions, d.rhs_contracting_dimensions);
          !s.ok()) {
        return s;
      }
      return CheckPairs(instruction, "batch", *lhs, *rhs, d.lhs_batch_dimensions,
                        d.rhs_batch_dimensions);
    }
    case Opcode::kRaggedDot: {
      const RaggedDotDimensionNumbers& d = *a.ragged_dot_dimension_numbers;
      for (int64_t g : d.rhs_group_dimensions) {
        if (g < static_cast<int64_t>(rhs->size()) && (*rhs)[g] != 'E') {
          return absl::FailedPreconditionError(absl::StrCat(
              instruction.name(), ": expected the rhs group dimension ", g,
              " to be the experts (E); got ", std::string(1, (*rhs)[g]),
              " (known_bugs.md #2: grouped weights must be [G, K, N])"));
        }
      }
      return CheckPairs(instruction, "contracting", *lhs, *rhs, d.dot.lhs_contracting_dimensions,
                        d.dot.rhs_contracting_dimensions,
                        d.rhs_group_dimensions.empty() ? kTransposedHint : kGroupedHint);
    }
    case Opcode::kCustomCall:
      if (IsKernel(instruction, kGmmTarget)) {
        return CheckPairs(instruction, "contracting", *lhs, *rhs, {1},
                          {TransposedRhs(instruction) ? 2 : 1}, kGroupedHint);
      }
      if (IsKernel(instruction, kTgmmTarget)) {
        // lhs [k, m] and rhs [m, n] contract the rows m.
        return CheckPairs(instruction, "contracting", *lhs, *rhs, {1}, {0});
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
}

// Structure alone, names or not (a mutated or user module has none): a grouped rhs is
// [G, k, n] with the group first.
absl::Status CheckGroupedOperandsOf(const Instruction& instruction) {
  auto refuse = [&](absl::string_view expected, absl::string_view got) {
    return absl::FailedPreconditionError(absl::StrCat(
        instruction.name(), ": expected ", expected, "; got ", got, " (known_bugs.md #2: ",
        "grouped weights must be one [G, K, N] tensor with the group first; a stacked rank-4 ",
        "rhs walks off the end of the weights)"));
  };
  if (instruction.opcode() == Opcode::kRaggedDot) {
    const RaggedDotDimensionNumbers& d = *instruction.attributes().ragged_dot_dimension_numbers;
    const Shape& rhs = instruction.operand(1)->shape();
    if (d.rhs_group_dimensions.empty()) return absl::OkStatus();  // ragged contraction
    const int64_t want_rank = 3 + static_cast<int64_t>(d.dot.rhs_batch_dimensions.size());
    if (rhs.rank() != want_rank) {
      return refuse(absl::StrCat("a rank-", want_rank, " grouped rhs"),
                    absl::StrCat("rank ", rhs.rank(), " ", rhs.ToString(false), " (",
                                 instruction.operand(1)->name(), ")"));
    }
    const int64_t first = static_cast<int64_t>(d.dot.rhs_batch_dimensions.size());
    if (d.rhs_group_dimensions != std::vector<int64_t>{first}) {
      return refuse(absl::StrCat("the rhs group dimension first (", first, ")"),
                    absl::StrCat("rhs_group_dims={", absl::StrJoin(d.rhs_group_dimensions, ","),
                                 "} on ", rhs.ToString(false)));
    }
    return absl::OkStatus();
  }
  if (IsKernel(instruction, kGmmTarget) && instruction.operand_count() >= 2) {
    const Shape& rhs = instruction.operand(1)->shape();
    if (rhs.rank() != 3) {
      return refuse("a rank-3 gmm rhs [G, k, n]",
                    absl::StrCat("rank ", rhs.rank(), " ", rhs.ToString(false), " (",
                                 instruction.operand(1)->name(), ")"));
    }
  }
  return absl::OkStatus();
}

// The (tm, tk, tn) of a kernel's backend_config, if it has three integers there.
std::optional<GmmTiling> ConfigTiling(const Instruction& instruction) {
  const std::optional<std::string>& config = instruction.attributes().backend_config;
  if (!config.has_value()) return std::nullopt;
  const size_t at = config->find("\"tiling\":[");
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = at + 10, end = config->find(']', begin);
  if (end == std::string::npos) return std::nullopt;
  std::vector<int64_t> values;
  for (absl::string_view part : absl::StrSplit(config->substr(begin, end - begin), ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v)) return std::nullopt;
    values.push_back(v);
  }
  if (values.size() != 3) return std::nullopt;
  return GmmTiling{values[0], values[1], values[2]};
}

std::string TilingText(const GmmTiling& t) {
  return absl::StrCat("(", t.tm, ", ", t.tk, ", ", t.tn, ")");
}

absl::Status CheckKernelTilingOf(const LoweredStep& step, const Instruction& instruction) {
  const bool gmm = IsKernel(instruction, kGmmTarget), tgmm = IsKernel(instruction, kTgmmTarget);
  if (!gmm && !tgmm) return absl::OkStatus();
  // The role (which knob's tiling the kernel runs) from its typed annotation; a kernel call
  // without one (user HLO) has no knob to compare with.
  const std::string role = instruction.annotation() != nullptr
                               ? KernelRoleOf(instruction.annotation()->kernel())
                               : std::string();
  if (role.empty() || instruction.operand_count() < 2) return absl::OkStatus();
  const GmmTiling* knob = TilingKnob(step.spec.knobs, role);
  PERFSIM_CHECK(knob != nullptr);  // KernelRoleOf names only the six knobs
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  if (lhs.rank() != 2 || rhs.rank() < 2) return absl::OkStatus();  // CheckGroupedOperands
  // gmm: lhs [m, k], rhs [G, k, n] ([G, n, k] transposed); tgmm: lhs [k, m], rhs [m, n].
  const int64_t m = gmm ? lhs.dimensions(0) : lhs.dimensions(1);
  const int64_t k = gmm ? lhs.dimensions(1) : lhs.dimensions(0);
  const int64_t n =
      gmm ? rhs.dimensions(TransposedRhs(instruction) ? 1 : 2) : rhs.dimensions(1);
  // The lowering's rule (megablox_calls.h GmmCallTiling): the row tile shrinks to the rows,
  // tk and tn run as configured (blocks are allocated at full tile size).
  const GmmTiling want{std::min(knob->tm, m), knob->tk, knob->tn};
  const std::optional<GmmTiling> got = ConfigTiling(instruction);
  if (!got.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        instruction.name(), " (", role, "): expected a backend_config tiling [tm,tk,tn]; got ",
        instruction.attributes().backend_config.value_or("none")));
  }
  if (got->tm == want.tm && got->tk == want.tk && got->tn == want.tn) return absl::OkStatus();
  const bool swapped = got->tm == want.tm && got->tk == want.tn && got->tn == want.tk;
  return absl::FailedPreconditionError(absl::StrCat(
      instruction.name(), " (", role, "): expected the tiling ", TilingText(want),
      " = the spec's ", role, " ", TilingText(*knob), " with tm on the rows m = ", m,
      ", tk on the contraction k = ", k, " and tn on the output n = ", n, "; got ",
      TilingText(*got),
      swapped ? ": tk and tn are swapped, so each tile lands on the other dimension and the "
                "VMEM footprint is not the planned one (known_bugs.md #4)"
              : " (known_bugs.md #4: tiles bound to the wrong roles)"));
}

absl::Status CheckRouterPrecisionOf(const Instruction& instruction) {
  if (StageOfAnnotation(instruction.annotation()) != Stage::kRouter) return absl::OkStatus();
  const Shape& shape = instruction.shape();
  if (!shape.IsArray() || !IsFloatingPoint(shape.element_type()) ||
      shape.element_type() == PrimitiveType::kF32) {
    return absl::OkStatus();
  }
  const bool normalises = instruction.opcode() == Opcode::kDivide;
  return absl::FailedPreconditionError(absl::StrCat(
      instruction.name(), " (moe/router): expected the router's math in f32; got ",
      shape.ToString(false), " ", OpcodeSpelling(instruction.opcode()),
      normalises ? ": a low-precision normalisation by a sum that can underflow" : "",
      " (known_bugs.md #28: router scores and weights in the activation dtype silently give NaN "
      "on tokens whose normalised weights underflow)"));
}

template <typename Fn>
absl::Status ForEachInstruction(const LoweredStep& step, Fn fn) {
  for (const auto& computation : step.module->computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (absl::Status s = fn(*instruction); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckDimensionNames(const LoweredStep& step) {
  return ForEachInstruction(step, [&](const Instruction& i) { return CheckNamesOf(step, i); });
}

absl::Status CheckGroupedOperands(const LoweredStep& step) {
  return ForEachInstruction(step, CheckGroupedOperandsOf);
}

absl::Status CheckKernelRoles(const LoweredStep& step) {
  return ForEachInstruction(step,
                            [&](const Instruction& i) { return CheckKernelTilingOf(step, i); });
}

absl::Status CheckRouterPrecision(const LoweredStep& step) {
  return ForEachInstruction(step, CheckRouterPrecisionOf);
}

bool IsBackwardInstruction(const Instruction& instruction) {
  return instruction.annotation() != nullptr &&
         instruction.annotation()->phase() == Annotation::PHASE_BACKWARD;
}

absl::Status CheckLoweredStep(const LoweredStep& step) {
  for (absl::Status (*check)(const LoweredStep&) :
       {CheckDimensionNames, CheckGroupedOperands, CheckKernelRoles, CheckRouterPrecision,
        CheckResiduals, CheckReceiveBuffers, CheckGroupSums}) {
    if (absl::Status s = check(step); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace perfsim
