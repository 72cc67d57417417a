#include "sim/lowering/named_builder.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sim/lowering/annotations.h"

namespace perfsim {

PrimitiveType PrimitiveTypeOfDType(DType dtype) {
  switch (dtype) {
    case DTYPE_BF16:
      return PrimitiveType::kBF16;
    case DTYPE_F16:
      return PrimitiveType::kF16;
    case DTYPE_F8E4M3FN:
      return PrimitiveType::kF8E4M3FN;
    case DTYPE_F8E5M2:
      return PrimitiveType::kF8E5M2;
    case DTYPE_S8:
      return PrimitiveType::kS8;
    case DTYPE_F32:
    case DTYPE_UNSPECIFIED:
    case DType_INT_MIN_SENTINEL_DO_NOT_USE_:
    case DType_INT_MAX_SENTINEL_DO_NOT_USE_:
      return PrimitiveType::kF32;
  }
  return PrimitiveType::kF32;
}

int64_t Tensor::size(char name) const {
  const int64_t i = index(name);
  return i < 0 ? -1 : op->shape().dimensions(i);
}

int64_t Tensor::index(char name) const {
  const size_t i = dims.find(name);
  return i == std::string::npos ? -1 : static_cast<int64_t>(i);
}

namespace {

std::string DescribeTensor(const Tensor& t) {
  return absl::StrCat(t.dims, " ", t.op->shape().ToString(false), " (", t.op->name(), ")");
}

bool HasDuplicates(absl::string_view s) {
  std::string sorted(s);
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
}

}  // namespace

Tensor NamedBuilder::Name(Instruction* op, std::string dims) {
  Tensor t{op, std::move(dims)};
  if (mb_.IsPlaceholder(op)) return t;
  if (!op->shape().IsArray() || op->shape().rank() != static_cast<int64_t>(t.dims.size())) {
    return Fail(absl::StrCat(op->name(), ": expected ", t.dims.size(), " dimension names for ",
                             op->shape().ToString(false), "; got '", t.dims, "'"),
                t);
  }
  (*names_)[op] = t.dims;
  return t;
}

Tensor NamedBuilder::Fail(std::string message, const Tensor& like) {
  Instruction* placeholder = mb_.Fail(absl::InvalidArgumentError(std::move(message)),
                                      like.op == nullptr ? Shape() : like.op->shape());
  return Tensor{placeholder, like.dims};
}

Tensor NamedBuilder::Parameter(int64_t number, absl::string_view name, PrimitiveType type,
                               std::string dims, absl::Span<const int64_t> sizes) {
  return Name(b_.Parameter(number, Shape::Array(type, sizes), name), std::move(dims));
}

Tensor NamedBuilder::Full(PrimitiveType type, std::string dims, absl::Span<const int64_t> sizes,
                          double value) {
  return Name(b_.Full(Shape::Array(type, sizes), value), std::move(dims));
}

Tensor NamedBuilder::Scalar(PrimitiveType type, double value) {
  return Tensor{b_.ScalarConstant(type, value), ""};
}

Tensor NamedBuilder::Iota(PrimitiveType type, std::string dims, absl::Span<const int64_t> sizes,
                          char along) {
  const int64_t dim = static_cast<int64_t>(dims.find(along));
  return Name(b_.Iota(Shape::Array(type, sizes), dim), std::move(dims));
}

Tensor NamedBuilder::Einsum(absl::string_view spec, const Tensor& a, const Tensor& b,
                            PrimitiveType out) {
  std::pair<absl::string_view, absl::string_view> io = absl::StrSplit(spec, "->");
  std::pair<absl::string_view, absl::string_view> ins = absl::StrSplit(io.first, ',');
  const std::string lhs(ins.first), rhs(ins.second), res(io.second);
  if (lhs != a.dims || rhs != b.dims) {
    const bool first = lhs != a.dims;
    return Fail(absl::StrCat("einsum '", spec, "': expected operand ", first ? 0 : 1,
                             " with dimensions ", first ? lhs : rhs, "; got ",
                             DescribeTensor(first ? a : b)),
                a);
  }
  if (HasDuplicates(lhs) || HasDuplicates(rhs) || HasDuplicates(res)) {
    return Fail(absl::StrCat("einsum '", spec, "': expected each name once per operand"), a);
  }
  DotDimensionNumbers dnums;
  std::string result_order;
  for (size_t i = 0; i < lhs.size(); ++i) {
    const size_t j = rhs.find(lhs[i]);
    if (j == std::string::npos) continue;
    if (res.find(lhs[i]) != std::string::npos) {
      dnums.lhs_batch_dimensions.push_back(i);
      dnums.rhs_batch_dimensions.push_back(j);
      result_order += lhs[i];
    } else {
      dnums.lhs_contracting_dimensions.push_back(i);
      dnums.rhs_contracting_dimensions.push_back(j);
    }
  }
  for (char c : lhs) {
    if (rhs.find(c) == std::string::npos) result_order += c;
  }
  for (char c : rhs) {
    if (lhs.find(c) == std::string::npos) result_order += c;
  }
  std::string sorted_result = result_order, sorted_res = res;
  std::sort(sorted_result.begin(), sorted_result.end());
  std::sort(sorted_res.begin(), sorted_res.end());
  if (sorted_result != sorted_res) {
    return Fail(absl::StrCat("einsum '", spec, "': expected a result with dimensions ",
                             result_order, " in some order; got ", res),
                a);
  }
  Tensor qa = a, qb = b;
  QuantizeOperands(qa, qb, out);
  Instruction* dot = b_.Dot(qa.op, qb.op, std::move(dnums), out);
  return Transpose(Name(dot, result_order), res);
}

void NamedBuilder::QuantizeOperands(Tensor& a, Tensor& b, PrimitiveType& out) {
  if (gemm_type_ == PrimitiveType::kInvalid) return;
  auto sixteen_bit = [](PrimitiveType t) {
    return t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
  };
  if (!sixteen_bit(a.type()) || !sixteen_bit(b.type())) return;
  if (out == PrimitiveType::kInvalid) out = a.type();
  a = Convert(a, gemm_type_);
  b = Convert(b, gemm_type_);
}

Tensor NamedBuilder::RaggedDot(const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes,
                               RaggedDotDimensionNumbers dnums, std::string out_dims,
                               PrimitiveType out) {
  Tensor qlhs = lhs, qrhs = rhs;
  QuantizeOperands(qlhs, qrhs, out);
  return Name(b_.RaggedDot(qlhs.op, qrhs.op, group_sizes.op, std::move(dnums), out),
              std::move(out_dims));
}

Tensor NamedBuilder::GroupedForward(const Tensor& lhs, const Tensor& rhs,
                                    const Tensor& group_sizes) {
  if (masked_grouped_ && rhs.rank() == 3) {
    return MaskedForward(lhs, rhs, group_sizes, /*contract_rhs_last=*/false);
  }
  RaggedDotDimensionNumbers d;
  d.dot.lhs_contracting_dimensions = {1};
  d.dot.rhs_contracting_dimensions = {1};
  d.lhs_ragged_dimensions = {0};
  d.rhs_group_dimensions = {0};
  Tensor out = RaggedDot(lhs, rhs, group_sizes, std::move(d),
                         std::string{lhs.dims[0], rhs.dims.size() == 3 ? rhs.dims[2] : 'X'});
  AnnotateRaggedDot(out, rhs.dims);
  return out;
}

Tensor NamedBuilder::GroupedDlhs(const Tensor& dy, const Tensor& rhs, const Tensor& group_sizes) {
  if (masked_grouped_ && rhs.rank() == 3) {
    return MaskedForward(dy, rhs, group_sizes, /*contract_rhs_last=*/true);
  }
  RaggedDotDimensionNumbers d;
  d.dot.lhs_contracting_dimensions = {1};
  d.dot.rhs_contracting_dimensions = {2};
  d.lhs_ragged_dimensions = {0};
  d.rhs_group_dimensions = {0};
  Tensor out = RaggedDot(dy, rhs, group_sizes, std::move(d),
                         std::string{dy.dims[0], rhs.dims.size() == 3 ? rhs.dims[1] : 'X'});
  AnnotateRaggedDot(out, rhs.dims);
  return out;
}

Tensor NamedBuilder::GroupedDrhs(const Tensor& lhs, const Tensor& dy, const Tensor& group_sizes) {
  if (masked_grouped_ && lhs.rank() == 2 && dy.rank() == 2) {
    return MaskedDrhs(lhs, dy, group_sizes);
  }
  RaggedDotDimensionNumbers d;
  d.dot.lhs_contracting_dimensions = {0};
  d.dot.rhs_contracting_dimensions = {0};
  d.lhs_ragged_dimensions = {0};
  Tensor out = RaggedDot(lhs, dy, group_sizes, std::move(d),
                         std::string{'E', lhs.dims.size() == 2 ? lhs.dims[1] : 'X',
                                     dy.dims.size() == 2 ? dy.dims[1] : 'X'});
  AnnotateRaggedDot(out, out.dims);
  return out;
}

void NamedBuilder::AnnotateRaggedDot(const Tensor& ragged_dot, absl::string_view weight_dims) const {
  if (mb_.IsPlaceholder(ragged_dot.op)) return;
  // wi maps D to F (or N, the fused wi_0|wi_1): [E, D, ·]; wo maps F to D: [E, ·, D]. A weight
  // of neither form takes wi's tiling, unnamed.
  Kernel::Projection projection = Kernel::PROJECTION_UNSPECIFIED;
  if (weight_dims.size() == 3 && weight_dims[1] == 'D') projection = Kernel::PROJECTION_WI;
  if (weight_dims.size() == 3 && weight_dims[2] == 'D') projection = Kernel::PROJECTION_WO;
  const GmmTiling& tiling =
      projection == Kernel::PROJECTION_WO ? ragged_dot_wo_ : ragged_dot_wi_;
  UpdateAnnotation(ragged_dot.op, [&](Annotation& a) {
    *a.mutable_kernel() = KernelConfig(Kernel::KERNEL_RAGGED_DOT, projection, tiling);
  });
}

Tensor NamedBuilder::Unary(Opcode opcode, const Tensor& a) {
  return Name(b_.Unary(opcode, a.op), a.dims);
}

Tensor NamedBuilder::Binary(Opcode opcode, const Tensor& a, const Tensor& b) {
  if (a.dims == b.dims) return Name(b_.Binary(opcode, a.op, b.op), a.dims);
  const bool a_larger = a.dims.size() >= b.dims.size();
  const Tensor& large = a_larger ? a : b;
  const Tensor& small = a_larger ? b : a;
  for (char c : small.dims) {
    if (large.index(c) < 0) {
      return Fail(absl::StrCat(OpcodeSpelling(opcode), ": expected the names of ",
                               DescribeTensor(small), " to be among those of ",
                               DescribeTensor(large)),
                  large);
    }
  }
  Tensor wide = BroadcastLike(small, large);
  return Name(a_larger ? b_.Binary(opcode, large.op, wide.op) : b_.Binary(opcode, wide.op, large.op),
              large.dims);
}

Tensor NamedBuilder::MulScalar(const Tensor& a, double value) {
  Instruction* scalar = b_.ScalarConstant(a.type(), value);
  return Name(b_.Binary(Opcode::kMultiply, a.op,
                        b_.Broadcast(scalar, a.shape().dimensions(), {})),
              a.dims);
}

Tensor NamedBuilder::AddScalar(const Tensor& a, double value) {
  Instruction* scalar = b_.ScalarConstant(a.type(), value);
  return Name(b_.Binary(Opcode::kAdd, a.op, b_.Broadcast(scalar, a.shape().dimensions(), {})),
              a.dims);
}

Tensor NamedBuilder::Compare(const Tensor& a, const Tensor& b, ComparisonDirection direction) {
  if (a.dims != b.dims) {
    const Tensor& large = a.dims.size() >= b.dims.size() ? a : b;
    Tensor wa = a.dims == large.dims ? a : BroadcastLike(a, large);
    Tensor wb = b.dims == large.dims ? b : BroadcastLike(b, large);
    return Name(b_.Compare(wa.op, wb.op, direction), large.dims);
  }
  return Name(b_.Compare(a.op, b.op, direction), a.dims);
}

Tensor NamedBuilder::Select(const Tensor& pred, const Tensor& on_true, const Tensor& on_false) {
  const Tensor& values = on_true.dims.size() >= on_false.dims.size() ? on_true : on_false;
  const Tensor& like = pred.dims.size() > values.dims.size() ? pred : values;
  auto widen = [&](const Tensor& t) { return t.dims == like.dims ? t : BroadcastLike(t, like); };
  return Name(b_.Select(widen(pred).op, widen(on_true).op, widen(on_false).op), like.dims);
}

Tensor NamedBuilder::Convert(const Tensor& a, PrimitiveType type) {
  if (a.type() == type) return a;
  return Name(b_.Convert(a.op, type), a.dims);
}

Tensor NamedBuilder::Reduce(const Tensor& a, absl::string_view over, Opcode opcode) {
  std::vector<int64_t> dims;
  std::string kept;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    if (over.find(a.dims[i]) != absl::string_view::npos) {
      dims.push_back(i);
    } else {
      kept += a.dims[i];
    }
  }
  if (dims.size() != over.size()) {
    return Fail(absl::StrCat("reduce: expected dimensions ", over, " in ", DescribeTensor(a)), a);
  }
  double init = 0;
  if (opcode == Opcode::kMaximum) init = -std::numeric_limits<double>::infinity();
  if (opcode == Opcode::kMinimum) init = std::numeric_limits<double>::infinity();
  if (opcode == Opcode::kMultiply) init = 1;
  Instruction* zero = b_.ScalarConstant(a.type(), init);
  return Name(b_.Reduce(a.op, zero, dims, opcode), kept);
}

