// dot (dot_general) and ragged-dot. Both transpose their operands into [batch, rows, k] and
// [batch, k, cols] matrices of the accumulation type (dot_util.h), multiply with the blocked
// kernel (dot_kernel.h) and round once into the result type.
//
// ragged-dot modes, told apart by where lhs_ragged_dimensions points (as
// jax.lax.ragged_dot_general):
//   non-contracting (the MoE case) [b,m,k] x [b,g,k,n] -> [b,m,n]: rows [s_i, s_i + gs_i) of
//       the ragged dim use rhs group i, s_i = gs_0 + ... + gs_{i-1}; rows from sum(gs) on are 0;
//   contracting [b,m,k] x [b,k,n] -> [g,b,m,n]: output group i sums over k in [s_i, s_i + gs_i)
//       only (an empty group gives zeros);
//   batch [b,m,k] x [b,k,n] -> [b,m,n]: the ordinary dot (group sizes do not change the result).
// group_sizes is [g] or [batch..., g]. Negative sizes, or sizes summing past the ragged
// dimension, are InvalidArgument.
#include <algorithm>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/dot_kernel.h"
#include "sim/interp/dot_util.h"
#include "sim/interp/evaluator.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

bool Contains(absl::Span<const int64_t> v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

int64_t Product(absl::Span<const int64_t> dims, absl::Span<const int64_t> which) {
  int64_t p = 1;
  for (int64_t d : which) p *= dims[d];
  return p;
}

// Dimensions of `rank` not in any of `excluded`, in order.
std::vector<int64_t> Remaining(int64_t rank,
                               std::initializer_list<absl::Span<const int64_t>> excluded) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d) {
    bool skip = false;
    for (absl::Span<const int64_t> e : excluded) skip = skip || Contains(e, d);
    if (!skip) out.push_back(d);
  }
  return out;
}

