// sort (multi-operand, arbitrary comparator) and topk.
//
// Sorting is always stable (a merge sort that keeps equal elements in input order), which is a
// valid result for is_stable=false too, and never misbehaves with a comparator that is not a
// strict weak order. The comparators JAX emits (NativeComparator: compares of parameters,
// JAX's NaN / -0.0 canonicalisation, and / or / not) run natively, with the same results as
// interpreting them; others are called per comparison (a bf16 argsort of 1024x512 took 6 s).
#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/interp/array_util.h"
#include "sim/interp/element_types.h"
#include "sim/interp/evaluator.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

// Stable bottom-up merge sort of `items` by `less` (used as "right goes before left").
template <typename Less>
void MergeSort(std::vector<int64_t>* items, Less&& less) {
  const int64_t n = static_cast<int64_t>(items->size());
  std::vector<int64_t> buffer(n);
  std::vector<int64_t>* src = items;
  std::vector<int64_t>* dst = &buffer;
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = std::min(lo + width, n);
      const int64_t hi = std::min(lo + 2 * width, n);
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) {
        // Take from the right only when it is strictly less: equal keys keep input order.
        if (less((*src)[j], (*src)[i])) {
          (*dst)[o++] = (*src)[j++];
        } else {
          (*dst)[o++] = (*src)[i++];
        }
      }
      while (i < mid) (*dst)[o++] = (*src)[i++];
      while (j < hi) (*dst)[o++] = (*src)[j++];
    }
    std::swap(src, dst);
  }
  if (src != items) *items = *src;
}

// A comparator run natively: and / or / not over compares whose operands are sort parameters,
// each optionally canonicalised the way JAX does before a total-order compare,
//   canon(p) = select(compare(p, p, NE), nan, select(compare(p, zero, EQ), zero, p)),
// which covers every comparator JAX emits: lt/gt on one key (stable argsort passes the iota
// as a second operand it never compares), and lexicographic or(lt(k0), and(eq(k0), ...)) on
// several keys. Each piece evaluates exactly what the interpreter would: the same
// ApplyCompare<T> on the same loaded values, select picking the same bytes.
class NativeComparator {
 public:
  // nullopt when `c` has another form (the caller interprets it per comparison) or is larger
  // than a few levels of boolean structure (kMaxDepth, kMaxNodes).
  static std::optional<NativeComparator> Compile(const Computation& c, OperandValues operands);

  // The comparator's result for elements x (parameters 2k) and y (parameters 2k+1).
  bool operator()(int64_t x, int64_t y) const { return Eval(root_, x, y); }

 private:
  static constexpr int kMaxDepth = 16;
  static constexpr size_t kMaxNodes = 256;
  // kCompare: a compare of sort parameters; kPredCompare: a compare of two pred results
  // (compare(lt, gt), direction=EQ); kSelect: select(a, b, c) on preds.
  enum class Kind { kCompare, kPredCompare, kAnd, kOr, kNot, kSelect };
  struct Node {
    Kind kind = Kind::kCompare;
    int a = -1;
    int b = -1;
    int c = -1;
    ComparisonDirection direction = ComparisonDirection::kEq;
    std::function<bool(int64_t, int64_t)> compare;
  };

  bool Eval(int node, int64_t x, int64_t y) const {
    const Node& n = nodes_[node];
    switch (n.kind) {
      case Kind::kCompare:
        return n.compare(x, y);
      case Kind::kAnd:
        return Eval(n.a, x, y) && Eval(n.b, x, y);
      case Kind::kOr:
        return Eval(n.a, x, y) || Eval(n.b, x, y);
      case Kind::kNot:
        return !Eval(n.a, x, y);
      case Kind::kPredCompare:
        return ApplyCompare<PredTraits>(n.direction, false, Eval(n.a, x, y), Eval(n.b, x, y));
      case Kind::kSelect:
        return Eval(n.a, x, y) ? Eval(n.b, x, y) : Eval(n.c, x, y);
    }
    return false;
  }

  // Appends the node for `instruction`; -1 when it has no native form.
  int Add(const Instruction& instruction, int depth);