Tensor NamedBuilder::BroadcastTo(const Tensor& a, std::string dims,
                                 const absl::flat_hash_map<char, int64_t>& sizes) {
  // Reorder a's names to their order in `dims` first: broadcast dims must increase.
  std::string order;
  for (char c : dims) {
    if (a.index(c) >= 0) order += c;
  }
  if (order.size() != a.dims.size()) {
    return Fail(absl::StrCat("broadcast: expected the names of ", DescribeTensor(a),
                             " among ", dims),
                a);
  }
  Tensor src = Transpose(a, order);
  std::vector<int64_t> result_sizes, mapping;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t j = src.index(dims[i]);
    if (j >= 0) {
      result_sizes.push_back(src.shape().dimensions(j));
      mapping.push_back(i);
      continue;
    }
    auto it = sizes.find(dims[i]);
    if (it == sizes.end()) {
      return Fail(absl::StrCat("broadcast: expected a size for new dimension ", std::string(1, dims[i])), a);
    }
    result_sizes.push_back(it->second);
  }
  return Name(b_.Broadcast(src.op, result_sizes, mapping), std::move(dims));
}

Tensor NamedBuilder::BroadcastLike(const Tensor& a, const Tensor& like) {
  absl::flat_hash_map<char, int64_t> sizes;
  for (size_t i = 0; i < like.dims.size(); ++i) {
    sizes[like.dims[i]] = like.shape().dimensions(i);
  }
  return BroadcastTo(a, like.dims, sizes);
}

