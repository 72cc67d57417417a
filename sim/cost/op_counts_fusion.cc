// Fusion counting (XLA's HandleFusion and FusionParameterReadBytes, xla_cost_model.md 1.3).
//
// A fusion is one kernel: values that stay inside it never touch memory. Its flops are the sum
// over the fused instructions; its bytes are what crosses the kernel boundary: each result
// array written once (a dynamic-update-slice root writes only its update, in place), each
// fused constant of more than one element read once, and each parameter read according to how
// the fused code uses it — a slice reads only the slice, a dynamic-slice of it reads the slice,
// a dynamic-update-slice into it reads nothing (aliased), a broadcast or reshape reads it once
// per such user, and all other users share a single read. True mode differs in one rule: a
// fusion that is only a view of one contiguous layer of a stacked operand is 0 bytes
// (IsViewFusion).
#include <vector>

#include "sim/cost/op_counts_internal.h"
#include "sim/cost/shape_bytes.h"

namespace perfsim {
namespace cost_internal {
namespace {

const std::vector<const Instruction*>& UsersOf(const UserMap& users, const Instruction* i) {
  static const std::vector<const Instruction*>* const kNone = new std::vector<const Instruction*>();
  auto it = users.find(i);
  return it == users.end() ? *kNone : it->second;
}

double Size(const Shape& shape) { return static_cast<double>(ShapeSizeBytes(shape)); }

// The read of `hlo` by a dynamic-slice `user`: the slice when hlo is the sliced operand, else
// (an index) hlo once, shared with the other plain users.
double DynamicSliceRead(const Instruction& hlo, const Instruction& user, bool& seen_trivial_user) {
  if (user.operand_count() > 0 && user.operand(0) == &hlo) return Size(user.shape());
  if (seen_trivial_user) return 0;
  seen_trivial_user = true;
  return Size(hlo.shape());
}

// The read of `hlo` by a dynamic-update-slice `user`: nothing when hlo is the updated buffer
// (aliased to the result), else hlo once.
double DynamicUpdateSliceRead(const Instruction& hlo, const Instruction& user,
                              bool& seen_trivial_user) {
  if (user.operand_count() > 0 && user.operand(0) == &hlo) return 0;
  if (seen_trivial_user) return 0;
  seen_trivial_user = true;
  return Size(hlo.shape());
}

// True count: a fusion that is a view of one contiguous layer (op_counts_internal.h
// IsSliceView) — a dynamic-slice of a parameter or an in-place dynamic-update-slice of a
// parameter into a parameter, with nothing else but bitcasts and scalar index arithmetic, as
// XLA:CPU wraps each lone slice of a scan's stacked operands ("dynamic-slice_bitcast_fusion",
// "bitcast_dynamic-update-slice_fusion").
bool IsViewFusion(const Computation& fused) {
  const Instruction* root = fused.root();
  while (root != nullptr && IsBitcastLike(*root) && root->operand_count() == 1) {
    root = root->operand(0);
  }
  if (root == nullptr || !IsSliceView(*root)) return false;
  for (const auto& inner : fused.instructions()) {
    const Instruction* i = inner.get();
    const bool scalar = i->shape().IsArray() && i->shape().rank() == 0;
    if (i != root && i->opcode() != Opcode::kParameter && !scalar && !IsBitcastLike(*i)) {
      return false;
    }
  }
  return true;
}

}  // namespace

double Counter::FusionParameterReadBytes(const Instruction& hlo) {
  auto found = parameter_reads_.find(&hlo);
  if (found != parameter_reads_.end()) return found->second;
  const double bytes = FusionParameterReadBytesUncached(hlo);
  parameter_reads_[&hlo] = bytes;
  return bytes;
}

double Counter::FusionParameterReadBytesUncached(const Instruction& hlo) {
  if (hlo.parent() == nullptr) return 0;
  const UserMap& users = Users(*hlo.parent());
  double size = 0;
  bool seen_trivial_user = false;
  for (const Instruction* user : UsersOf(users, &hlo)) {
    switch (user->opcode()) {
      case Opcode::kFusion: {
        // A nested fusion: when the parameter feeds the nested root directly, the nested
        // fusion's own users decide (slices of it read the slice); otherwise recurse into the
        // nested parameter.
        const Computation* nested = user->calls().empty() ? nullptr : user->calls()[0];
        if (nested == nullptr || user->parent() == nullptr) break;
        const UserMap& outer_users = Users(*user->parent());
        for (int64_t idx = 0; idx < user->operand_count(); ++idx) {
          if (user->operand(idx) != &hlo || idx >= nested->parameter_count()) continue;
          const Instruction* nested_parameter = nested->parameter(idx);
          if (nested_parameter == nullptr) continue;
          const Instruction* root = nested->root();
          const bool simple = root != nullptr && root->operand_count() > 0 &&
                              root->operand(0) == nested_parameter;
          bool nested_seen_trivial_user = false;
          for (const Instruction* fusion_user : UsersOf(outer_users, user)) {
            if (simple && fusion_user->opcode() == Opcode::kSlice) {
              size += Size(fusion_user->shape());
            } else if (simple && fusion_user->opcode() == Opcode::kDynamicSlice) {
              size += DynamicSliceRead(*user, *fusion_user, nested_seen_trivial_user);
            } else if (simple && fusion_user->opcode() == Opcode::kDynamicUpdateSlice) {
              size += DynamicUpdateSliceRead(*user, *fusion_user, nested_seen_trivial_user);
            } else if (!nested_seen_trivial_user) {
              nested_seen_trivial_user = true;
              size += FusionParameterReadBytes(*nested_parameter);
            }
          }
        }
        break;
      }
      case Opcode::kSlice:
        size += Size(user->shape());
        break;
      case Opcode::kDynamicSlice:
        size += DynamicSliceRead(hlo, *user, seen_trivial_user);
        break;
      case Opcode::kDynamicUpdateSlice:
        size += DynamicUpdateSliceRead(hlo, *user, seen_trivial_user);
        break;
      case Opcode::kBroadcast:
      case Opcode::kReshape:
        size += Size(hlo.shape());
        break;
      default:
        if (!seen_trivial_user) {
          seen_trivial_user = true;
          size += Size(hlo.shape());
        }
        break;
    }
  }
  return size;
}

OpCounts Counter::CountFusion(const Instruction& fusion) {
  const Computation* fused = fusion.calls().empty() ? nullptr : fusion.calls()[0];
  if (fused == nullptr || fused->root() == nullptr) return Default(fusion);
  if (!xla() && IsViewFusion(*fused)) {
    return OpCounts{.operand_bytes = std::vector<double>(fusion.operand_count(), 0.0)};
  }

  // XLA costs a custom fusion that contains a gather or scatter as that gather or scatter.
  // The entries that handler does not set keep the fusion's defaults.
  if (fusion.attributes().fusion_kind == FusionKind::kCustom) {
    for (const auto& inner : fused->instructions()) {
      if (inner->opcode() == Opcode::kGather || inner->opcode() == Opcode::kScatter) {
        OpCounts c = Default(fusion);
        const OpCounts as_inner = Count(*inner);
        c.flops = as_inner.flops;
        c.transcendentals = as_inner.transcendentals;
        c.bytes_accessed = as_inner.bytes_accessed;
        c.output_bytes = as_inner.output_bytes;
        if (c.operand_bytes.size() < as_inner.operand_bytes.size()) {
          c.operand_bytes.resize(as_inner.operand_bytes.size(), 0.0);
        }
        for (size_t i = 0; i < as_inner.operand_bytes.size(); ++i) {
          c.operand_bytes[i] = as_inner.operand_bytes[i];
        }
        return c;
      }
    }
  }

  // Flops, transcendentals and XLA's per-operand entries start as the sums over the fused
  // instructions; the bytes are then recomputed for the kernel boundary and the entries of the
  // fusion's own operands overwritten (XLA keeps the fused instructions' entries of higher
  // operand indices, so OpCounts::operand_bytes can be longer than the operand list).
  const OpCounts sub = Sum(*fused);
  OpCounts c;
  c.flops = sub.flops;
  c.transcendentals = sub.transcendentals;
  c.operand_bytes = sub.operand_bytes;

  // Results: every array of the result shape, a dynamic-update-slice root only its update.
  const Instruction* root = fused->root();
  auto charge_output = [&](const Shape& subshape, const Instruction* producer) {
    double size = Size(subshape);
    if (producer->opcode() == Opcode::kDynamicUpdateSlice && producer->operand_count() > 1) {
      size = Size(producer->operand(1)->shape());
    }
    Add(c.bytes_accessed, size);
    Add(c.output_bytes, size);
  };
  const Shape& shape = fusion.shape();
  if (!shape.IsTuple()) {
    if (shape.IsArray()) charge_output(shape, root);
  } else {
    const bool root_is_tuple = root->opcode() == Opcode::kTuple;
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      const Shape& element = shape.tuple_shapes(i);
      const Instruction* producer =
          root_is_tuple && i < root->operand_count() ? root->operand(i) : root;
      if (element.IsArray()) {
        charge_output(element, producer);
      } else if (element.IsTuple()) {
        // Deeper elements are charged at their full size.
        const double size = static_cast<double>(LeafBytes(element));
        Add(c.bytes_accessed, size);
        Add(c.output_bytes, size);
      }
    }
  }

