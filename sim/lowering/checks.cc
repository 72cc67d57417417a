#include "sim/lowering/checks.h"

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/custom_call_targets.h"

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

absl::Status CheckPairs(const Instruction& instruction, absl::string_view what,
                        const std::string& lhs, const std::string& rhs,
                        const std::vector<int64_t>& lhs_dims,
                        const std::vector<int64_t>& rhs_dims) {
  for (size_t i = 0; i < lhs_dims.size() && i < rhs_dims.size(); ++i) {
    const char a = lhs[lhs_dims[i]], b = rhs[rhs_dims[i]];
    if (a == 'X' || b == 'X') continue;
    if (a != b) {
      return Mismatch(instruction, what, lhs_dims[i], a, rhs_dims[i], b, kTransposedHint);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInstruction(const LoweredStep& step, const Instruction& instruction) {
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
        if ((*rhs)[g] != 'E') {
          return absl::FailedPreconditionError(absl::StrCat(
              instruction.name(), ": expected the rhs group dimension ", g,
              " to be the experts (E); got ", std::string(1, (*rhs)[g]),
              " (known_bugs.md #2: grouped weights must be [G, K, N])"));
        }
      }
      return CheckPairs(instruction, "contracting", *lhs, *rhs, d.dot.lhs_contracting_dimensions,
                        d.dot.rhs_contracting_dimensions);
    }
    case Opcode::kCustomCall: {
      const std::string& target = a.custom_call_target;
      if (target == kGmmTarget) {
        if (rhs->size() != 3) {
          return absl::FailedPreconditionError(absl::StrCat(
              instruction.name(), ": expected a rank-3 grouped rhs [G, k, n]; got rank ",
              rhs->size(), " (known_bugs.md #2)"));
        }
        const bool transposed = a.backend_config.has_value() &&
                                a.backend_config->find("\"transpose_rhs\":true") != std::string::npos;
        return CheckPairs(instruction, "contracting", *lhs, *rhs, {1}, {transposed ? 2 : 1});
      }
      if (target == kTgmmTarget) {
        // lhs [k, m] and rhs [m, n] contract the rows m.
        return CheckPairs(instruction, "contracting", *lhs, *rhs, {1}, {0});
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::Status CheckDimensionNames(const LoweredStep& step) {
  for (const auto& computation : step.module->computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (absl::Status s = CheckInstruction(step, *instruction); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// ---- Receive buffers of ragged-all-to-alls (known_bugs.md #10) ----

namespace {

constexpr absl::string_view kReceiveKey = "perfsim_receive";
constexpr absl::string_view kAlignKey = "perfsim_align";

absl::string_view ReceivedRowsName(ReceivedRows received) {
  switch (received) {
    case ReceivedRows::kExpertRows: return "expert_rows";
    case ReceivedRows::kTokenRows: return "token_rows";
  }
  return "?";
}

// The value of `key="value"` in frontend_attributes text `{k1="v1",k2="v2"}`; empty if absent.
std::string FrontendAttribute(absl::string_view text, absl::string_view key) {
  for (size_t at = text.find(key); at != absl::string_view::npos; at = text.find(key, at + 1)) {
    const bool starts = at > 0 && (text[at - 1] == '{' || text[at - 1] == ',');
    const size_t quote = at + key.size();
    if (!starts || text.substr(quote, 2) != "=\"") continue;
    const size_t end = text.find('"', quote + 2);
    if (end == absl::string_view::npos) return "";
    return std::string(text.substr(quote + 2, end - quote - 2));
  }
  return "";
}

int64_t ReplicaGroupSize(const Instruction& instruction, int64_t devices) {
  const std::optional<ReplicaGroups>& groups = instruction.attributes().replica_groups;
  if (!groups.has_value()) return devices;
  if (groups->iota.has_value()) return groups->iota->group_size;
  return groups->groups.empty() ? devices : static_cast<int64_t>(groups->groups[0].size());
}

// The worst case of kExpertRows / kTokenRows (checks.h), with the formula and its numbers.
struct WorstCase {
  int64_t rows = 0;
  std::string formula;
};

WorstCase WorstReceivedRows(const StepSpec& spec, ReceivedRows received, int64_t group,
                            int64_t align) {
  const int64_t t = spec.tokens_per_device(), k = spec.model.experts_per_token(),
                e = spec.model.num_experts(), e_l = e / std::max<int64_t>(group, 1);
  const int64_t pad = align > 1 ? align - 1 : 0;
  WorstCase w;
  switch (received) {
    case ReceivedRows::kExpertRows:
      w.rows = group * t * std::min(k, e_l) + group * e_l * pad;
      w.formula = absl::StrCat("n·T_l·min(K, E_l) = ", group, "·", t, "·min(", k, ", ", e_l, ")");
      if (pad > 0) absl::StrAppend(&w.formula, " + n·E_l·(A−1) = ", group, "·", e_l, "·", pad);
      break;
    case ReceivedRows::kTokenRows:
      w.rows = t * k + e * pad;
      w.formula = absl::StrCat("T_l·K = ", t, "·", k);
      if (pad > 0) absl::StrAppend(&w.formula, " + E·(A−1) = ", e, "·", pad);
      break;
  }
  return w;
}

}  // namespace

void DeclareReceivedRows(Instruction* ragged_all_to_all, ReceivedRows received, int64_t align) {
  std::string text = absl::StrCat("{", kReceiveKey, "=\"", ReceivedRowsName(received), "\"");
  if (align > 1) absl::StrAppend(&text, ",", kAlignKey, "=\"", align, "\"");
  ragged_all_to_all->mutable_attributes()->frontend_attributes = text + "}";
}

absl::Status CheckReceiveBuffers(const LoweredStep& step) {
  for (const auto& computation : step.module->computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kRaggedAllToAll) continue;
      const std::string& attributes = instruction->attributes().frontend_attributes;
      const std::string role = FrontendAttribute(attributes, kReceiveKey);
      if (role.empty()) continue;
      ReceivedRows received = ReceivedRows::kExpertRows;
      if (role == ReceivedRowsName(ReceivedRows::kExpertRows)) {
        received = ReceivedRows::kExpertRows;
      } else if (role == ReceivedRowsName(ReceivedRows::kTokenRows)) {
        received = ReceivedRows::kTokenRows;
      } else {
        return absl::FailedPreconditionError(
            absl::StrCat(instruction->name(), ": expected ", kReceiveKey,
                         " \"expert_rows\" or \"token_rows\"; got \"", role, "\""));
      }
      const std::string align_text = FrontendAttribute(attributes, kAlignKey);
      int64_t align = 0;
      if (!align_text.empty() && !absl::SimpleAtoi(align_text, &align)) {
        return absl::FailedPreconditionError(absl::StrCat(
            instruction->name(), ": expected an integer ", kAlignKey, "; got \"", align_text,
            "\""));
      }
      const int64_t group = ReplicaGroupSize(*instruction, step.spec.num_devices());
      const WorstCase worst = WorstReceivedRows(step.spec, received, group, align);
      const Instruction& buffer = *instruction->operand(1);
      const int64_t rows =
          buffer.shape().IsArray() && buffer.shape().rank() > 0 ? buffer.shape().dimensions(0) : 0;
      if (rows < worst.rows) {
        return absl::FailedPreconditionError(absl::StrCat(
            instruction->name(), ": expected its receive buffer ", buffer.name(), " ",
            buffer.shape().ToString(false), " to hold the ", worst.rows,
            " rows the worst routing sends it (", role, ": ", worst.formula, "); got ", rows,
            " rows (known_bugs.md #10: an undersized receive buffer)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLoweredStep(const LoweredStep& step) {
  if (absl::Status s = CheckDimensionNames(step); !s.ok()) return s;
  return CheckReceiveBuffers(step);
}

}  // namespace perfsim