Tensor NamedBuilder::Transpose(const Tensor& a, std::string dims) {
  if (a.dims == dims) return a;
  std::vector<int64_t> permutation;
  for (char c : dims) {
    const int64_t i = a.index(c);
    if (i < 0 || dims.size() != a.dims.size()) {
      return Fail(absl::StrCat("transpose: expected a permutation of ", DescribeTensor(a),
                               "; got ", dims),
                  a);
    }
    permutation.push_back(i);
  }
  return Name(b_.Transpose(a.op, permutation), std::move(dims));
}

Tensor NamedBuilder::Reshape(const Tensor& a, std::string dims, absl::Span<const int64_t> sizes) {
  return Name(b_.Reshape(a.op, sizes), std::move(dims));
}

Tensor NamedBuilder::Rename(const Tensor& a, std::string dims) {
  if (dims.size() != a.dims.size()) {
    return Fail(absl::StrCat("rename: expected ", a.dims.size(), " names; got ", dims), a);
  }
  Tensor t{a.op, std::move(dims)};
  return t;
}

Tensor NamedBuilder::Slice(const Tensor& a, absl::Span<const int64_t> starts,
                           absl::Span<const int64_t> limits) {
  return Name(b_.Slice(a.op, starts, limits), a.dims);
}

Tensor NamedBuilder::Concatenate(const std::vector<Tensor>& parts, char along) {
  std::vector<Instruction*> ops;
  for (const Tensor& t : parts) ops.push_back(t.op);
  return Name(b_.Concatenate(std::move(ops), parts.front().index(along)), parts.front().dims);
}

