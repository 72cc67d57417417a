// Shape inference for collectives: all-gather, all-reduce, reduce-scatter, all-to-all (array
// and tuple forms), ragged-all-to-all, collective-permute, collective-broadcast, their
// -start forms, and replica-id / partition-id.
//
// Group size: XLA's, per collective_groups.h. The mode comes from channel_id and
// use_global_device_ids (an all-gather with a channel_id and no use_global_device_ids is
// cross-replica-and-partition: the listed group size times num_partitions). Empty
// replica_groups mean every id of the mode. Many real modules (tests, hand-written repros)
// leave the header counts out although they ran on several devices; when the group size comes
// out as 1, XLA skips its checks and so does this file: the declared result is accepted if it
// is any whole multiple (all-gather) or divisor (reduce-scatter) of the operand along the
// collective dimension.
#include <algorithm>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/collective_groups.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/shape_inference_internal.h"
#include "sim/util/status.h"

namespace perfsim {

using infer_internal::ArrayOperand;
using infer_internal::CheckReducer;
using infer_internal::InferError;
using infer_internal::ListText;
using infer_internal::ShapeText;
using infer_internal::TupleIfMany;

namespace {

// Devices per group as XLA's verifier computes it (collective_groups.h SubgroupSize), after
// XLA's CheckReplicaGroups: no empty group, no id twice, the ids 0..n-1 all named, n the
// mode's id count when the header gives it, equal sizes except for all-reduce. nullopt when
// the size is 1 (the header gives no counts): like XLA, the caller then takes the size the
// declared result implies.
absl::StatusOr<std::optional<int64_t>> GroupSize(const Instruction& instruction) {
  const InstructionAttributes& attrs = instruction.attributes();
  PERFSIM_ASSIGN_OR_RETURN(CollectiveOpGroupMode mode, GroupModeOf(instruction));
  const Computation* computation = instruction.parent();
  const Module* module = computation == nullptr ? nullptr : computation->parent();
  const int64_t replicas = module == nullptr ? 1 : module->replica_count();
  const int64_t partitions = module == nullptr ? 1 : module->num_partitions();
  static const std::vector<std::vector<int64_t>> kNone;
  const std::vector<std::vector<int64_t>>& groups =
      attrs.replica_groups.has_value() ? attrs.replica_groups->groups : kNone;
  if (groups.empty() && mode == CollectiveOpGroupMode::kFlattenedId) {
    return InferError(instruction,
                      "explicit replica_groups with use_global_device_ids=true (flattened ids)",
                      "{}");
  }
  if (!groups.empty()) {
    const size_t size = groups[0].size();
    const bool uniform =
        instruction.opcode() != Opcode::kAllReduce && instruction.opcode() != Opcode::kAllReduceStart;
    // Distinct ids fill 0..n-1 exactly, n = the number of ids: a bitmap over that range, and a
    // set only for ids beyond it (never valid; kept to report a repeat before the gap).
    int64_t n = 0;
    for (const std::vector<int64_t>& group : groups) n += static_cast<int64_t>(group.size());
    std::vector<bool> seen(n, false);
    absl::flat_hash_set<int64_t> seen_beyond;
    for (const std::vector<int64_t>& group : groups) {
      if (group.empty() || (uniform && group.size() != size)) {
        return InferError(instruction,
                          absl::StrCat("non-empty replica groups of equal size ", size),
                          absl::StrCat("a group of ", group.size()));
      }
      for (int64_t device : group) {
        bool repeated = false;
        if (device >= 0 && device < n) {
          repeated = seen[device];
          seen[device] = true;
        } else if (device >= n) {
          repeated = !seen_beyond.insert(device).second;
        }
        if (device < 0 || repeated) {
          return InferError(instruction, "distinct non-negative device ids in replica_groups",
                            absl::StrCat(device));
        }
      }
    }
    for (int64_t id = 0; id < n; ++id) {
      if (!seen[id]) {
        return InferError(instruction,
                          absl::StrCat("replica_groups naming every id 0..", n - 1),
                          absl::StrCat(id, " missing"));
      }
    }
    int64_t expected = replicas;
    if (mode == CollectiveOpGroupMode::kCrossPartition) expected = partitions;
    if (mode == CollectiveOpGroupMode::kFlattenedId) {
      expected = static_cast<int64_t>(
          std::min<__int128>(static_cast<__int128>(replicas) * partitions, INT64_MAX));
    }
    if (expected != 1 && n != expected) {
      return InferError(instruction,
                        absl::StrCat("replica_groups of ", expected, " ids in ",
                                     CollectiveOpGroupModeName(mode), " mode"),
                        absl::StrCat(n));
    }
  }
  // SubgroupSize, in 128 bits: the header counts are the module's to choose.
  const int64_t listed = groups.empty() ? -1 : static_cast<int64_t>(groups[0].size());
  __int128 size = listed;
  switch (mode) {
    case CollectiveOpGroupMode::kCrossReplica:
      size = listed < 0 ? replicas : listed;
      break;
    case CollectiveOpGroupMode::kCrossReplicaAndPartition:
      size = static_cast<__int128>(listed < 0 ? replicas : listed) * partitions;
      break;
    case CollectiveOpGroupMode::kCrossPartition:
      size = listed < 0 ? partitions : listed;
      break;
    case CollectiveOpGroupMode::kFlattenedId:
      break;
  }
  if (size <= 1) return std::optional<int64_t>();
  return std::optional<int64_t>(static_cast<int64_t>(std::min<__int128>(size, INT64_MAX)));
}

absl::StatusOr<std::vector<const Shape*>> ArrayOperands(const Instruction& instruction) {
  if (instruction.operand_count() < 1) return InferError(instruction, "at least 1 operand", "0");
  std::vector<const Shape*> shapes;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    PERFSIM_ASSIGN_OR_RETURN(const Shape* s,
                             ArrayOperand(instruction, i, absl::StrCat("operand ", i)));
    shapes.push_back(s);
  }
  return shapes;
}

// The elements of a (possibly tuple) declared result, one per operand; empty when the
// declaration does not have that form (the caller's inferred shape will then mismatch).
std::vector<const Shape*> DeclaredPerOperand(const Shape& declared, size_t operand_count) {
  std::vector<const Shape*> out;
  if (operand_count == 1 && declared.IsArray()) {
    out.push_back(&declared);
  } else if (declared.IsTuple() && static_cast<size_t>(declared.tuple_size()) == operand_count) {
    for (const Shape& s : declared.tuple_shapes()) out.push_back(&s);
  }
  return out;
}

// all-gather (gather = true) and reduce-scatter: scales dimension `dim` of every operand by
// the group size, up or down. With an unknown group size the factor is read from the first
// declared result element and must be a whole number.
absl::StatusOr<std::vector<Shape>> GatherOrScatter(const Instruction& instruction,
                                                   const std::vector<const Shape*>& operands,
                                                   const Shape& declared_results, bool gather) {
  const std::vector<int64_t> dims =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  if (dims.size() != 1) {
    return InferError(instruction, "one collective dimension (dimensions={d})", ListText(dims));
  }
  const int64_t dim = dims[0];
  for (const Shape* s : operands) {
    if (dim < 0 || dim >= s->rank()) {
      return InferError(instruction, absl::StrCat("dimension ", dim, " of every operand"),
                        ShapeText(*s));
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> group, GroupSize(instruction));
  int64_t factor = group.value_or(0);
  if (!group.has_value()) {
    const std::vector<const Shape*> declared =
        DeclaredPerOperand(declared_results, operands.size());
    factor = 1;
    if (!declared.empty() && declared[0]->rank() == operands[0]->rank()) {
      const int64_t in = operands[0]->dimensions(dim);
      const int64_t out = declared[0]->dimensions(dim);
      const int64_t big = gather ? out : in;
      const int64_t small = gather ? in : out;
      if (small > 0 && big >= small && big % small == 0) factor = big / small;
    }
  }
  std::vector<Shape> results;
  for (const Shape* s : operands) {
    Shape result = infer_internal::ArrayLike(*s, s->element_type());
    const int64_t size = s->dimensions(dim);
    if (gather) {
      if (factor > 0 && size > INT64_MAX / factor) {
        return InferError(instruction,
                          absl::StrCat("a gathered dimension ", dim, " that fits in int64"),
                          absl::StrCat(size, " x ", factor));
      }
      result.set_dimensions(dim, size * factor);
    } else {
      if (size % factor != 0) {
        return InferError(instruction,
                          absl::StrCat("dimension ", dim, " of ", ShapeText(*s),
                                       " divisible by the group size ", factor),
                          absl::StrCat(size));
      }
      result.set_dimensions(dim, size / factor);
    }
    results.push_back(std::move(result));
  }
  return results;
}

// all-reduce and reduce-scatter reducers: one (T, T) -> T per operand type.
absl::Status CheckCollectiveReducer(const Instruction& instruction,
                                    const std::vector<const Shape*>& operands) {
  for (const Shape* s : operands) {
    const PrimitiveType type = s->element_type();
    PERFSIM_RETURN_IF_ERROR(
        CheckReducer(instruction, instruction.to_apply(), "to_apply", {type}, {type}).status());
  }
  return absl::OkStatus();
}

bool HasOtherAttribute(const Instruction& instruction, absl::string_view key);

// XLA's CheckDuplicatedSourceOrTarget: a source or target appears once, or, in the in-place
// form (input, output, input offsets, output offsets) with slice_sizes, once per slice: as
// many times as operand 2 has offset tuples (per buffer when the buffers are a tuple).
absl::Status CheckSourceTargetPairs(const Instruction& instruction) {
  const auto& pairs = instruction.attributes().source_target_pairs;
  if (!pairs.has_value()) return absl::OkStatus();
  int64_t allowed = 1;
  if (instruction.operand_count() == 4 && HasOtherAttribute(instruction, "slice_sizes")) {
    const Shape& offsets = instruction.operand(2)->shape();
    const Shape* per_buffer = &offsets;
    if (!instruction.operand(0)->shape().IsArray() && offsets.IsTuple() &&
        offsets.tuple_size() > 0) {
      per_buffer = &offsets.tuple_shapes(0);
    }
    if (per_buffer->IsTuple()) allowed = std::max<int64_t>(1, per_buffer->tuple_size());
  }
  absl::flat_hash_map<int64_t, int64_t> sources;
  absl::flat_hash_map<int64_t, int64_t> targets;
  const std::string times = allowed == 1 ? "once" : absl::StrCat(allowed, " times");
  for (const auto& [source, target] : *pairs) {
    if (source < 0 || target < 0) {
      return InferError(instruction, "non-negative device ids in source_target_pairs",
                        absl::StrCat("{", source, ",", target, "}"));
    }
    if (++sources[source] > allowed) {
      return InferError(instruction,
                        absl::StrCat("each source at most ", times, " in source_target_pairs"),
                        absl::StrCat(source, " ", sources[source], " times"));
    }
    if (++targets[target] > allowed) {
      return InferError(instruction,
                        absl::StrCat("each target at most ", times, " in source_target_pairs"),
                        absl::StrCat(target, " ", targets[target], " times"));
    }
  }
  return absl::OkStatus();
}

bool HasOtherAttribute(const Instruction& instruction, absl::string_view key) {
  for (const auto& [k, v] : instruction.attributes().other) {
    if (k == key) return true;
  }
  return false;
}

absl::StatusOr<Shape> CollectivePermuteResult(const Instruction& instruction) {
  PERFSIM_RETURN_IF_ERROR(CheckSourceTargetPairs(instruction));
  if (instruction.operand_count() < 1) return InferError(instruction, "at least 1 operand", "0");
  // The in-place form (input, output, input_start_indices, output_start_indices) with
  // slice_sizes= writes into `output`.
  if (instruction.operand_count() == 4 && HasOtherAttribute(instruction, "slice_sizes")) {
    return instruction.operand(1)->shape();
  }
  std::vector<Shape> shapes;
  for (const Instruction* operand : instruction.operands()) shapes.push_back(operand->shape());
  return TupleIfMany(std::move(shapes));
}

}  // namespace

absl::StatusOr<Shape> InferReplicaIdShape(const Instruction& instruction) {
  return Shape::Scalar(PrimitiveType::kU32);
}

absl::StatusOr<Shape> InferAllGatherShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> operands, ArrayOperands(instruction));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Shape> results,
                           GatherOrScatter(instruction, operands, instruction.shape(), true));
  return TupleIfMany(std::move(results));
}

