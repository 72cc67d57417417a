// The custom-call registry and the built-in reference implementations (custom_calls.h).
#include "sim/interp/custom_calls.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/backend_config.pb.h"
#include "sim/interp/dot_kernel.h"
#include "sim/interp/dot_util.h"
#include "sim/interp/sdy_custom_calls.h"
#include "sim/ir/backend_config.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

// The kernel's backend_config (proto/backend_config.proto), read with protobuf's JSON parser.
absl::StatusOr<KernelBackendConfig> ReadKernelConfig(const Instruction& instruction) {
  KernelBackendConfig config;
  PERFSIM_RETURN_IF_ERROR(
      ParseBackendConfig(instruction.attributes().backend_config.value_or(""), &config));
  return config;
}

// ---- built-in targets ----

absl::StatusOr<Value> AllocateBuffer(DeviceEvaluator& ev, const Instruction& instruction,
                                     OperandValues operands) {
  const Shape& shape = instruction.shape();
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected an array result; got ", shape.ToString(false)));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> buffer, ev.AllocatePoisoned(shape));
  return Value::Array(std::move(buffer));
}

// "Pin" turns an array into XLA's buffer type `b(...)`, "Unpin" a buffer back into its array;
// the custom-calls between them update the buffer in place. The interpreter holds a buffer as
// its array, so both are the identity on the data (XLA:GPU emits no work for them either).
absl::StatusOr<Value> PinOrUnpin(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands) {
  const Shape& result = StripBuffer(instruction.shape());
  if (operands.size() != 1 || !operands[0]->is_array() || !result.IsArray() ||
      operands[0]->array_shape().element_type() != result.element_type() ||
      operands[0]->array_shape().dimensions() != result.dimensions()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected one operand holding the result's array ", result.ToString(false), "; got ",
        operands.size() == 1 ? operands[0]->shape().ToString(false)
                             : absl::StrCat(operands.size(), " operands")));
  }
  return *operands[0];
}

bool IsShardingTarget(absl::string_view target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape";
}

absl::StatusOr<Value> ShardingIdentity(DeviceEvaluator& ev, const Instruction& instruction,
                                       OperandValues operands) {
  if (operands.size() != 1 || !operands[0]->is_array() || !instruction.shape().IsArray() ||
      operands[0]->array_shape().dimensions() != instruction.shape().dimensions()) {
    return absl::UnimplementedError(absl::StrCat(
        "expected a sharding annotation that keeps the shape; got ",
        operands.empty() ? std::string("no operand") : operands[0]->shape().ToString(false), " -> ",
        instruction.shape().ToString(false), " (run the SPMD-partitioned, per-device module)"));
  }
  return *operands[0];
}

// XLA:CPU's "TopK" custom call (what jax.lax.top_k compiles to): (values, s32 indices) of the
// k largest along the last dimension, k taken from the result shape. Its comparator is
// always greater-than; a less-than comparator selects the smallest.
absl::StatusOr<Value> TopKCustomCall(DeviceEvaluator& ev, const Instruction& instruction,
                                     OperandValues operands) {
  const Shape& result = instruction.shape();
  if (operands.size() != 1 || !result.IsTuple() || result.tuple_size() != 2 ||
      result.tuple_shapes(0).rank() < 1) {
    return absl::InvalidArgumentError("expected one operand and a (values, indices) result");
  }
  bool largest = true;
  if (!instruction.calls().empty() && instruction.calls()[0]->root() != nullptr) {
    const auto& direction = instruction.calls()[0]->root()->attributes().comparison_direction;
    if (direction.has_value() &&
        (*direction == ComparisonDirection::kLt || *direction == ComparisonDirection::kLe)) {
      largest = false;
    }
  }
  return TopK(ev, operands[0]->array(), result.tuple_shapes(0).dimensions().back(), largest,
              result.tuple_shapes(1).element_type());
}

struct GroupedConfig {
  int64_t group_offset = 0;
  bool transpose_rhs = false;
  std::optional<int64_t> tm;
};