std::pair<Tensor, Tensor> NamedBuilder::TopK(const Tensor& a, int64_t k, char k_name) {
  Instruction* topk = b_.TopK(a.op, k);
  std::string dims = a.dims;
  dims.back() = k_name;
  return {Name(b_.GetTupleElement(topk, 0), dims), Name(b_.GetTupleElement(topk, 1), dims)};
}

std::vector<Tensor> NamedBuilder::Sort(const std::vector<Tensor>& operands) {
  std::vector<Instruction*> ops;
  for (const Tensor& t : operands) ops.push_back(t.op);
  Instruction* sorted = b_.Sort(std::move(ops), 0, /*descending=*/false);
  if (operands.size() == 1) return {Name(sorted, operands[0].dims)};
  std::vector<Tensor> result;
  for (size_t i = 0; i < operands.size(); ++i) {
    result.push_back(Name(b_.GetTupleElement(sorted, i), operands[i].dims));
  }
  return result;
}

Tensor NamedBuilder::GatherRows(const Tensor& table, const Tensor& indices) {
  GatherDimensionNumbers dnums;
  std::vector<int64_t> slice_sizes = {1};
  for (int64_t i = 1; i < table.rank(); ++i) {
    dnums.offset_dims.push_back(i);
    slice_sizes.push_back(table.shape().dimensions(i));
  }
  dnums.collapsed_slice_dims = {0};
  dnums.start_index_map = {0};
  dnums.index_vector_dim = 1;
  return Name(b_.Gather(table.op, indices.op, std::move(dnums), slice_sizes),
              indices.dims + table.dims.substr(1));
}