// (operand, result) for one operand; ((operands...), (results...)) for several.
absl::StatusOr<Shape> InferAllGatherStartShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> operands, ArrayOperands(instruction));
  const Shape& declared = instruction.shape();
  const Shape declared_results =
      declared.IsTuple() && declared.tuple_size() == 2 ? declared.tuple_shapes(1) : Shape();
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Shape> results,
                           GatherOrScatter(instruction, operands, declared_results, true));
  std::vector<Shape> inputs;
  for (const Shape* s : operands) inputs.push_back(*s);
  return Shape::Tuple({TupleIfMany(std::move(inputs)), TupleIfMany(std::move(results))});
}

// all-reduce and all-reduce-start (whose handle is the reduced value itself).
absl::StatusOr<Shape> InferAllReduceShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> operands, ArrayOperands(instruction));
  PERFSIM_RETURN_IF_ERROR(GroupSize(instruction).status());
  PERFSIM_RETURN_IF_ERROR(CheckCollectiveReducer(instruction, operands));
  std::vector<Shape> results;
  for (const Shape* s : operands) results.push_back(*s);
  return TupleIfMany(std::move(results));
}

absl::StatusOr<Shape> InferReduceScatterShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> operands, ArrayOperands(instruction));
  PERFSIM_RETURN_IF_ERROR(CheckCollectiveReducer(instruction, operands));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Shape> results,
                           GatherOrScatter(instruction, operands, instruction.shape(), false));
  return TupleIfMany(std::move(results));
}