absl::StatusOr<GroupedConfig> ReadGroupedConfig(const Instruction& instruction,
                                                OperandValues operands) {
  PERFSIM_ASSIGN_OR_RETURN(const KernelBackendConfig kernel, ReadKernelConfig(instruction));
  GroupedConfig config;
  config.group_offset = kernel.group_offset();
  config.transpose_rhs = kernel.transpose_rhs();
  if (!kernel.tiling().empty()) config.tm = kernel.tiling(0);
  if (operands.size() == 4) {
    const Literal& offset = operands[3]->array();
    if (offset.element_count() != 1 || !IsInteger(offset.shape().element_type())) {
      return absl::InvalidArgumentError(absl::StrCat("expected a scalar integer group_offset; got ",
                                                     offset.shape().ToString(false)));
    }
    config.group_offset = offset.GetAsInt64(0);
  } else if (operands.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected operands (lhs, rhs, group_sizes[, group_offset]); got ", operands.size()));
  }
  return config;
}

// Start row of every group, plus the total; checks sizes against m.
absl::StatusOr<std::vector<int64_t>> GroupStarts(const Literal& group_sizes, int64_t m) {
  if (group_sizes.shape().rank() != 1 || !IsInteger(group_sizes.shape().element_type())) {
    return absl::InvalidArgumentError(absl::StrCat("expected rank-1 integer group_sizes; got ",
                                                   group_sizes.shape().ToString(false)));
  }
  std::vector<int64_t> starts = {0};
  for (int64_t g = 0; g < group_sizes.element_count(); ++g) {
    const int64_t size = group_sizes.GetAsInt64(g);
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected non-negative group sizes; got group_sizes[", g, "] = ", size));
    }
    // Sizes are data: an s64 size near the int64 limit must not wrap the running total
    // below m and pass the check after the loop.
    PERFSIM_ASSIGN_OR_RETURN(
        const int64_t end,
        CheckedAdd(absl::StrCat("group_sizes[0..", g, "] sum"), starts.back(), size));
    starts.push_back(end);
  }
  if (starts.back() > m) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected group sizes summing to at most m = ", m, "; got ", starts.back()));
  }
  return starts;
}

absl::Status CheckTiling(const GroupedConfig& config, int64_t m) {
  if (config.tm.has_value() && (*config.tm <= 0 || m % *config.tm != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected m = ", m, " to be a multiple of the row tile tm = ", *config.tm,
                     " (megablox raises ValueError)"));
  }
  return absl::OkStatus();
}

template <typename C>
absl::StatusOr<Value> Gmm(DeviceEvaluator& ev, const Instruction& instruction,
                          OperandValues operands, const GroupedConfig& config) {
  const Literal& lhs = operands[0]->array();
  const Literal& rhs = operands[1]->array();
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  if (ls.rank() != 2 || rs.rank() != 3) {
    return absl::InvalidArgumentError(absl::StrCat("expected lhs [m,k] and rhs [G,k,n]; got ",
                                                   ls.ToString(false), " and ",
                                                   rs.ToString(false)));
  }
  const int64_t m = ls.dimensions(0);
  const int64_t k = ls.dimensions(1);
  const int64_t local_groups = rs.dimensions(0);
  const int64_t rhs_k = config.transpose_rhs ? rs.dimensions(2) : rs.dimensions(1);
  const int64_t n = config.transpose_rhs ? rs.dimensions(1) : rs.dimensions(2);
  if (rhs_k != k) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected rhs contracting size ", k, " (lhs ", ls.ToString(false), ", rhs ",
        rs.ToString(false), config.transpose_rhs ? ", transpose_rhs" : "", "); got ", rhs_k));
  }
  const Shape& out_shape = instruction.shape();
  if (!out_shape.IsArray() || out_shape.dimensions() != std::vector<int64_t>{m, n}) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a result [", m, ",", n, "]; got ", out_shape.ToString(false)));
  }
  PERFSIM_RETURN_IF_ERROR(CheckTiling(config, m));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> starts, GroupStarts(operands[2]->array(), m));
  const int64_t total_groups = static_cast<int64_t>(starts.size()) - 1;
  std::vector<C> a, b;
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(lhs, &a));
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(rhs, &b));
  if (config.transpose_rhs) b = PermuteDims(b, rs.dimensions(), {0, 2, 1});
  std::vector<C> c(static_cast<size_t>(m * n), C(0));
  std::vector<bool> written(m, false);
  for (int64_t local = 0; local < local_groups; ++local) {
    // group_offset is data: an offset near the int64 limit skips the group, never wraps.
    int64_t g = 0;
    if (!TryAdd(config.group_offset, local, &g) || g < 0 || g >= total_groups) continue;
    const int64_t r0 = starts[g];
    const int64_t rows = starts[g + 1] - r0;
    MatMulAccumulate<C>(a.data() + r0 * k, k, b.data() + local * k * n, n, c.data() + r0 * n, n,
                        rows, n, k);
    std::fill(written.begin() + r0, written.begin() + r0 + rows, true);
  }
  // Rows no active group wrote: zeroed by megablox when only some groups are local, else
  // left uninitialised (poisoned here).
  const bool zero_rest = local_groups < total_groups;
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           zero_rest ? ev.Allocate(out_shape) : ev.AllocatePoisoned(out_shape));
  Literal rows_literal(Shape::Array(out_shape.element_type(), {1, n}));
  std::vector<C> row(n);
  const int64_t row_bytes = n * ByteWidth(out_shape.element_type());
  for (int64_t i = 0; i < m; ++i) {
    if (!written[i]) continue;
    std::copy(c.begin() + i * n, c.begin() + (i + 1) * n, row.begin());
    PERFSIM_RETURN_IF_ERROR(StoreAccumulator(row, &rows_literal));
    std::memcpy(out->mutable_data().data() + i * row_bytes, rows_literal.data().data(), row_bytes);
  }
  return Value::Array(std::move(out));
}

