// Receive buffers of ragged-all-to-alls (known_bugs.md #10) and group sums of grouped matmuls,
// both bounded symbolically from the spec through what the lowering declares (checks.h).
#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/checks.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The declaration's name in messages ("expert_rows: n·T_l·min(K, E_l) = ...").
absl::string_view ReceivedName(RaggedBuffer::Received received) {
  switch (received) {
    case RaggedBuffer::RECEIVED_EXPERT_ROWS: return "expert_rows";
    case RaggedBuffer::RECEIVED_TOKEN_ROWS: return "token_rows";
    case RaggedBuffer::RECEIVED_UNSPECIFIED:
    case RaggedBuffer_Received_RaggedBuffer_Received_INT_MIN_SENTINEL_DO_NOT_USE_:
    case RaggedBuffer_Received_RaggedBuffer_Received_INT_MAX_SENTINEL_DO_NOT_USE_: break;
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

// The worst case of a declared receive buffer; nullopt when `received` is unspecified.
std::optional<WorstCase> WorstReceivedRows(const StepSpec& spec, RaggedBuffer::Received received,
                                           int64_t group, int64_t align) {
  const int64_t t = spec.tokens_per_device(), k = spec.model.experts_per_token(),
                e = spec.model.num_experts();
  const int64_t pad = align > 1 ? align - 1 : 0;
  switch (received) {
    case RaggedBuffer::RECEIVED_EXPERT_ROWS: return ExpertRowsWorstCase(spec, group, align);
    case RaggedBuffer::RECEIVED_TOKEN_ROWS: {
      WorstCase w{.rows = t * k + e * pad, .formula = absl::StrCat("T_l·K = ", t, "·", k)};
      if (pad > 0) absl::StrAppend(&w.formula, " + E·(A−1) = ", e, "·", pad);
      return w;
    }
    case RaggedBuffer::RECEIVED_UNSPECIFIED:
    case RaggedBuffer_Received_RaggedBuffer_Received_INT_MIN_SENTINEL_DO_NOT_USE_:
    case RaggedBuffer_Received_RaggedBuffer_Received_INT_MAX_SENTINEL_DO_NOT_USE_: break;
  }
  return std::nullopt;
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

// The worst case capped by a declared truncation (DeclareTruncatedTo: truncated_rows > 0).
WorstCase Truncated(WorstCase worst, int64_t rows) {
  if (rows > 0 && rows < worst.rows) {
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

void DeclareReceivedRows(Instruction* ragged_all_to_all, RaggedBuffer::Received received,
                         int64_t align) {
  PERFSIM_CHECK(ragged_all_to_all->opcode() == Opcode::kRaggedAllToAll)
      << ragged_all_to_all->name() << ": only a ragged-all-to-all has a receive buffer";
  UpdateAnnotation(ragged_all_to_all, [&](Annotation& a) {
    RaggedBuffer& buffer = *a.mutable_buffer();
    buffer.set_received(received);
    if (align > 1) buffer.set_align(align);
  });
}

void DeclareTruncatedTo(Instruction* instruction, int64_t rows) {
  if (instruction->opcode() == Opcode::kRaggedAllToAll) {
    UpdateAnnotation(instruction,
                     [&](Annotation& a) { a.mutable_buffer()->set_truncated_rows(rows); });
    return;
  }
  PERFSIM_CHECK(instruction->annotation() != nullptr && instruction->annotation()->has_ragged())
      << instruction->name() << ": DeclareGroupRows before DeclareTruncatedTo";
  UpdateAnnotation(instruction,
                   [&](Annotation& a) { a.mutable_ragged()->set_truncated_rows(rows); });
}

void DeclareGroupRows(Instruction* group_sizes, GroupRows rows, int64_t align,
                      int64_t roll_per_ep_rank) {
  // What the sizes hold, for predict and CheckGroupSums (proto/annotation.proto RaggedSizes).
  const int64_t count = Rows(*group_sizes, 0);
  UpdateAnnotation(group_sizes, [&](Annotation& a) {
    RaggedSizes& r = *a.mutable_ragged();
    switch (rows) {
      case GroupRows::kAssignments:
        r.set_rows(RaggedSizes::ROWS_DEVICE);
        r.set_holds(RaggedSizes::HOLDS_ASSIGNMENTS);
        break;
      case GroupRows::kAlignedAssignments:
        r.set_rows(RaggedSizes::ROWS_DEVICE);
        r.set_holds(RaggedSizes::HOLDS_ALIGNED_ASSIGNMENTS);
        break;
      case GroupRows::kGatheredAssignments:
        r.set_rows(RaggedSizes::ROWS_EP_GROUP);
        r.set_roll_per_ep_rank(roll_per_ep_rank);
        r.set_holds(RaggedSizes::HOLDS_GATHERED_ASSIGNMENTS);
        break;
      case GroupRows::kReceivedRows:
        // The E_l = count experts of EP rank r start at r·E_l.
        r.set_rows(RaggedSizes::ROWS_EP_GROUP);
        r.set_group_offset_per_ep_rank(count);
        r.set_holds(RaggedSizes::HOLDS_RECEIVED_ROWS);
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
      const Annotation* annotation = instruction->annotation();
      if (annotation == nullptr || !annotation->has_buffer()) continue;
      const RaggedBuffer& declared = annotation->buffer();
      const int64_t group = ReplicaGroupSize(*instruction, step.spec.num_devices());
      std::optional<WorstCase> worst =
          WorstReceivedRows(step.spec, declared.received(), group, declared.align());
      if (!worst.has_value()) {
        return absl::FailedPreconditionError(
            absl::StrCat(instruction->name(),
                         ": expected its annotation's buffer to declare what it receives "
                         "(RECEIVED_EXPERT_ROWS or RECEIVED_TOKEN_ROWS); got \"buffer { ",
                         declared.ShortDebugString(), " }\""));
      }
      worst = Truncated(*std::move(worst), declared.truncated_rows());
      const Instruction& buffer = *instruction->operand(1);
      const int64_t rows = Rows(buffer, 0);
      if (rows < worst->rows) {
        return absl::FailedPreconditionError(
            absl::StrCat(instruction->name(), ": expected its receive buffer ", buffer.name(), " ",
                         buffer.shape().ToString(false), " to hold the ", worst->rows,
                         " rows the worst routing sends it (", ReceivedName(declared.received()),
                         ": ", worst->formula, "); got ", rows,
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
      const RaggedSizes& ragged = sizes->annotation() != nullptr ? sizes->annotation()->ragged()
                                                                 : RaggedSizes::default_instance();
      std::optional<GroupRows> declared;
      switch (ragged.holds()) {
        case RaggedSizes::HOLDS_ASSIGNMENTS: declared = GroupRows::kAssignments; break;
        case RaggedSizes::HOLDS_ALIGNED_ASSIGNMENTS: declared = GroupRows::kAlignedAssignments; break;
        case RaggedSizes::HOLDS_GATHERED_ASSIGNMENTS:
          declared = GroupRows::kGatheredAssignments;
          break;
        case RaggedSizes::HOLDS_RECEIVED_ROWS: declared = GroupRows::kReceivedRows; break;
        case RaggedSizes::HOLDS_UNSPECIFIED:
        case RaggedSizes_Holds_RaggedSizes_Holds_INT_MIN_SENTINEL_DO_NOT_USE_:
        case RaggedSizes_Holds_RaggedSizes_Holds_INT_MAX_SENTINEL_DO_NOT_USE_: break;
      }
      if (!declared.has_value()) {
        return absl::FailedPreconditionError(absl::StrCat(
            instruction->name(), ": expected its group sizes ", sizes->name(),
            " to declare what they count (perfsim_annotation ragged { holds: HOLDS_ASSIGNMENTS | "
            "HOLDS_ALIGNED_ASSIGNMENTS | HOLDS_GATHERED_ASSIGNMENTS | HOLDS_RECEIVED_ROWS }), so "
            "that their sum can be bounded by the rows; got no declaration"));
      }
      const std::string kind(GroupRowsName(*declared));
      const WorstCase worst =
          Truncated(WorstGroupSum(step.spec, *declared, ragged.align()), ragged.truncated_rows());
      if (worst.rows > rows) {
        return absl::FailedPreconditionError(absl::StrCat(
            instruction->name(), ": expected its group sizes ", sizes->name(),
            " to sum to at most ", "the ", rows, " rows of ", instruction->operand(0)->name(), " ",
            instruction->operand(0)->shape().ToString(false), "; got a worst case of ", worst.rows,
            " (", kind, ": ", worst.formula, "): rows past the buffer would be read or written"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace perfsim