std::vector<int64_t> Concat(std::initializer_list<absl::Span<const int64_t>> parts) {
  std::vector<int64_t> out;
  for (absl::Span<const int64_t> p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

absl::Status CheckDims(absl::Span<const int64_t> dims, int64_t rank, absl::string_view what) {
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected ", what, " dimensions in [0, ", rank, "); got ", d));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPairedSizes(const Shape& lhs, absl::Span<const int64_t> l, const Shape& rhs,
                              absl::Span<const int64_t> r, absl::string_view what) {
  if (l.size() != r.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected as many lhs as rhs ", what, " dimensions; got ", l.size(), " vs ", r.size()));
  }
  for (size_t i = 0; i < l.size(); ++i) {
    if (lhs.dimensions(l[i]) != rhs.dimensions(r[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected lhs ", what, " dimension ", l[i], " (size ", lhs.dimensions(l[i]),
          ") to equal rhs ", what, " dimension ", r[i], " (size ", rhs.dimensions(r[i]), "); got ",
          lhs.dimensions(l[i]), " vs ", rhs.dimensions(r[i])));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> FinishAccumulator(DeviceEvaluator& ev, const Instruction& instruction,
                                        const auto& acc) {
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(instruction.shape()));
  if (static_cast<int64_t>(acc.size()) != out->element_count()) {
    return absl::InvalidArgumentError(absl::StrCat("expected a result of ", acc.size(),
                                                   " elements; got ",
                                                   instruction.shape().ToString(false)));
  }
  PERFSIM_RETURN_IF_ERROR(StoreAccumulator(acc, out.get()));
  return Value::Array(std::move(out));
}

// Plain dot_general: the result is [batch..., lhs free..., rhs free...].
template <typename C>
absl::StatusOr<Value> DotGeneral(DeviceEvaluator& ev, const Instruction& instruction,
                                 const Literal& lhs, const Literal& rhs,
                                 const DotDimensionNumbers& dn) {
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  PERFSIM_RETURN_IF_ERROR(CheckDims(dn.lhs_batch_dimensions, ls.rank(), "lhs batch"));
  PERFSIM_RETURN_IF_ERROR(CheckDims(dn.lhs_contracting_dimensions, ls.rank(), "lhs contracting"));
  PERFSIM_RETURN_IF_ERROR(CheckDims(dn.rhs_batch_dimensions, rs.rank(), "rhs batch"));
  PERFSIM_RETURN_IF_ERROR(CheckDims(dn.rhs_contracting_dimensions, rs.rank(), "rhs contracting"));
  PERFSIM_RETURN_IF_ERROR(
      CheckPairedSizes(ls, dn.lhs_batch_dimensions, rs, dn.rhs_batch_dimensions, "batch"));
  PERFSIM_RETURN_IF_ERROR(CheckPairedSizes(ls, dn.lhs_contracting_dimensions, rs,
                                           dn.rhs_contracting_dimensions, "contracting"));
  const std::vector<int64_t> lhs_free =
      Remaining(ls.rank(), {dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions});
  const std::vector<int64_t> rhs_free =
      Remaining(rs.rank(), {dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions});
  const int64_t b = Product(ls.dimensions(), dn.lhs_batch_dimensions);
  const int64_t m = Product(ls.dimensions(), lhs_free);
  const int64_t k = Product(ls.dimensions(), dn.lhs_contracting_dimensions);
  const int64_t n = Product(rs.dimensions(), rhs_free);
  std::vector<C> a_store, b_store;
  PERFSIM_ASSIGN_OR_RETURN(
      const C* a,
      AccumulatorMatrix<C>(
          lhs, Concat({dn.lhs_batch_dimensions, lhs_free, dn.lhs_contracting_dimensions}),
          &a_store));
  PERFSIM_ASSIGN_OR_RETURN(
      const C* bm,
      AccumulatorMatrix<C>(
          rhs, Concat({dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions, rhs_free}),
          &b_store));
  if constexpr (std::is_same_v<C, float>) {
    // An f32 result is its own accumulator: the kernel adds into the zero-filled buffer, the
    // same sums in the same order as into a separate one that is then stored unchanged.
    if (instruction.shape().element_type() == PrimitiveType::kF32) {
      PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(instruction.shape()));
      if (out->element_count() != b * m * n) {
        return absl::InvalidArgumentError(absl::StrCat("expected a result of ", b * m * n,
                                                       " elements; got ",
                                                       instruction.shape().ToString(false)));
      }
      float* c = reinterpret_cast<float*>(out->mutable_data().data());
      for (int64_t i = 0; i < b; ++i) {
        MatMulAccumulate<C>(a + i * m * k, k, bm + i * k * n, n, c + i * m * n, n, m, n, k);
      }
      return Value::Array(std::move(out));
    }
  }
  std::vector<C> c(static_cast<size_t>(b * m * n), C(0));
  for (int64_t i = 0; i < b; ++i) {
    MatMulAccumulate<C>(a + i * m * k, k, bm + i * k * n, n, c.data() + i * m * n, n, m, n, k);
  }
  return FinishAccumulator(ev, instruction, c);
}

// Group sizes as a [batches][groups] table (one row repeated when given as [g]).
absl::StatusOr<std::vector<std::vector<int64_t>>> GroupSizeTable(const Literal& group_sizes,
                                                                 int64_t batches, int64_t groups,
                                                                 int64_t ragged_size) {
  const int64_t count = group_sizes.element_count();
  if (count != groups && count != batches * groups) {
    return absl::InvalidArgumentError(absl::StrCat("expected group_sizes of ", groups, " or ",
                                                   batches * groups, " elements; got ",
                                                   group_sizes.shape().ToString(false)));
  }
  std::vector<std::vector<int64_t>> table(batches, std::vector<int64_t>(groups));
  for (int64_t b = 0; b < batches; ++b) {
    int64_t total = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t size = group_sizes.GetAsInt64(count == groups ? g : b * groups + g);
      if (size < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected non-negative group sizes; got group_sizes[", g, "] = ", size));
      }
      // Sizes are data: an s64 size near the int64 limit must not wrap the total below the
      // ragged dimension and pass the check after the loop.
      PERFSIM_ASSIGN_OR_RETURN(
          total, CheckedAdd(absl::StrCat("group_sizes sum up to group ", g), total, size));
      table[b][g] = size;
    }
    if (total > ragged_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected group sizes summing to at most the ragged dimension's ",
                       ragged_size, "; got ", total));
    }
  }
  return table;
}

template <typename C>
absl::StatusOr<Value> RaggedNonContracting(DeviceEvaluator& ev, const Instruction& instruction,
                                           const Literal& lhs, const Literal& rhs,
                                           const Literal& group_sizes,
                                           const RaggedDotDimensionNumbers& rd) {
  const DotDimensionNumbers& dn = rd.dot;
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  if (rd.rhs_group_dimensions.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected one rhs group dimension for a ragged non-contracting dimension; got ",
        rd.rhs_group_dimensions.size()));
  }
  const int64_t r = rd.lhs_ragged_dimensions[0];
  const int64_t g = rd.rhs_group_dimensions[0];
  PERFSIM_RETURN_IF_ERROR(CheckDims({g}, rs.rank(), "rhs group"));
  if (Contains(dn.rhs_batch_dimensions, g) || Contains(dn.rhs_contracting_dimensions, g)) {
    return absl::InvalidArgumentError(
        "expected the rhs group dimension to be neither batch nor contracting");
  }
  PERFSIM_RETURN_IF_ERROR(
      CheckPairedSizes(ls, dn.lhs_batch_dimensions, rs, dn.rhs_batch_dimensions, "batch"));
  PERFSIM_RETURN_IF_ERROR(CheckPairedSizes(ls, dn.lhs_contracting_dimensions, rs,
                                           dn.rhs_contracting_dimensions, "contracting"));
  const std::vector<int64_t> lhs_free =
      Remaining(ls.rank(), {dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions});
  const std::vector<int64_t> other_free = Remaining(
      ls.rank(), {dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions, std::vector<int64_t>{r}});
  const std::vector<int64_t> rhs_free = Remaining(
      rs.rank(), {dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions, std::vector<int64_t>{g}});
  const int64_t batches = Product(ls.dimensions(), dn.lhs_batch_dimensions);
  const int64_t rows = ls.dimensions(r);
  const int64_t inner_rows = Product(ls.dimensions(), other_free);
  const int64_t k = Product(ls.dimensions(), dn.lhs_contracting_dimensions);
  const int64_t n = Product(rs.dimensions(), rhs_free);
  const int64_t groups = rs.dimensions(g);
  PERFSIM_ASSIGN_OR_RETURN(auto sizes, GroupSizeTable(group_sizes, batches, groups, rows));

  std::vector<C> a, bm;
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(lhs, &a));
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(rhs, &bm));
  a = PermuteDims(
      a, ls.dimensions(),
      Concat({dn.lhs_batch_dimensions, {r}, other_free, dn.lhs_contracting_dimensions}));
  bm = PermuteDims(bm, rs.dimensions(),
                   Concat({dn.rhs_batch_dimensions, {g}, dn.rhs_contracting_dimensions, rhs_free}));
  // c: [batch][rows][inner_rows][n]; rows no group covers stay 0.
  const int64_t block = inner_rows * k;
  std::vector<C> c(static_cast<size_t>(batches * rows * inner_rows * n), C(0));
  for (int64_t b = 0; b < batches; ++b) {
    int64_t start = 0;
    for (int64_t i = 0; i < groups; ++i) {
      const int64_t size = sizes[b][i];
      MatMulAccumulate<C>(
          a.data() + (b * rows + start) * block, k, bm.data() + (b * groups + i) * k * n, n,
          c.data() + (b * rows + start) * inner_rows * n, n, size * inner_rows, n, k);
      start += size;
    }
  }
  // c's dimensions are (batch dims, r, other free dims, rhs free dims); the result wants
  // (batch dims, lhs free dims in their order, rhs free dims).
  std::vector<int64_t> c_dims;
  for (int64_t d : Concat({dn.lhs_batch_dimensions, {r}, other_free}))
    c_dims.push_back(ls.dimensions(d));
  for (int64_t d : rhs_free) c_dims.push_back(rs.dimensions(d));
  const int64_t nb = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  for (int64_t d : lhs_free) {
    if (d == r) {
      perm.push_back(nb);
    } else {
      perm.push_back(nb + 1 +
                     (std::find(other_free.begin(), other_free.end(), d) - other_free.begin()));
    }
  }
  for (size_t j = 0; j < rhs_free.size(); ++j) perm.push_back(nb + 1 + other_free.size() + j);
  return FinishAccumulator(ev, instruction, PermuteDims(c, c_dims, perm));
}