template <typename C>
absl::StatusOr<Value> Tgmm(DeviceEvaluator& ev, const Instruction& instruction,
                           OperandValues operands, const GroupedConfig& config) {
  const Literal& lhs = operands[0]->array();
  const Literal& rhs = operands[1]->array();
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  if (ls.rank() != 2 || rs.rank() != 2 || ls.dimensions(1) != rs.dimensions(0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected lhs [k,m] and rhs [m,n]; got ", ls.ToString(false), " and ", rs.ToString(false)));
  }
  const int64_t k = ls.dimensions(0);
  const int64_t m = ls.dimensions(1);
  const int64_t n = rs.dimensions(1);
  const Shape& out_shape = instruction.shape();
  if (!out_shape.IsArray() || out_shape.rank() != 3 || out_shape.dimensions(1) != k ||
      out_shape.dimensions(2) != n) {
    return absl::InvalidArgumentError(absl::StrCat("expected a result [G_local,", k, ",", n,
                                                   "]; got ", out_shape.ToString(false)));
  }
  const int64_t local_groups = out_shape.dimensions(0);
  PERFSIM_RETURN_IF_ERROR(CheckTiling(config, m));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> starts, GroupStarts(operands[2]->array(), m));
  const int64_t total_groups = static_cast<int64_t>(starts.size()) - 1;
  std::vector<C> a, b;
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(lhs, &a));
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(rhs, &b));
  std::vector<C> c(static_cast<size_t>(local_groups * k * n), C(0));
  for (int64_t local = 0; local < local_groups; ++local) {
    // group_offset is data: an offset near the int64 limit skips the group, never wraps.
    int64_t g = 0;
    if (!TryAdd(config.group_offset, local, &g) || g < 0 || g >= total_groups) {
      continue;  // no rows: stays zero
    }
    const int64_t r0 = starts[g];
    const int64_t rows = starts[g + 1] - r0;
    // dw[local] = lhs[:, r0:r0+rows] @ rhs[r0:r0+rows, :].
    MatMulAccumulate<C>(a.data() + r0, m, b.data() + r0 * n, n, c.data() + local * k * n, n, k, n,
                        rows);
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(out_shape));
  PERFSIM_RETURN_IF_ERROR(StoreAccumulator(c, out.get()));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> GroupedMatmul(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands, bool transposed) {
  PERFSIM_ASSIGN_OR_RETURN(GroupedConfig config, ReadGroupedConfig(instruction, operands));
  const PrimitiveType out_type = instruction.shape().element_type();
  if (!IsFloatingPoint(out_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a floating-point result; got ", PrimitiveTypeName(out_type)));
  }
  if (out_type == PrimitiveType::kF64) {
    return transposed ? Tgmm<double>(ev, instruction, operands, config)
                      : Gmm<double>(ev, instruction, operands, config);
  }
  return transposed ? Tgmm<float>(ev, instruction, operands, config)
                    : Gmm<float>(ev, instruction, operands, config);
}

// ---- perfsim.fused_ffn (custom_calls.h): the gated expert FFN of every group. ----

enum class FusedActivation { kSilu, kGelu, kClippedSwiglu };

struct FusedFfnConfig {
  int64_t tm = 0;
  int64_t td = 0;
  int64_t tf = 0;
  bool over_f = true;
  FusedActivation activation = FusedActivation::kSilu;
  double clip_limit = 0;
  double sigmoid_alpha = 0;
  int64_t group_offset = 0;
};

absl::StatusOr<FusedFfnConfig> ReadFusedFfnConfig(const Instruction& instruction,
                                                  OperandValues operands) {
  if (operands.size() != 5 && operands.size() != 6) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected operands (x, wi_0, wi_1, wo, group_sizes[, group_offset]); got ",
        operands.size()));
  }
  PERFSIM_ASSIGN_OR_RETURN(const KernelBackendConfig kernel, ReadKernelConfig(instruction));
  FusedFfnConfig c;
  if (kernel.tiling_size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected backend_config \"tiling\":[tm,td,tf]; got '",
                     instruction.attributes().backend_config.value_or(""), "'"));
  }
  c.tm = kernel.tiling(0);
  c.td = kernel.tiling(1);
  c.tf = kernel.tiling(2);
  const std::string& dim = kernel.tiled_dim();
  if (dim != "F" && dim != "D") {
    return absl::InvalidArgumentError(
        absl::StrCat("expected backend_config \"tiled_dim\" \"F\" or \"D\"; got '", dim, "'"));
  }
  c.over_f = dim == "F";
  const std::string& act = kernel.activation();
  if (act == "silu") {
    c.activation = FusedActivation::kSilu;
  } else if (act == "gelu") {
    c.activation = FusedActivation::kGelu;
  } else if (act == "clipped_swiglu") {
    c.activation = FusedActivation::kClippedSwiglu;
    if (!kernel.has_clip_limit() || !kernel.has_sigmoid_alpha()) {
      return absl::InvalidArgumentError(
          "expected backend_config \"clip_limit\" and \"sigmoid_alpha\" numbers for "
          "clipped_swiglu; got none");
    }
    c.clip_limit = kernel.clip_limit();
    c.sigmoid_alpha = kernel.sigmoid_alpha();
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected backend_config \"activation\" silu, gelu or clipped_swiglu; got '", act, "'"));
  }
  c.group_offset = kernel.group_offset();
  if (operands.size() == 6) {
    const Literal& offset = operands[5]->array();
    if (offset.element_count() != 1 || !IsInteger(offset.shape().element_type())) {
      return absl::InvalidArgumentError(absl::StrCat("expected a scalar integer group_offset; got ",
                                                     offset.shape().ToString(false)));
    }
    c.group_offset = offset.GetAsInt64(0);
  }
  return c;
}

