// Receive buffers of ragged-all-to-alls (known_bugs.md #10) and group sums of grouped matmuls,
// both bounded symbolically from the spec through what the lowering declares (checks.h).
#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/checks.h"

namespace perfsim {
namespace {

constexpr absl::string_view kReceiveKey = "perfsim_receive";
constexpr absl::string_view kGroupsKey = "perfsim_groups";
constexpr absl::string_view kAlignKey = "perfsim_align";
constexpr absl::string_view kTruncatedKey = "perfsim_truncated";

absl::string_view ReceivedRowsName(ReceivedRows received) {
  switch (received) {
    case ReceivedRows::kExpertRows: return "expert_rows";
    case ReceivedRows::kTokenRows: return "token_rows";
  }
  return "?";
}

absl::string_view GroupRowsName(GroupRows rows) {
  switch (rows) {
    case GroupRows::kAssignments: return "assignments";
    case GroupRows::kAlignedAssignments: return "aligned_assignments";
    case GroupRows::kGatheredAssignments: return "gathered_assignments";
    case GroupRows::kReceivedRows: return "received_rows";
  }
  return "?";
}

int64_t ReplicaGroupSize(const Instruction& instruction, int64_t devices) {
  const std::optional<ReplicaGroups>& groups = instruction.attributes().replica_groups;
  if (!groups.has_value()) return devices;
  if (groups->iota.has_value()) return groups->iota->group_size;
  return groups->groups.empty() ? devices : static_cast<int64_t>(groups->groups[0].size());
}

// A worst case with the formula and its numbers, for the messages.
struct WorstCase {
  int64_t rows = 0;
  std::string formula;
};

// n·T_l·min(K, E_l) (+ n·E_l·(A−1)): what n shards can send one shard's E_l = E/n experts.
WorstCase ExpertRowsWorstCase(const StepSpec& spec, int64_t group, int64_t align) {
  const int64_t t = spec.tokens_per_device(), k = spec.model.experts_per_token(),
                e_l = spec.model.num_experts() / std::max<int64_t>(group, 1);
  const int64_t pad = align > 1 ? align - 1 : 0;
  WorstCase w{.rows = group * t * std::min(k, e_l) + group * e_l * pad};
  w.formula = absl::StrCat("n·T_l·min(K, E_l) = ", group, "·", t, "·min(", k, ", ", e_l, ")");
  if (pad > 0) absl::StrAppend(&w.formula, " + n·E_l·(A−1) = ", group, "·", e_l, "·", pad);
  return w;
}

WorstCase WorstReceivedRows(const StepSpec& spec, ReceivedRows received, int64_t group,
                            int64_t align) {
  const int64_t t = spec.tokens_per_device(), k = spec.model.experts_per_token(),
                e = spec.model.num_experts();
  const int64_t pad = align > 1 ? align - 1 : 0;
  switch (received) {
    case ReceivedRows::kExpertRows: return ExpertRowsWorstCase(spec, group, align);
    case ReceivedRows::kTokenRows: {
      WorstCase w{.rows = t * k + e * pad, .formula = absl::StrCat("T_l·K = ", t, "·", k)};
      if (pad > 0) absl::StrAppend(&w.formula, " + E·(A−1) = ", e, "·", pad);
      return w;
    }
  }
  return {};
}

WorstCase WorstGroupSum(const StepSpec& spec, GroupRows rows, int64_t align) {
  const int64_t t = spec.tokens_per_device(), k = spec.model.experts_per_token(),
                e = spec.model.num_experts(), ep = spec.parallelism.ep;
  const int64_t pad = align > 1 ? align - 1 : 0;
  switch (rows) {
    case GroupRows::kAssignments:
      return {t * k, absl::StrCat("T_l·K = ", t, "·", k)};
    case GroupRows::kAlignedAssignments: {
      WorstCase w{t * k + e * pad, absl::StrCat("T_l·K = ", t, "·", k)};
      if (pad > 0) absl::StrAppend(&w.formula, " + E·(A−1) = ", e, "·", pad);
      return w;
    }
    case GroupRows::kGatheredAssignments:
      return {ep * t * k, absl::StrCat("EP·T_l·K = ", ep, "·", t, "·", k)};
    case GroupRows::kReceivedRows: return ExpertRowsWorstCase(spec, ep, align);
  }
  return {};
}

// The integer value of perfsim_align in `text` (0 when absent).
absl::StatusOr<int64_t> AlignOf(const Instruction& instruction, absl::string_view text) {
  const std::string align_text = FrontendAttribute(text, kAlignKey);
  int64_t align = 0;
  if (!align_text.empty() && !absl::SimpleAtoi(align_text, &align)) {
    return absl::FailedPreconditionError(absl::StrCat(
        instruction.name(), ": expected an integer ", kAlignKey, "; got \"", align_text, "\""));
  }
  return align;
}

// The worst case capped by a declared truncation (DeclareTruncatedTo), if any.
absl::StatusOr<WorstCase> Truncated(const Instruction& instruction, absl::string_view text,
                                    WorstCase worst) {
  const std::string value = FrontendAttribute(text, kTruncatedKey);
  if (value.empty()) return worst;
  int64_t rows = 0;
  if (!absl::SimpleAtoi(value, &rows) || rows < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        instruction.name(), ": expected a row count ", kTruncatedKey, "; got \"", value, "\""));
  }
  if (rows < worst.rows) {
    worst.formula = absl::StrCat(worst.formula, " = ", worst.rows, ", truncated to ", rows,
                                 " (ragged_buffer_factor: the excess is dropped)");
    worst.rows = rows;
  }
  return worst;
}

