// Shape inference for collectives: all-gather, all-reduce, reduce-scatter, all-to-all (array
// and tuple forms), ragged-all-to-all, collective-permute, collective-broadcast, their
// -start forms, and replica-id / partition-id.
//
// Group size. Explicit replica_groups fix it (every group must have the same size). With
// `replica_groups={}` the group is every device of the collective's mode: replica_count
// without a channel_id, num_partitions with one, their product with use_global_device_ids.
// Many real modules (tests, hand-written repros) leave those header fields out although they
// ran on several devices, so when the count is 1 the group size is unknown and the declared
// result is accepted if it is any whole multiple (all-gather) or divisor (reduce-scatter) of
// the operand along the collective dimension.
#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
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

// Devices per replica group; nullopt when the module does not say.
absl::StatusOr<std::optional<int64_t>> GroupSize(const Instruction& instruction) {
  const InstructionAttributes& attrs = instruction.attributes();
  if (attrs.replica_groups.has_value() && !attrs.replica_groups->groups.empty()) {
    const std::vector<std::vector<int64_t>>& groups = attrs.replica_groups->groups;
    const size_t size = groups[0].size();
    absl::flat_hash_set<int64_t> seen;
    for (const std::vector<int64_t>& group : groups) {
      if (group.size() != size || size == 0) {
        return InferError(instruction,
                          absl::StrCat("non-empty replica groups of equal size ", size),
                          absl::StrCat("a group of ", group.size()));
      }
      for (int64_t device : group) {
        if (device < 0 || !seen.insert(device).second) {
          return InferError(instruction, "distinct non-negative device ids in replica_groups",
                            absl::StrCat(device));
        }
      }
    }
    return std::optional<int64_t>(static_cast<int64_t>(size));
  }
  const Computation* computation = instruction.parent();
  const Module* module = computation == nullptr ? nullptr : computation->parent();
  if (module == nullptr) return std::optional<int64_t>();
  int64_t count = module->replica_count();
  if (attrs.channel_id.has_value()) {
    const __int128 all = static_cast<__int128>(module->replica_count()) * module->num_partitions();
    count = attrs.use_global_device_ids ? static_cast<int64_t>(std::min<__int128>(all, INT64_MAX))
                                        : module->num_partitions();
  }
  if (count <= 1) return std::optional<int64_t>();
  return std::optional<int64_t>(count);
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

absl::Status CheckSourceTargetPairs(const Instruction& instruction) {
  const auto& pairs = instruction.attributes().source_target_pairs;
  if (!pairs.has_value()) return absl::OkStatus();
  absl::flat_hash_set<int64_t> sources;
  absl::flat_hash_set<int64_t> targets;
  for (const auto& [source, target] : *pairs) {
    if (source < 0 || target < 0) {
      return InferError(instruction, "non-negative device ids in source_target_pairs",
                        absl::StrCat("{", source, ",", target, "}"));
    }
    if (!sources.insert(source).second) {
      return InferError(instruction, "each source at most once in source_target_pairs",
                        absl::StrCat(source, " twice"));
    }
    if (!targets.insert(target).second) {
      return InferError(instruction, "each target at most once in source_target_pairs",
                        absl::StrCat(target, " twice"));
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
// integer vectors of one common length, a multiple of the group size.
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
  int64_t length = -1;
  for (int64_t i = 0; i < 4; ++i) {
    const Shape& s = instruction.operand(2 + i)->shape();
    if (!s.IsArray() || !IsInteger(s.element_type()) || s.rank() != 1) {
      return InferError(instruction, absl::StrCat("an integer vector as ", kRoles[i]),
                        ShapeText(s));
    }
    if (length < 0) length = s.dimensions(0);
    if (s.dimensions(0) != length) {
      return InferError(instruction,
                        absl::StrCat(kRoles[i], " of the length of input_offsets (", length, ")"),
                        ShapeText(s));
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> group, GroupSize(instruction));
  if (group.has_value() && length % *group != 0) {
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
  std::vector<Shape> elements = {TupleIfMany(std::move(inputs)), std::move(result)};
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