  OperandValues operands_;
  std::vector<Node> nodes_;
  int root_ = -1;
};

bool IsScalarOf(const Instruction& i, PrimitiveType type) {
  return i.shape().IsArray() && i.shape().rank() == 0 && i.shape().element_type() == type;
}

bool IsPredScalar(const Instruction& i) { return IsScalarOf(i, PrimitiveType::kPred); }

// A compare's direction and order type, when it has a native form for element type `type`.
struct CompareSpec {
  ComparisonDirection direction = ComparisonDirection::kLt;
  bool total_order = false;
};
std::optional<CompareSpec> SpecOf(const Instruction& compare, PrimitiveType type, ElementKind kind) {
  if (compare.opcode() != Opcode::kCompare || compare.operand_count() != 2 ||
      !IsPredScalar(compare) || !compare.attributes().comparison_direction.has_value()) {
    return std::nullopt;
  }
  const CompareSpec spec{*compare.attributes().comparison_direction,
                         compare.attributes().comparison_type == "TOTALORDER"};
  if (!CheckCompareType(spec.direction, kind, type).ok()) return std::nullopt;
  return spec;
}

// One side of a compare: sort parameter `parameter`, canonicalised or not.
struct KeyOperand {
  int64_t parameter = -1;
  bool canonical = false;
  CompareSpec is_nan;        // compare(p, p, NE)
  CompareSpec is_zero;       // compare(p, zero, EQ)
  const Literal* nan = nullptr;
  const Literal* zero = nullptr;         // compared against
  const Literal* zero_result = nullptr;  // selected when equal
};

const Literal* ScalarConstant(const Instruction& i, PrimitiveType type) {
  if (i.opcode() != Opcode::kConstant || !IsScalarOf(i, type)) return nullptr;
  const std::optional<Literal>& literal = i.attributes().literal;
  return literal.has_value() ? &*literal : nullptr;
}

std::optional<KeyOperand> MatchKey(const Instruction& i, PrimitiveType type, ElementKind kind) {
  if (!IsScalarOf(i, type)) return std::nullopt;
  if (i.opcode() == Opcode::kParameter) {
    return KeyOperand{.parameter = i.attributes().parameter_number.value_or(-1)};
  }
  // select(compare(p, p, NE), nan, select(compare(p, zero, EQ), zero', p))
  if (i.opcode() != Opcode::kSelect) return std::nullopt;
  const Instruction& ne = *i.operand(0);
  const Instruction& inner = *i.operand(2);
  if (inner.opcode() != Opcode::kSelect || !IsScalarOf(inner, type)) return std::nullopt;
  const Instruction& eq = *inner.operand(0);
  const Instruction* p = inner.operand(2);
  if (p->opcode() != Opcode::kParameter) return std::nullopt;
  const std::optional<CompareSpec> is_nan = SpecOf(ne, type, kind);
  const std::optional<CompareSpec> is_zero = SpecOf(eq, type, kind);
  if (!is_nan.has_value() || !is_zero.has_value() || ne.operand(0) != p || ne.operand(1) != p ||
      eq.operand(0) != p || !IsScalarOf(*ne.operand(0), type) || !IsScalarOf(*eq.operand(1), type)) {
    return std::nullopt;
  }
  KeyOperand key{.parameter = p->attributes().parameter_number.value_or(-1),
                 .canonical = true,
                 .is_nan = *is_nan,
                 .is_zero = *is_zero,
                 .nan = ScalarConstant(*i.operand(1), type),
                 .zero = ScalarConstant(*eq.operand(1), type),
                 .zero_result = ScalarConstant(*inner.operand(1), type)};
  if (key.nan == nullptr || key.zero == nullptr || key.zero_result == nullptr) return std::nullopt;
  return key;
}