// Array form: all-to-all(x), dimensions={split}: same shape, split dimension divisible by the
// group size. Tuple form (no dimensions): a tuple of the operand shapes, even for one operand.
absl::StatusOr<Shape> InferAllToAllShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> operands, ArrayOperands(instruction));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> group, GroupSize(instruction));
  std::vector<Shape> shapes;
  for (const Shape* s : operands) shapes.push_back(*s);
  const std::optional<std::vector<int64_t>>& dims = instruction.attributes().dimensions;
  if (!dims.has_value()) return Shape::Tuple(std::move(shapes));
  if (dims->size() != 1) {
    return InferError(instruction, "one split dimension (dimensions={d})", ListText(*dims));
  }
  const int64_t split = (*dims)[0];
  for (const Shape* s : operands) {
    if (split < 0 || split >= s->rank()) {
      return InferError(instruction, absl::StrCat("split dimension ", split, " of every operand"),
                        ShapeText(*s));
    }
    if (group.has_value() && s->dimensions(split) % *group != 0) {
      return InferError(instruction,
                        absl::StrCat("split dimension ", split, " of ", ShapeText(*s),
                                     " divisible by the group size ", *group),
                        absl::StrCat(s->dimensions(split)));
    }
  }
  return TupleIfMany(std::move(shapes));
}

// ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes):
// the result is `output` (rows not received keep its values). The four index operands are
// integer arrays of one shape: vectors whose length is a multiple of the group size, or
// rank-2 arrays (which XLA's verifier accepts too).
absl::StatusOr<Shape> InferRaggedAllToAllShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* input, ArrayOperand(instruction, 0, "input"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* output, ArrayOperand(instruction, 1, "output"));
  if (input->rank() < 1 || input->element_type() != output->element_type() ||
      input->rank() != output->rank() ||
      !std::equal(input->dimensions().begin() + 1, input->dimensions().end(),
                  output->dimensions().begin() + 1)) {
    return InferError(
        instruction,
        absl::StrCat("an output of the element type and row shape of input ", ShapeText(*input)),
        ShapeText(*output));
  }
  static constexpr absl::string_view kRoles[] = {"input_offsets", "send_sizes", "output_offsets",
                                                 "recv_sizes"};
  // Vectors [group_size * U], or (XLA's verifier allows it) rank-2 arrays; all four alike.
  const Shape& first = instruction.operand(2)->shape();
  for (int64_t i = 0; i < 4; ++i) {
    const Shape& s = instruction.operand(2 + i)->shape();
    if (!s.IsArray() || !IsInteger(s.element_type()) || (s.rank() != 1 && s.rank() != 2)) {
      return InferError(instruction,
                        absl::StrCat("an integer array of rank 1 or 2 as ", kRoles[i]),
                        ShapeText(s));
    }
    if (s.element_type() != first.element_type() || s.dimensions() != first.dimensions()) {
      return InferError(instruction,
                        absl::StrCat(kRoles[i], " of the shape of input_offsets ", ShapeText(first)),
                        ShapeText(s));
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> group, GroupSize(instruction));
  const int64_t length = first.dimensions(0);
  if (first.rank() == 1 && group.has_value() && length % *group != 0) {
    return InferError(instruction,
                      absl::StrCat("offset and size vectors whose length is a multiple of the "
                                   "group size ",
                                   *group),
                      absl::StrCat(length));
  }
  return *output;
}

absl::StatusOr<Shape> InferCollectivePermuteShape(const Instruction& instruction) {
  return CollectivePermuteResult(instruction);
}

// (operand, result[, u32[] context...]); XLA versions differ in the context elements, so
// trailing integer scalars are taken as declared.
absl::StatusOr<Shape> InferCollectivePermuteStartShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(Shape result, CollectivePermuteResult(instruction));
  std::vector<Shape> inputs;
  for (const Instruction* operand : instruction.operands()) inputs.push_back(operand->shape());
  // The in-place form's start is (input, output, context...), not (operands, result, ...).
  const bool in_place =
      instruction.operand_count() == 4 && HasOtherAttribute(instruction, "slice_sizes");
  std::vector<Shape> elements =
      in_place ? std::vector<Shape>{inputs[0], std::move(result)}
               : std::vector<Shape>{TupleIfMany(std::move(inputs)), std::move(result)};
  const Shape& declared = instruction.shape();
  if (declared.IsTuple()) {
    for (int64_t i = 2; i < declared.tuple_size(); ++i) {
      const Shape& context = declared.tuple_shapes(i);
      if (!context.IsScalar() || !IsInteger(context.element_type())) break;
      elements.push_back(context);
    }
  }
  return Shape::Tuple(std::move(elements));
}

absl::StatusOr<Shape> InferCollectiveBroadcastShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> operands, ArrayOperands(instruction));
  PERFSIM_RETURN_IF_ERROR(GroupSize(instruction).status());
  std::vector<Shape> shapes;
  for (const Shape* s : operands) shapes.push_back(*s);
  return TupleIfMany(std::move(shapes));
}

}  // namespace perfsim