int64_t Rows(const Instruction& instruction, int64_t dim) {
  const Shape& shape = instruction.shape();
  return shape.IsArray() && shape.rank() > dim ? shape.dimensions(dim) : 0;
}

// (the group-sizes operand, the ragged dimension's rows) of a grouped matmul; nullopt for
// other instructions.
std::optional<std::pair<const Instruction*, int64_t>> GroupedOperands(const Instruction& i) {
  if (i.opcode() == Opcode::kRaggedDot && i.operand_count() >= 3) {
    const RaggedDotDimensionNumbers& d = *i.attributes().ragged_dot_dimension_numbers;
    const int64_t ragged = d.lhs_ragged_dimensions.empty() ? 0 : d.lhs_ragged_dimensions[0];
    return std::make_pair(i.operand(2), Rows(*i.operand(0), ragged));
  }
  if (i.opcode() != Opcode::kCustomCall) return std::nullopt;
  const std::string& target = i.attributes().custom_call_target;
  if ((target == kGmmTarget || target == kTgmmTarget) && i.operand_count() >= 3) {
    return std::make_pair(i.operand(2), Rows(*i.operand(0), target == kGmmTarget ? 0 : 1));
  }
  if (target == kFusedFfnTarget && i.operand_count() >= 5) {
    return std::make_pair(i.operand(4), Rows(*i.operand(0), 0));
  }
  return std::nullopt;
}

}  // namespace

void DeclareReceivedRows(Instruction* ragged_all_to_all, ReceivedRows received, int64_t align) {
  SetFrontendAttribute(ragged_all_to_all, kReceiveKey, ReceivedRowsName(received));
  if (align > 1) SetFrontendAttribute(ragged_all_to_all, kAlignKey, absl::StrCat(align));
}

void DeclareTruncatedTo(Instruction* instruction, int64_t rows) {
  SetFrontendAttribute(instruction, kTruncatedKey, absl::StrCat(rows));
}

