// The dataflow pass of user_module_checks.h. Each instruction gets a Value: its dimension names,
// the parameter it is a view of, whether it depends on the routing (router_w) or on the expert
// outputs (wo), and its token order. The checks read the Values of each dot's operands.
#include "sim/validate/user_module_checks.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/ir/opcode.h"
#include "sim/ir/shape.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// kNone: no token order (weights, indices, constants); kUnknown: mixed or lost.
enum class Order { kNone, kToken, kSorted, kUnknown };

struct Value {
  std::string names;        // one logical name per dimension, '?' unknown
  std::string source;       // the parameter this is a view of (convert, copy, transpose), or ""
  std::string source_dims;  // that parameter's own names, in its order
  bool routing = false;     // depends on router_w
  bool expert = false;      // depends on wo (expert outputs)
  Order order = Order::kNone;
  std::vector<Value> elements;  // tuple elements, when known
};

Order Merge(Order a, Order b) {
  if (a == Order::kNone) return b;
  if (b == Order::kNone || a == b) return a;
  return Order::kUnknown;
}

Order Flip(Order o) {
  return o == Order::kToken ? Order::kSorted : o == Order::kSorted ? Order::kToken : o;
}

std::string Unknown(const Shape& shape) {
  return shape.IsArray() ? std::string(shape.rank(), '?') : std::string();
}