// act(h0, h1) in the order of operations sim/lowering/ffn.cc emits, so f32 results agree with
// the unfused lowering to the last bit where the dots do.
template <typename C>
C FusedActivationValue(const FusedFfnConfig& c, C h0, C h1) {
  auto sigmoid = [](C v) { return C(1) / (C(1) + std::exp(-v)); };
  switch (c.activation) {
    case FusedActivation::kSilu:
      return h0 * sigmoid(h0) * h1;
    case FusedActivation::kGelu: {
      const C inner = std::tanh((h0 + h0 * (h0 * h0) * C(0.044715)) * C(0.7978845608028654));
      return h0 * C(0.5) * (inner + C(1)) * h1;
    }
    case FusedActivation::kClippedSwiglu: {
      const C limit = static_cast<C>(c.clip_limit);
      const C g = std::min(h0, limit);
      const C u = std::max(std::min(h1, limit), -limit);
      return g * sigmoid(g * static_cast<C>(c.sigmoid_alpha)) * (u + C(1));
    }
  }
  return C(0);
}

template <typename C>
absl::StatusOr<Value> FusedFfn(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands, const FusedFfnConfig& config) {
  const Literal& x = operands[0]->array();
  const Shape& xs = x.shape();
  const Shape& w0s = operands[1]->array().shape();
  const Shape& w1s = operands[2]->array().shape();
  const Shape& wos = operands[3]->array().shape();
  if (xs.rank() != 2 || w0s.rank() != 3 || w0s.dimensions() != w1s.dimensions() ||
      wos.rank() != 3 || wos.dimensions(0) != w0s.dimensions(0) ||
      w0s.dimensions(1) != xs.dimensions(1) || wos.dimensions(1) != w0s.dimensions(2) ||
      wos.dimensions(2) != xs.dimensions(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected x [m,D], wi_0 and wi_1 [G,D,F], wo [G,F,D]; got ", xs.ToString(false), ", ",
        w0s.ToString(false), ", ", w1s.ToString(false), ", ", wos.ToString(false)));
  }
  const int64_t m = xs.dimensions(0);
  const int64_t d = xs.dimensions(1);
  const int64_t f = w0s.dimensions(2);
  const int64_t local_groups = w0s.dimensions(0);
  const Shape& out_shape = instruction.shape();
  if (!out_shape.IsArray() || out_shape.dimensions() != std::vector<int64_t>{m, d}) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a result [", m, ",", d, "]; got ", out_shape.ToString(false)));
  }
  GroupedConfig row_tile;
  row_tile.tm = config.tm;
  PERFSIM_RETURN_IF_ERROR(CheckTiling(row_tile, m));
  const int64_t whole = config.over_f ? config.td : config.tf;
  const int64_t tile = config.over_f ? config.tf : config.td;
  const int64_t whole_dim = config.over_f ? d : f;
  const int64_t tile_dim = config.over_f ? f : d;
  if (whole != whole_dim || tile < 1 || tile > tile_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a tiling over ", config.over_f ? "F" : "D", " with ",
        config.over_f ? "td = D = " : "tf = F = ", whole_dim, " and a tile in [1, ", tile_dim,
        "]; got (", config.tm, ", ", config.td, ", ", config.tf, ")"));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> starts, GroupStarts(operands[4]->array(), m));
  const int64_t total_groups = static_cast<int64_t>(starts.size()) - 1;
  std::vector<C> xa, w0, w1, wo;
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(x, &xa));
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(operands[1]->array(), &w0));
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(operands[2]->array(), &w1));
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(operands[3]->array(), &wo));
  // The tiling changes the order in which a real kernel visits F or D, not the f32 sums the
  // reference computes: h over all of D, then out over all of F.
  std::vector<C> c(static_cast<size_t>(m * d), C(0));
  std::vector<bool> written(m, false);
  for (int64_t local = 0; local < local_groups; ++local) {
    // group_offset is data: an offset near the int64 limit skips the group, never wraps.
    int64_t g = 0;
    if (!TryAdd(config.group_offset, local, &g) || g < 0 || g >= total_groups) continue;
    const int64_t r0 = starts[g];
    const int64_t rows = starts[g + 1] - r0;
    if (rows == 0) continue;
    std::vector<C> h0(static_cast<size_t>(rows * f), C(0)), h1(h0.size(), C(0));
    MatMulAccumulate<C>(xa.data() + r0 * d, d, w0.data() + local * d * f, f, h0.data(), f, rows,
                        f, d);
    MatMulAccumulate<C>(xa.data() + r0 * d, d, w1.data() + local * d * f, f, h1.data(), f, rows,
                        f, d);
    for (size_t i = 0; i < h0.size(); ++i) h0[i] = FusedActivationValue(config, h0[i], h1[i]);
    // The second matmul takes the hidden activation in the weights' type (bf16 on the MXU).
    Literal rounded(Shape::Array(wos.element_type(), {rows, f}));
    PERFSIM_RETURN_IF_ERROR(StoreAccumulator(h0, &rounded));
    PERFSIM_RETURN_IF_ERROR(ToAccumulator(rounded, &h0));
    MatMulAccumulate<C>(h0.data(), f, wo.data() + local * f * d, d, c.data() + r0 * d, d, rows, d,
                        f);
    std::fill(written.begin() + r0, written.begin() + r0 + rows, true);
  }
  // Rows no active group owns: as perfsim.gmm leaves them (zero when only some groups are
  // local, else never written, so poisoned).
  const bool zero_rest = local_groups < total_groups;
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           zero_rest ? ev.Allocate(out_shape) : ev.AllocatePoisoned(out_shape));
  Literal row_literal(Shape::Array(out_shape.element_type(), {1, d}));
  std::vector<C> row(d);
  const int64_t row_bytes = d * ByteWidth(out_shape.element_type());
  for (int64_t i = 0; i < m; ++i) {
    if (!written[i]) continue;
    std::copy(c.begin() + i * d, c.begin() + (i + 1) * d, row.begin());
    PERFSIM_RETURN_IF_ERROR(StoreAccumulator(row, &row_literal));
    std::memcpy(out->mutable_data().data() + i * row_bytes, row_literal.data().data(), row_bytes);
  }
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> FusedFfnCustomCall(DeviceEvaluator& ev, const Instruction& instruction,
                                         OperandValues operands) {
  PERFSIM_ASSIGN_OR_RETURN(FusedFfnConfig config, ReadFusedFfnConfig(instruction, operands));
  const PrimitiveType out_type = instruction.shape().element_type();
  if (!IsFloatingPoint(out_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a floating-point result; got ", PrimitiveTypeName(out_type)));
  }
  return out_type == PrimitiveType::kF64 ? FusedFfn<double>(ev, instruction, operands, config)
                                         : FusedFfn<float>(ev, instruction, operands, config);
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, CustomCallFn, std::less<>> targets;
};

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    r->targets[std::string(kAllocateBufferTarget)] = AllocateBuffer;
    r->targets["Sharding"] = &ShardingIdentity;
    r->targets["Pin"] = &PinOrUnpin;
    r->targets["Unpin"] = &PinOrUnpin;
    r->targets["TopK"] = TopKCustomCall;
    r->targets["SPMDFullToShardShape"] = &ShardingIdentity;
    r->targets["SPMDShardToFullShape"] = &ShardingIdentity;
    r->targets[std::string(kGmmTarget)] = [](DeviceEvaluator& ev, const Instruction& i,
                                             OperandValues ops) {
      return GroupedMatmul(ev, i, ops, /*transposed=*/false);
    };
    r->targets[std::string(kTgmmTarget)] = [](DeviceEvaluator& ev, const Instruction& i,
                                              OperandValues ops) {
      return GroupedMatmul(ev, i, ops, /*transposed=*/true);
    };
    r->targets[std::string(kFusedFfnTarget)] = FusedFfnCustomCall;
    r->targets[kSdyGlobalToLocalShapeTarget] = SdyGlobalToLocalShape;
    r->targets[kSdyLocalToGlobalShapeTarget] = SdyLocalToGlobalShape;
    r->targets[kSdyFuncResultShardingTarget] = SdyFuncResultSharding;
    return r;
  }();
  return *registry;
}

}  // namespace