void DeclareGroupRows(Instruction* group_sizes, GroupRows rows, int64_t align,
                      int64_t roll_per_ep_rank) {
  SetFrontendAttribute(group_sizes, kGroupsKey, GroupRowsName(rows));
  if (align > 1) SetFrontendAttribute(group_sizes, kAlignKey, absl::StrCat(align));
  // What the sizes hold, for predict (proto/annotation.proto RaggedSizes).
  const int64_t count = Rows(*group_sizes, 0);
  UpdateAnnotation(group_sizes, [&](Annotation& a) {
    RaggedSizes& r = *a.mutable_ragged();
    switch (rows) {
      case GroupRows::kAssignments:
      case GroupRows::kAlignedAssignments: r.set_rows(RaggedSizes::ROWS_DEVICE); break;
      case GroupRows::kGatheredAssignments:
        r.set_rows(RaggedSizes::ROWS_EP_GROUP);
        r.set_roll_per_ep_rank(roll_per_ep_rank);
        break;
      case GroupRows::kReceivedRows:
        // The E_l = count experts of EP rank r start at r·E_l.
        r.set_rows(RaggedSizes::ROWS_EP_GROUP);
        r.set_group_offset_per_ep_rank(count);
        break;
    }
    r.set_group_count(count);
    if (align > 1) r.set_align(align);
  });
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
      absl::StatusOr<int64_t> align = AlignOf(*instruction, attributes);
      if (!align.ok()) return align.status();
      const int64_t group = ReplicaGroupSize(*instruction, step.spec.num_devices());
      absl::StatusOr<WorstCase> worst = Truncated(
          *instruction, attributes, WorstReceivedRows(step.spec, received, group, *align));
      if (!worst.ok()) return worst.status();
      const Instruction& buffer = *instruction->operand(1);
      const int64_t rows = Rows(buffer, 0);
      if (rows < worst->rows) {
        return absl::FailedPreconditionError(absl::StrCat(
            instruction->name(), ": expected its receive buffer ", buffer.name(), " ",
            buffer.shape().ToString(false), " to hold the ", worst->rows,
            " rows the worst routing sends it (", role, ": ", worst->formula, "); got ", rows,
            " rows (known_bugs.md #10: an undersized receive buffer)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGroupSums(const LoweredStep& step) {
  for (const auto& computation : step.module->computations()) {
    for (const auto& instruction : computation->instructions()) {
      const auto operands = GroupedOperands(*instruction);
      if (!operands.has_value()) continue;
      const auto [sizes, rows] = *operands;
      const std::string& attributes = sizes->attributes().frontend_attributes;
      const std::string kind = FrontendAttribute(attributes, kGroupsKey);
      std::optional<GroupRows> declared;
      for (GroupRows g : {GroupRows::kAssignments, GroupRows::kAlignedAssignments,
                          GroupRows::kGatheredAssignments, GroupRows::kReceivedRows}) {
        if (kind == GroupRowsName(g)) declared = g;
      }
      if (!declared.has_value()) {
        return absl::FailedPreconditionError(absl::StrCat(
            instruction->name(), ": expected its group sizes ", sizes->name(),
            " to declare what they count (", kGroupsKey,
            "=assignments|aligned_assignments|gathered_assignments|received_rows), so that "
            "their sum can be bounded by the rows; got ",
            kind.empty() ? "no declaration" : absl::StrCat("\"", kind, "\"")));
      }
      absl::StatusOr<int64_t> align = AlignOf(*sizes, attributes);
      if (!align.ok()) return align.status();
      absl::StatusOr<WorstCase> worst =
          Truncated(*sizes, attributes, WorstGroupSum(step.spec, *declared, *align));
      if (!worst.ok()) return worst.status();
      if (worst->rows > rows) {
        return absl::FailedPreconditionError(absl::StrCat(
            instruction->name(), ": expected its group sizes ", sizes->name(), " to sum to at most ",
            "the ", rows, " rows of ", instruction->operand(0)->name(), " ",
            instruction->operand(0)->shape().ToString(false), "; got a worst case of ",
            worst->rows, " (", kind, ": ", worst->formula,
            "): rows past the buffer would be read or written"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace perfsim