template <typename C>
absl::StatusOr<Value> RaggedContracting(DeviceEvaluator& ev, const Instruction& instruction,
                                        const Literal& lhs, const Literal& rhs,
                                        const Literal& group_sizes,
                                        const RaggedDotDimensionNumbers& rd) {
  const DotDimensionNumbers& dn = rd.dot;
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  PERFSIM_RETURN_IF_ERROR(
      CheckPairedSizes(ls, dn.lhs_batch_dimensions, rs, dn.rhs_batch_dimensions, "batch"));
  PERFSIM_RETURN_IF_ERROR(CheckPairedSizes(ls, dn.lhs_contracting_dimensions, rs,
                                           dn.rhs_contracting_dimensions, "contracting"));
  const int64_t r = rd.lhs_ragged_dimensions[0];
  // Put the ragged contracting dimension first on both sides.
  std::vector<int64_t> lc = {r}, rc;
  for (size_t j = 0; j < dn.lhs_contracting_dimensions.size(); ++j) {
    if (dn.lhs_contracting_dimensions[j] == r)
      rc.insert(rc.begin(), dn.rhs_contracting_dimensions[j]);
  }
  for (size_t j = 0; j < dn.lhs_contracting_dimensions.size(); ++j) {
    if (dn.lhs_contracting_dimensions[j] != r) {
      lc.push_back(dn.lhs_contracting_dimensions[j]);
      rc.push_back(dn.rhs_contracting_dimensions[j]);
    }
  }
  const std::vector<int64_t> lhs_free =
      Remaining(ls.rank(), {dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions});
  const std::vector<int64_t> rhs_free =
      Remaining(rs.rank(), {dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions});
  const int64_t batches = Product(ls.dimensions(), dn.lhs_batch_dimensions);
  const int64_t m = Product(ls.dimensions(), lhs_free);
  const int64_t k = Product(ls.dimensions(), lc);
  const int64_t ragged = ls.dimensions(r);
  const int64_t inner_k = ragged == 0 ? 0 : k / ragged;
  const int64_t n = Product(rs.dimensions(), rhs_free);
  const int64_t groups =
      group_sizes.shape().rank() == 0 ? 1 : group_sizes.shape().dimensions().back();
  PERFSIM_ASSIGN_OR_RETURN(auto sizes, GroupSizeTable(group_sizes, batches, groups, ragged));
  std::vector<C> a, bm;
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(lhs, &a));
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(rhs, &bm));
  a = PermuteDims(a, ls.dimensions(), Concat({dn.lhs_batch_dimensions, lhs_free, lc}));
  bm = PermuteDims(bm, rs.dimensions(), Concat({dn.rhs_batch_dimensions, rc, rhs_free}));
  // c: [groups][batch][m][n].
  std::vector<C> c(static_cast<size_t>(groups * batches * m * n), C(0));
  for (int64_t b = 0; b < batches; ++b) {
    int64_t start = 0;
    for (int64_t i = 0; i < groups; ++i) {
      const int64_t size = sizes[b][i];
      MatMulAccumulate<C>(a.data() + b * m * k + start * inner_k, k,
                          bm.data() + b * k * n + start * inner_k * n, n,
                          c.data() + (i * batches + b) * m * n, n, m, n, size * inner_k);
      start += size;
    }
  }
  return FinishAccumulator(ev, instruction, c);
}

}  // namespace