bool CustomCallPassesOperandThrough(const Instruction& instruction) {
  if (!IsShardingTarget(instruction.attributes().custom_call_target) ||
      instruction.operand_count() != 1) {
    return false;
  }
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& result = instruction.shape();
  if (!operand.IsArray() || !result.IsArray() || operand.dimensions() != result.dimensions()) {
    return false;
  }
  // A target re-registered by RegisterCustomCall may do anything.
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = registry.targets.find(instruction.attributes().custom_call_target);
  return it != registry.targets.end() && it->second.target<decltype(&ShardingIdentity)>() != nullptr &&
         *it->second.target<decltype(&ShardingIdentity)>() == &ShardingIdentity;
}

void RegisterCustomCall(std::string target, CustomCallFn fn) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.targets[std::move(target)] = std::move(fn);
}

std::vector<std::string> RegisteredCustomCallTargets() {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<std::string> out;
  for (const auto& [target, fn] : registry.targets) out.push_back(target);
  return out;
}

absl::StatusOr<Value> EvalCustomCall(DeviceEvaluator& ev, const Instruction& instruction,
                                     OperandValues operands) {
  const std::string& target = instruction.attributes().custom_call_target;
  CustomCallFn fn;
  {
    Registry& registry = GetRegistry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.targets.find(target);
    if (it != registry.targets.end()) fn = it->second;
  }
  if (!fn) {
    return absl::UnimplementedError(
        absl::StrCat("expected a custom-call target the interpreter knows (",
                     absl::StrJoin(RegisteredCustomCallTargets(), ", "), "); got '", target, "'"));
  }
  for (const Value* v : operands) {
    if (!v->is_array()) return absl::InvalidArgumentError("expected array operands");
  }
  return fn(ev, instruction, operands);
}

}  // namespace interp
}  // namespace perfsim