std::optional<NativeComparator> NativeComparator::Compile(const Computation& c,
                                                          OperandValues operands) {
  const int64_t n = static_cast<int64_t>(operands.size());
  if (c.root() == nullptr || !IsPredScalar(*c.root()) || c.parameter_count() != 2 * n) {
    return std::nullopt;
  }
  for (int64_t p = 0; p < 2 * n; ++p) {
    const Instruction* parameter = c.parameter(p);
    if (parameter == nullptr || !operands[p / 2]->is_array() ||
        !IsScalarOf(*parameter, operands[p / 2]->array_shape().element_type())) {
      return std::nullopt;
    }
  }
  NativeComparator comparator;
  comparator.operands_ = operands;
  comparator.root_ = comparator.Add(*c.root(), 0);
  if (comparator.root_ < 0) return std::nullopt;
  return comparator;
}

int NativeComparator::Add(const Instruction& instruction, int depth) {
  // Shared operands are expanded per use: the node bound keeps a comparator that reuses its
  // results heavily from growing exponentially (it is interpreted instead).
  if (depth > kMaxDepth || nodes_.size() >= kMaxNodes || !IsPredScalar(instruction)) return -1;
  Node node;
  switch (instruction.opcode()) {
    case Opcode::kAnd:
    case Opcode::kOr:
      if (instruction.operand_count() != 2) return -1;
      node.kind = instruction.opcode() == Opcode::kAnd ? Kind::kAnd : Kind::kOr;
      node.a = Add(*instruction.operand(0), depth + 1);
      node.b = Add(*instruction.operand(1), depth + 1);
      if (node.a < 0 || node.b < 0) return -1;
      break;
    case Opcode::kNot:
      if (instruction.operand_count() != 1) return -1;
      node.kind = Kind::kNot;
      node.a = Add(*instruction.operand(0), depth + 1);
      if (node.a < 0) return -1;
      break;
    case Opcode::kSelect:
      if (instruction.operand_count() != 3) return -1;
      node.kind = Kind::kSelect;
      node.a = Add(*instruction.operand(0), depth + 1);
      node.b = Add(*instruction.operand(1), depth + 1);
      node.c = Add(*instruction.operand(2), depth + 1);
      if (node.a < 0 || node.b < 0 || node.c < 0) return -1;
      break;
    case Opcode::kCompare: {
      if (instruction.operand_count() != 2) return -1;
      const Shape& operand_shape = instruction.operand(0)->shape();
      if (!operand_shape.IsArray() || operand_shape.rank() != 0) return -1;
      const PrimitiveType type = operand_shape.element_type();
      if (type == PrimitiveType::kPred &&
          instruction.operand(0)->opcode() != Opcode::kParameter &&
          instruction.operand(1)->opcode() != Opcode::kParameter) {
        // A compare of two pred results, e.g. compare(lt, gt), direction=EQ for "neither".
        const std::optional<CompareSpec> spec = SpecOf(instruction, type, ElementKind::kPred);
        if (!spec.has_value()) return -1;
        node.kind = Kind::kPredCompare;
        node.direction = spec->direction;
        node.a = Add(*instruction.operand(0), depth + 1);
        node.b = Add(*instruction.operand(1), depth + 1);
        if (node.a < 0 || node.b < 0) return -1;
        break;
      }
      bool ok = true;
      const absl::Status status = DispatchElementType(type, "", [&](auto traits) {
        using T = decltype(traits);
        const std::optional<CompareSpec> spec = SpecOf(instruction, type, T::kKind);
        const std::optional<KeyOperand> lhs = MatchKey(*instruction.operand(0), type, T::kKind);
        const std::optional<KeyOperand> rhs = MatchKey(*instruction.operand(1), type, T::kKind);
        const int64_t n = static_cast<int64_t>(operands_.size());
        auto in_range = [n](const std::optional<KeyOperand>& k) {
          return k.has_value() && k->parameter >= 0 && k->parameter < 2 * n;
        };
        if (!spec.has_value() || !in_range(lhs) || !in_range(rhs)) {
          ok = false;
          return absl::OkStatus();
        }
        // A key operand's value for the pair (x, y): parameter 2k reads operand k at x,
        // parameter 2k+1 at y; then JAX's canonicalisation, evaluated as the select would.
        struct Side {
          const uint8_t* data;
          bool second;
          KeyOperand key;
          typename T::Compute nan{}, zero{}, zero_result{};
        };
        auto side = [&](const KeyOperand& k) {
          Side s{operands_[k.parameter / 2]->array().data().data(), k.parameter % 2 == 1, k};
          if (k.canonical) {
            s.nan = T::Load(k.nan->data().data(), 0);
            s.zero = T::Load(k.zero->data().data(), 0);
            s.zero_result = T::Load(k.zero_result->data().data(), 0);
          }
          return s;
        };
        auto value = [](const Side& s, int64_t x, int64_t y) {
          const typename T::Compute v = T::Load(s.data, s.second ? y : x);
          if (!s.key.canonical) return v;
          if (ApplyCompare<T>(s.key.is_nan.direction, s.key.is_nan.total_order, v, v)) {
            return s.nan;
          }
          return ApplyCompare<T>(s.key.is_zero.direction, s.key.is_zero.total_order, v, s.zero)
                     ? s.zero_result
                     : v;
        };
        node.compare = [a = side(*lhs), b = side(*rhs), spec = *spec, value](int64_t x,
                                                                             int64_t y) {
          return ApplyCompare<T>(spec.direction, spec.total_order, value(a, x, y),
                                 value(b, x, y));
        };
        return absl::OkStatus();
      });
      if (!status.ok() || !ok) return -1;
      node.kind = Kind::kCompare;
      break;
    }
    default:
      return -1;
  }
  nodes_.push_back(std::move(node));
  return static_cast<int>(nodes_.size()) - 1;
}