Tensor NamedBuilder::ScatterAddRows(const Tensor& base, const Tensor& indices,
                                    const Tensor& updates) {
  ScatterDimensionNumbers dnums;
  for (int64_t i = 1; i < updates.rank(); ++i) dnums.update_window_dims.push_back(i);
  dnums.inserted_window_dims = {0};
  dnums.scatter_dims_to_operand_dims = {0};
  dnums.index_vector_dim = 1;
  return Name(b_.Scatter(base.op, indices.op, updates.op, std::move(dnums), Opcode::kAdd),
              base.dims);
}

Tensor NamedBuilder::CustomCall(const std::vector<Tensor>& operands, PrimitiveType type,
                                std::string dims, absl::Span<const int64_t> sizes,
                                absl::string_view target, std::string backend_config) {
  std::vector<Instruction*> ops;
  for (const Tensor& t : operands) ops.push_back(t.op);
  return Name(b_.CustomCall(std::move(ops), Shape::Array(type, sizes), target,
                            std::move(backend_config)),
              std::move(dims));
}

void NamedBuilder::SaveForBackward(absl::string_view role, absl::string_view stands_for,
                                   const Tensor& t) {
  if (residuals_ == nullptr || mb_.IsPlaceholder(t.op)) return;
  for (Residual& r : *residuals_) {
    if (r.role == role) {
      r.value = t.op;
      r.uses.clear();
      return;
    }
  }
  residuals_->push_back(Residual{std::string(role), std::string(stands_for), t.op, {}});
}

int64_t NamedBuilder::InstructionCount() const {
  return static_cast<int64_t>(b_.computation()->instructions().size());
}

void NamedBuilder::UseResidual(absl::string_view role, const Tensor& read, int64_t mark) {
  if (residuals_ == nullptr || mb_.IsPlaceholder(read.op)) return;
  Residual* residual = nullptr;
  for (Residual& r : *residuals_) {
    if (r.role == role) residual = &r;
  }
  if (residual == nullptr) {
    Fail(absl::StrCat("residual ", role, ": expected the forward to save it; got a backward that "
                      "reads it first"),
         read);
    return;
  }
  const auto& instructions = b_.computation()->instructions();
  const size_t before = residual->uses.size();
  for (size_t i = static_cast<size_t>(mark); i < instructions.size(); ++i) {
    const Instruction* consumer = instructions[i].get();
    for (int64_t k = 0; k < consumer->operand_count(); ++k) {
      if (consumer->operand(k) == read.op) residual->uses.push_back(ResidualUse{consumer, k});
    }
  }
  if (residual->uses.size() == before) {
    Fail(absl::StrCat("residual ", role, ": expected an instruction reading ", read.op->name(),
                      " since the mark; got none"),
         read);
  }
}

}  // namespace perfsim