  // Parameters, by how the fused code reads them. A tuple parameter is followed into the
  // get-tuple-elements of each leaf; a leaf nobody extracts charges the pointer table.
  if (static_cast<int64_t>(c.operand_bytes.size()) < fusion.operand_count()) {
    c.operand_bytes.resize(fusion.operand_count(), 0.0);
  }
  for (int64_t i = 0; i < fused->parameter_count() && i < fusion.operand_count(); ++i) {
    const Instruction* parameter = fused->parameter(i);
    if (parameter == nullptr) continue;
    double read = 0;
    if (!parameter->shape().IsTuple()) {
      read = FusionParameterReadBytes(*parameter);
    } else {
      const UserMap& users = Users(*fused);
      std::vector<std::vector<int64_t>> leaf_indices;
      std::vector<int64_t> index;
      auto collect = [&](auto&& self, const Shape& s) -> void {
        if (!s.IsTuple()) {
          leaf_indices.push_back(index);
          return;
        }
        for (int64_t e = 0; e < s.tuple_size(); ++e) {
          index.push_back(e);
          self(self, s.tuple_shapes(e));
          index.pop_back();
        }
      };
      collect(collect, parameter->shape());
      for (const std::vector<int64_t>& leaf : leaf_indices) {
        const Instruction* gte = parameter;
        for (int64_t e : leaf) {
          for (const Instruction* user : UsersOf(users, gte)) {
            if (user->opcode() == Opcode::kGetTupleElement &&
                user->attributes().tuple_index.value_or(-1) == e) {
              gte = user;
              break;
            }
          }
        }
        read += FusionParameterReadBytes(*gte);
      }
    }
    c.operand_bytes[i] = R(read);
    Add(c.bytes_accessed, read);
  }

  // Fused constants bigger than an immediate (one element) are read from memory once.
  for (const auto& inner : fused->instructions()) {
    if (inner->opcode() == Opcode::kConstant && inner->shape().IsArray() &&
        ElementsIn(inner->shape()) > 1) {
      Add(c.bytes_accessed, Size(inner->shape()));
    }
  }
  return c;
}

}  // namespace cost_internal
}  // namespace perfsim