// Calls f(base, stride, n) for every 1-D line along `dim` of an array of `dims`.
template <typename F>
void ForEachLine(absl::Span<const int64_t> dims, int64_t dim, F&& f) {
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> outer(dims.begin(), dims.end());
  outer[dim] = 1;
  if (ElementCountOf(outer) == 0) return;
  std::vector<int64_t> index(outer.size(), 0);
  do {
    int64_t base = 0;
    for (size_t d = 0; d < index.size(); ++d) base += index[d] * strides[d];
    f(base, strides[dim], dims[dim]);
  } while (NextIndex(outer, &index));
}

}  // namespace

absl::StatusOr<Value> EvalSort(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands) {
  const Computation* comparator = instruction.to_apply();
  if (comparator == nullptr) return absl::InvalidArgumentError("expected to_apply");
  const auto& dims_attr = instruction.attributes().dimensions;
  const Shape& shape = operands[0]->array_shape();
  const int64_t dim =
      dims_attr.has_value() && !dims_attr->empty() ? (*dims_attr)[0] : shape.rank() - 1;
  if (dim < 0 || dim >= shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a sort dimension of ", shape.ToString(false), "; got ", dim));
  }
  const int64_t n_ops = static_cast<int64_t>(operands.size());
  for (const Value* v : operands) {
    if (v->array_shape().dimensions() != shape.dimensions()) {
      return absl::InvalidArgumentError(absl::StrCat("expected operands of dimensions ",
                                                     shape.ToString(false), "; got ",
                                                     v->array_shape().ToString(false)));
    }
  }
  std::vector<std::shared_ptr<Literal>> outs;
  for (const Value* v : operands) {
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(v->array_shape()));
    outs.push_back(std::move(out));
  }
  const std::optional<NativeComparator> native =
      NativeComparator::Compile(*comparator, operands);
  absl::Status status = absl::OkStatus();
  std::vector<Value> args(2 * n_ops);
  std::vector<int64_t> order;
  ForEachLine(shape.dimensions(), dim, [&](int64_t base, int64_t stride, int64_t n) {
    if (!status.ok()) return;
    order.resize(n);
    for (int64_t i = 0; i < n; ++i) order[i] = base + i * stride;
    if (native.has_value()) {
      MergeSort(&order, *native);
    } else {
      MergeSort(&order, [&](int64_t x, int64_t y) {
        if (!status.ok()) return false;
        status = [&]() -> absl::Status {
          for (int64_t k = 0; k < n_ops; ++k) {
            PERFSIM_ASSIGN_OR_RETURN(args[2 * k], ElementAsScalar(ev, operands[k]->array(), x));
            PERFSIM_ASSIGN_OR_RETURN(args[2 * k + 1], ElementAsScalar(ev, operands[k]->array(), y));
          }
          return absl::OkStatus();
        }();
        if (!status.ok()) return false;
        absl::StatusOr<Value> r = ev.CallScalar(*comparator, args);
        if (!r.ok() || !r->is_array()) {
          status = r.ok() ? absl::InvalidArgumentError("expected the comparator to return pred[]")
                          : r.status();
          return false;
        }
        return r->array().GetAsInt64(0) != 0;
      });
    }
    if (!status.ok()) return;
    for (int64_t k = 0; k < n_ops; ++k) {
      const int64_t bytes = ByteWidth(operands[k]->array_shape().element_type());
      const uint8_t* in = operands[k]->data();
      uint8_t* o = outs[k]->mutable_data().data();
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(o + (base + i * stride) * bytes, in + order[i] * bytes, bytes);
      }
    }
  });
  PERFSIM_RETURN_IF_ERROR(status);
  if (n_ops == 1 && !instruction.shape().IsTuple()) return Value::Array(std::move(outs[0]));
  std::vector<Value> results;
  for (auto& out : outs) results.push_back(Value::Array(std::move(out)));
  return Value::Tuple(std::move(results));
}