absl::StatusOr<Value> EvalDot(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands) {
  const DotDimensionNumbers dn =
      instruction.attributes().dot_dimension_numbers.value_or(DotDimensionNumbers{});
  absl::StatusOr<Value> result;
  PERFSIM_RETURN_IF_ERROR(DispatchAccumulator(instruction.shape().element_type(), [&](auto zero) {
    using C = decltype(zero);
    result = DotGeneral<C>(ev, instruction, operands[0]->array(), operands[1]->array(), dn);
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<Value> EvalRaggedDot(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands) {
  const auto& rd_attr = instruction.attributes().ragged_dot_dimension_numbers;
  if (!rd_attr.has_value() || rd_attr->lhs_ragged_dimensions.size() != 1) {
    return absl::InvalidArgumentError("expected one lhs_ragged_dims entry");
  }
  const RaggedDotDimensionNumbers& rd = *rd_attr;
  const Literal& lhs = operands[0]->array();
  const Literal& rhs = operands[1]->array();
  const Literal& group_sizes = operands[2]->array();
  if (!IsInteger(group_sizes.shape().element_type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected integer group_sizes; got ", group_sizes.shape().ToString(false)));
  }
  const int64_t r = rd.lhs_ragged_dimensions[0];
  PERFSIM_RETURN_IF_ERROR(CheckDims({r}, lhs.shape().rank(), "lhs ragged"));
  PERFSIM_RETURN_IF_ERROR(CheckDims(rd.dot.lhs_batch_dimensions, lhs.shape().rank(), "lhs batch"));
  PERFSIM_RETURN_IF_ERROR(
      CheckDims(rd.dot.lhs_contracting_dimensions, lhs.shape().rank(), "lhs contracting"));
  PERFSIM_RETURN_IF_ERROR(CheckDims(rd.dot.rhs_batch_dimensions, rhs.shape().rank(), "rhs batch"));
  PERFSIM_RETURN_IF_ERROR(
      CheckDims(rd.dot.rhs_contracting_dimensions, rhs.shape().rank(), "rhs contracting"));
  absl::StatusOr<Value> result;
  PERFSIM_RETURN_IF_ERROR(DispatchAccumulator(instruction.shape().element_type(), [&](auto zero) {
    using C = decltype(zero);
    if (Contains(rd.dot.lhs_contracting_dimensions, r)) {
      result = RaggedContracting<C>(ev, instruction, lhs, rhs, group_sizes, rd);
    } else if (Contains(rd.dot.lhs_batch_dimensions, r)) {
      result = DotGeneral<C>(ev, instruction, lhs, rhs, rd.dot);
    } else {
      result = RaggedNonContracting<C>(ev, instruction, lhs, rhs, group_sizes, rd);
    }
    return absl::OkStatus();
  }));
  return result;
}

}  // namespace interp
}  // namespace perfsim