std::string ShapeNames(absl::string_view names) {
  std::vector<std::string> parts;
  for (char c : names) parts.emplace_back(1, c);
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

// A gather or scatter that moves whole rows along one dimension, by one index per row, with
// no batching dimensions: a permutation of tokens (or of their K copies). A gather that picks
// one of E entries per token (the top-k's, batched over tokens) is not.
bool IsRowPermutation(const Instruction& in) {
  const InstructionAttributes& a = in.attributes();
  const Shape& operand = in.operand(0)->shape();
  if (!operand.IsArray()) return false;
  if (in.opcode() == Opcode::kGather && a.gather_dimension_numbers.has_value()) {
    const GatherDimensionNumbers& g = *a.gather_dimension_numbers;
    if (g.start_index_map.size() != 1 || !g.operand_batching_dims.empty() ||
        a.gather_slice_sizes.size() != static_cast<size_t>(operand.rank())) {
      return false;
    }
    for (int64_t d = 0; d < operand.rank(); ++d) {
      const int64_t want = d == g.start_index_map[0] ? 1 : operand.dimensions(d);
      if (a.gather_slice_sizes[d] != want) return false;
    }
    return true;
  }
  if (in.opcode() == Opcode::kScatter && a.scatter_dimension_numbers.has_value()) {
    const ScatterDimensionNumbers& s = *a.scatter_dimension_numbers;
    if (s.scatter_dims_to_operand_dims.size() != 1 || !s.input_batching_dims.empty() ||
        s.inserted_window_dims != s.scatter_dims_to_operand_dims) {
      return false;
    }
    const Shape& updates = in.operand(in.operand_count() - 1)->shape();
    if (!updates.IsArray() ||
        static_cast<int64_t>(s.update_window_dims.size()) != operand.rank() - 1) {
      return false;
    }
    for (int64_t d = 0, w = 0; d < operand.rank(); ++d) {
      if (d == s.scatter_dims_to_operand_dims[0]) continue;
      if (updates.dimensions(s.update_window_dims[w++]) != operand.dimensions(d)) return false;
    }
    return true;
  }
  return false;
}

bool IsView(Opcode op) {
  return op == Opcode::kConvert || op == Opcode::kCopy || op == Opcode::kBitcastConvert ||
         op == Opcode::kTranspose;
}

class Pass {
 public:
  Pass(const std::vector<TensorSpec>& parameters, PrimitiveType router_type)
      : parameters_(parameters), router_type_(router_type) {}

  absl::Status Run(const Computation& computation, const std::vector<Value>& arguments,
                   Value* result) {
    std::map<const Instruction*, Value> values;
    absl::StatusOr<std::vector<Instruction*>> order = computation.PostOrder();
    if (!order.ok()) return absl::OkStatus();  // the verifier reports a cycle
    for (const Instruction* instruction : *order) {
      std::vector<const Value*> operands;
      for (const Instruction* operand : instruction->operands()) {
        operands.push_back(&values[operand]);
      }
      Value v;
      if (absl::Status s = Visit(*instruction, operands, arguments, &v); !s.ok()) return s;
      values[instruction] = std::move(v);
    }
    if (result != nullptr && computation.root() != nullptr) *result = values[computation.root()];
    return absl::OkStatus();
  }

 private:
  absl::Status Visit(const Instruction& in, const std::vector<const Value*>& ops,
                     const std::vector<Value>& arguments, Value* v) {
    const Shape& shape = in.shape();
    const Opcode op = in.opcode();
    v->names = Unknown(shape);
    for (const Value* o : ops) {
      v->routing |= o->routing;
      v->expert |= o->expert;
    }
    const InstructionAttributes& a = in.attributes();
    switch (op) {
      case Opcode::kParameter: {
        const int64_t i = a.parameter_number.value_or(0);
        if (in.parent() != nullptr && in.parent()->is_entry()) {
          if (i < static_cast<int64_t>(parameters_.size()) &&
              static_cast<int64_t>(parameters_[i].dims.size()) == shape.rank()) {
            const TensorSpec& t = parameters_[i];
            v->names = v->source_dims = t.dims;
            v->source = t.name;
            v->routing = t.name == "router_w";
            v->expert = t.name == "wo";
            v->order = t.name == "x" || t.name == "dy" ? Order::kToken : Order::kNone;
          }
        } else if (i < static_cast<int64_t>(arguments.size())) {
          *v = arguments[i];
          if (v->names.size() != static_cast<size_t>(shape.rank())) v->names = Unknown(shape);
        }
        return absl::OkStatus();
      }
      case Opcode::kDot:
      case Opcode::kRaggedDot: {
        if (ops.size() < 2) break;
        PERFSIM_RETURN_IF_ERROR(CheckDot(in, *ops[0], *ops[1]));
        v->order = Merge(ops[0]->order, ops[1]->order);
        v->names = DotNames(in, *ops[0], *ops[1]);
        break;
      }
      case Opcode::kMultiply:
        if (ops.size() == 2) PERFSIM_RETURN_IF_ERROR(CheckCombine(in, *ops[0], *ops[1]));
        ElementwiseInto(shape, ops, v);
        break;
      case Opcode::kGather: {
        if (ops.size() < 2) break;
        const Value& data = *ops[0];
        v->order = ops[1]->routing && IsRowPermutation(in) ? Flip(data.order) : data.order;
        if (a.gather_dimension_numbers.has_value()) {
          const GatherDimensionNumbers& g = *a.gather_dimension_numbers;
          std::vector<char> kept;
          for (int64_t d = 0; d < static_cast<int64_t>(data.names.size()); ++d) {
            if (std::count(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end(), d) ||
                std::count(g.operand_batching_dims.begin(), g.operand_batching_dims.end(), d)) {
              continue;
            }
            kept.push_back(data.names[d]);
          }
          for (size_t j = 0; j < g.offset_dims.size() && j < kept.size(); ++j) {
            if (g.offset_dims[j] >= 0 && g.offset_dims[j] < shape.rank())
              v->names[g.offset_dims[j]] = kept[j];
          }
        }
        break;
      }
      case Opcode::kScatter: {
        if (ops.size() < 3) break;
        const Value& updates = *ops[ops.size() - 1];
        v->order = ops[1]->routing && IsRowPermutation(in) ? Flip(updates.order) : updates.order;
        if (ops[0]->order != Order::kNone && !ops[1]->routing) {
          v->order = Merge(v->order, ops[0]->order);
        }
        if (ops[0]->names.size() == v->names.size()) v->names = ops[0]->names;
        break;
      }
      case Opcode::kBroadcast:
        if (!ops.empty()) {
          v->order = ops[0]->order;
          if (a.dimensions.has_value()) {
            for (size_t j = 0; j < a.dimensions->size() && j < ops[0]->names.size(); ++j) {
              const int64_t to = (*a.dimensions)[j];
              if (to >= 0 && to < shape.rank()) v->names[to] = ops[0]->names[j];
            }
          }
        }
        break;
      case Opcode::kTranspose:
        if (!ops.empty() && a.dimensions.has_value()) {
          *v = *ops[0];
          v->elements.clear();
          v->names = Unknown(shape);
          for (size_t j = 0; j < a.dimensions->size() && j < v->names.size(); ++j) {
            const int64_t from = (*a.dimensions)[j];
            if (from >= 0 && from < static_cast<int64_t>(ops[0]->names.size())) {
              v->names[j] = ops[0]->names[from];
            }
          }
        }
        break;
      case Opcode::kReshape:
      case Opcode::kBitcast:
        if (!ops.empty()) {
          v->order = ops[0]->order;
          const Shape& from = in.operand(0)->shape();
          // A bitcast between layouts is a transpose in disguise: names only when the layouts
          // agree (or none is written).
          const bool same_layout = op == Opcode::kReshape || from.layout() == shape.layout() ||
                                   !from.has_layout() || !shape.has_layout();
          if (from.IsArray() && shape.IsArray() && same_layout) {
            const int64_t r0 = from.rank(), r1 = shape.rank();
            for (int64_t i = 0; i < r0 && i < r1 && from.dimensions(i) == shape.dimensions(i);
                 ++i) {
              v->names[i] = ops[0]->names[i];
            }
            for (int64_t i = 1;
                 i <= r0 && i <= r1 && from.dimensions(r0 - i) == shape.dimensions(r1 - i); ++i) {
              v->names[r1 - i] = ops[0]->names[r0 - i];
            }
          }
        }
        break;
      case Opcode::kReduce:
        if (!ops.empty()) {
          v->order = ops[0]->order;
          if (shape.IsArray() && a.dimensions.has_value()) {
            std::string kept;
            for (int64_t d = 0; d < static_cast<int64_t>(ops[0]->names.size()); ++d) {
              if (!std::count(a.dimensions->begin(), a.dimensions->end(), d)) {
                kept += ops[0]->names[d];
              }
            }
            if (kept.size() == v->names.size()) v->names = kept;
          }
        }
        break;
      case Opcode::kFusion:
      case Opcode::kCall:
        if (!in.calls().empty() || in.to_apply() != nullptr) {
          std::vector<Value> args;
          for (const Value* o : ops) args.push_back(*o);
          const Computation* called = in.calls().empty() ? in.to_apply() : in.calls()[0];
          Value out;
          // Calls nest as deep as the module does; a verified module has no cycles, and the
          // bound keeps a pathological nesting from exhausting the stack.
          if (called == nullptr || depth_ >= kMaxDepth) break;
          ++depth_;
          absl::Status nested = Run(*called, args, &out);
          --depth_;
          PERFSIM_RETURN_IF_ERROR(nested);
          out.routing |= v->routing;
          out.expert |= v->expert;
          *v = std::move(out);
          if (v->names.size() != static_cast<size_t>(shape.IsArray() ? shape.rank() : 0)) {
            v->names = Unknown(shape);
          }
        }
        break;
      case Opcode::kTuple:
        for (const Value* o : ops) {
          v->elements.push_back(*o);
          v->order = Merge(v->order, o->order);
        }
        break;
      case Opcode::kGetTupleElement: {
        const int64_t i = a.tuple_index.value_or(0);
        if (!ops.empty() && i < static_cast<int64_t>(ops[0]->elements.size())) {
          *v = ops[0]->elements[i];
        } else if (!ops.empty()) {
          v->order = ops[0]->order;
        }
        if (v->names.size() != static_cast<size_t>(shape.IsArray() ? shape.rank() : 0)) {
          v->names = Unknown(shape);
        }
        break;
      }
      case Opcode::kWhile:
      case Opcode::kConditional:
        v->order = Order::kUnknown;
        break;
      case Opcode::kSort:
        // Sorting values by a key reorders them: order lost (indices have none anyway).
        v->order = Order::kNone;
        break;
      default:
        if (IsCollective(op) || op == Opcode::kSlice || op == Opcode::kDynamicSlice ||
            op == Opcode::kPad || op == Opcode::kReverse || IsView(op)) {
          if (!ops.empty()) {
            v->order = ops[0]->order;
            if (ops[0]->names.size() == v->names.size()) v->names = ops[0]->names;
            if (IsView(op)) {
              v->source = ops[0]->source;
              v->source_dims = ops[0]->source_dims;
            }
          }
        } else if (IsElementwiseUnary(op) || IsElementwiseBinary(op) || op == Opcode::kSelect ||
                   op == Opcode::kClamp || op == Opcode::kConcatenate ||
                   op == Opcode::kDynamicUpdateSlice) {
          ElementwiseInto(shape, ops, v);
        } else {
          for (const Value* o : ops) v->order = Merge(v->order, o->order);
        }
        break;
    }
    // Integer and boolean arrays (indices, masks) carry no token order; tuples keep theirs.
    if (shape.IsArray() && !IsFloatingPoint(shape.element_type())) v->order = Order::kNone;
    return absl::OkStatus();
  }

  // Same-shaped operands: names agree position by position ('?' where they differ).
  static void ElementwiseInto(const Shape& shape, const std::vector<const Value*>& ops, Value* v) {
    bool first = true;
    for (const Value* o : ops) {
      if (o->names.size() != v->names.size()) continue;
      if (IsFloatingPoint(shape.element_type()) || shape.element_type() == PrimitiveType::kPred) {
        v->order = Merge(v->order, o->order);
      }
      for (size_t d = 0; d < v->names.size(); ++d) {
        const char n = o->names[d];
        if (first) {
          v->names[d] = n;
        } else if (v->names[d] == '?' || n == '?' || v->names[d] != n) {
          v->names[d] =
              v->names[d] == n ? n : (v->names[d] == '?' ? n : (n == '?' ? v->names[d] : '?'));
        }
      }
      first = false;
    }
  }

  static std::string DotNames(const Instruction& in, const Value& lhs, const Value& rhs) {
    const InstructionAttributes& a = in.attributes();
    const DotDimensionNumbers* d = nullptr;
    std::vector<int64_t> group;
    if (a.dot_dimension_numbers.has_value()) d = &*a.dot_dimension_numbers;
    if (a.ragged_dot_dimension_numbers.has_value()) {
      d = &a.ragged_dot_dimension_numbers->dot;
      group = a.ragged_dot_dimension_numbers->rhs_group_dimensions;
    }
    std::string out;
    if (d == nullptr) return Unknown(in.shape());
    auto in_list = [](const std::vector<int64_t>& list, int64_t i) {
      return std::find(list.begin(), list.end(), i) != list.end();
    };
    for (int64_t b : d->lhs_batch_dimensions)
      out += b < static_cast<int64_t>(lhs.names.size()) ? lhs.names[b] : '?';
    for (int64_t i = 0; i < static_cast<int64_t>(lhs.names.size()); ++i) {
      if (!in_list(d->lhs_batch_dimensions, i) && !in_list(d->lhs_contracting_dimensions, i)) {
        out += lhs.names[i];
      }
    }
    for (int64_t i = 0; i < static_cast<int64_t>(rhs.names.size()); ++i) {
      if (!in_list(d->rhs_batch_dimensions, i) && !in_list(d->rhs_contracting_dimensions, i) &&
          !in_list(group, i)) {
        out += rhs.names[i];
      }
    }
    return static_cast<int64_t>(out.size()) == in.shape().rank() ? out : Unknown(in.shape());
  }

  absl::Status CheckDot(const Instruction& in, const Value& lhs, const Value& rhs) {
    const InstructionAttributes& a = in.attributes();
    const DotDimensionNumbers* d = a.dot_dimension_numbers.has_value() ? &*a.dot_dimension_numbers
                                   : a.ragged_dot_dimension_numbers.has_value()
                                       ? &a.ragged_dot_dimension_numbers->dot
                                       : nullptr;
    // The router matmul's precision (known_bugs.md #28).
    if (lhs.source == "router_w" || rhs.source == "router_w") {
      const Shape& l = in.operand(0)->shape();
      const Shape& r = in.operand(1)->shape();
      if (IsFloatingPoint(l.element_type()) &&
          (l.element_type() != router_type_ || r.element_type() != router_type_)) {
        const PrimitiveType low =
            l.element_type() != router_type_ ? l.element_type() : r.element_type();
        check_ = "router_precision";
        return absl::FailedPreconditionError(absl::StrCat(
            in.name(), ": router matmul in ", PrimitiveTypeName(low), ": ", l.ToString(false),
            " x ", r.ToString(false), "; the model's router runs in ",
            PrimitiveTypeName(router_type_),
            " (known_bugs.md #28: router scores in a low precision underflow and round the "
            "top-k weights)"));
      }
    }
    if (d == nullptr) return absl::OkStatus();
    if (absl::Status s = CheckPairs(in, "contracted", lhs, rhs, d->lhs_contracting_dimensions,
                                    d->rhs_contracting_dimensions);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            CheckPairs(in, "batched", lhs, rhs, d->lhs_batch_dimensions, d->rhs_batch_dimensions);
        !s.ok()) {
      return s;
    }
    return CheckCombine(in, lhs, rhs);
  }

  absl::Status CheckPairs(const Instruction& in, absl::string_view how, const Value& lhs,
                          const Value& rhs, const std::vector<int64_t>& l,
                          const std::vector<int64_t>& r) {
    for (size_t i = 0; i < l.size() && i < r.size(); ++i) {
      if (l[i] >= static_cast<int64_t>(lhs.names.size()) ||
          r[i] >= static_cast<int64_t>(rhs.names.size())) {
        continue;
      }
      const char a = lhs.names[l[i]], b = rhs.names[r[i]];
      if (a == '?' || b == '?' || a == b) continue;
      check_ = "contracting_dimensions";
      // Name the weight read in the wrong layout: the side that is a view of a parameter other
      // than the activations (rhs first: einsum writes weights second).
      const bool rhs_weight = !rhs.source.empty() && rhs.source != "x" && rhs.source != "dy";
      const bool lhs_weight = !lhs.source.empty() && lhs.source != "x" && lhs.source != "dy";
      if (rhs_weight || lhs_weight) {
        const Value& w = rhs_weight ? rhs : lhs;
        const Value& other = rhs_weight ? lhs : rhs;
        const char got = rhs_weight ? b : a, want = rhs_weight ? a : b;
        const int64_t dim = rhs_weight ? r[i] : l[i];
        // The layout the module reads it in: its own names with the two axes swapped.
        std::string read_as = w.source_dims;
        const size_t p = read_as.find(got), q = read_as.find(want);
        if (p != std::string::npos && q != std::string::npos) std::swap(read_as[p], read_as[q]);
        return absl::FailedPreconditionError(absl::StrCat(
            in.name(), ": ", w.source, " is ", how, " over its ", std::string(1, got),
            " axis (dimension ", dim, " of ", ShapeNames(w.names), "), against ",
            std::string(1, want), " of ", other.source.empty() ? "the other operand" : other.source,
            ": shapes ", ShapeNames(read_as), " vs expected ", ShapeNames(w.source_dims),
            " (known_bugs.md #1: a weight read in the wrong layout; with ", std::string(1, got),
            " and ", std::string(1, want), " of equal size only the names show it)"));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          in.name(), ": expected ", how, " dimensions of the same logical name; got lhs dimension ",
          l[i], " (", std::string(1, a), ") vs rhs dimension ", r[i], " (", std::string(1, b),
          ")"));
    }
    return absl::OkStatus();
  }

  // A combine weights expert outputs by router weights; both must be in the same order.
  absl::Status CheckCombine(const Instruction& in, const Value& a, const Value& b) {
    if (!IsFloatingPoint(in.shape().element_type())) return absl::OkStatus();
    auto weights = [](const Value& v) { return v.routing && !v.expert; };
    const Value* experts = a.expert ? &a : b.expert ? &b : nullptr;
    const Value* router = experts == &a ? &b : &a;
    if (experts == nullptr || !weights(*router)) return absl::OkStatus();
    if (experts->order == Order::kSorted && router->order == Order::kToken) {
      check_ = "combine_order";
      return absl::FailedPreconditionError(absl::StrCat(
          in.name(), ": combine reads expert outputs before the inverse permutation: ",
          in.operand(experts == &a ? 0 : 1)->name(),
          " (expert outputs, still in the expert-sorted order of the dispatch gather) is "
          "weighted by ",
          in.operand(experts == &a ? 1 : 0)->name(),
          " (router weights, in token order); expected the expert outputs un-permuted (a "
          "gather or scatter by the inverse of the dispatch permutation) first"));
    }
    return absl::OkStatus();
  }

 public:
  const std::string& check() const { return check_; }

 private:
  const std::vector<TensorSpec>& parameters_;
  PrimitiveType router_type_;
  std::string check_;  // the failing check's name
  static constexpr int kMaxDepth = 64;
  int depth_ = 0;
};

}  // namespace

absl::Status CheckUserModule(const Module& module, const std::vector<TensorSpec>& parameters,
                             PrimitiveType router_type, std::string* check) {
  if (module.entry() == nullptr) return absl::OkStatus();
  Pass pass(parameters, router_type);
  absl::Status status = pass.Run(*module.entry(), {}, nullptr);
  if (check != nullptr) *check = pass.check();
  return status;
}

}  // namespace perfsim