absl::StatusOr<Value> TopK(DeviceEvaluator& ev, const Literal& operand, int64_t k, bool largest,
                           PrimitiveType index_type) {
  // Along the last dimension: the k largest (or smallest) values and their indices; ties keep
  // the lower index first. Floats order totally (NaN above +inf), as XLA's comparator does.
  const Shape& shape = operand.shape();
  if (shape.rank() < 1) return absl::InvalidArgumentError("expected an operand of rank >= 1");
  const int64_t n = shape.dimensions().back();
  if (k < 0 || k > n) {
    return absl::InvalidArgumentError(absl::StrCat("expected k in [0, ", n, "]; got ", k));
  }
  std::vector<int64_t> out_dims = shape.dimensions();
  out_dims.back() = k;
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> values,
                           ev.Allocate(Shape::Array(shape.element_type(), out_dims)));
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> indices,
                           ev.Allocate(Shape::Array(index_type, out_dims)));
  const int64_t rows = n == 0 ? 0 : shape.ElementCount() / n;
  const int64_t bytes = ByteWidth(shape.element_type());
  PERFSIM_RETURN_IF_ERROR(DispatchRealElementType(shape.element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    const uint8_t* in = operand.data().data();
    const ComparisonDirection direction =
        largest ? ComparisonDirection::kGt : ComparisonDirection::kLt;
    std::vector<int64_t> order(n);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < n; ++i) order[i] = r * n + i;
      MergeSort(&order, [&](int64_t x, int64_t y) {
        return ApplyCompare<T>(direction, /*total_order=*/true, T::Load(in, x), T::Load(in, y));
      });
      for (int64_t j = 0; j < k; ++j) {
        std::memcpy(values->mutable_data().data() + (r * k + j) * bytes, in + order[j] * bytes,
                    bytes);
        indices->SetFromInt64(r * k + j, order[j] - r * n);
      }
    }
    return absl::OkStatus();
  }));
  return Value::Tuple({Value::Array(std::move(values)), Value::Array(std::move(indices))});
}

absl::StatusOr<Value> EvalTopK(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands) {
  const Shape& result = instruction.shape();
  if (!result.IsTuple() || result.tuple_size() != 2 || result.tuple_shapes(0).rank() < 1) {
    return absl::InvalidArgumentError("expected a (values, indices) result");
  }
  const int64_t k = instruction.attributes().k.value_or(result.tuple_shapes(0).dimensions().back());
  return TopK(ev, operands[0]->array(), k, instruction.attributes().largest,
              result.tuple_shapes(1).element_type());
}

}  // namespace interp
}  // namespace perfsim
