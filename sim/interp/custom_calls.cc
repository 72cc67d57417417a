// The custom-call registry and the built-in reference implementations (custom_calls.h).
#include "sim/interp/custom_calls.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sim/interp/dot_kernel.h"
#include "sim/interp/dot_util.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

// ---- backend_config JSON: just enough to read top-level scalar and array fields. ----

// The text of the JSON value of top-level field `key`, or nullopt.
std::optional<std::string> JsonField(absl::string_view text, absl::string_view key) {
  std::string json(absl::StripAsciiWhitespace(text));
  if (json.size() >= 2 && json.front() == '"' && json.back() == '"') {
    // The string form backend_config="{\"a\":1}": drop the quotes and unescape.
    std::string unquoted;
    for (size_t i = 1; i + 1 < json.size(); ++i) {
      if (json[i] == '\\' && i + 2 < json.size()) ++i;
      unquoted.push_back(json[i]);
    }
    json = std::move(unquoted);
  }
  int depth = 0;
  size_t i = 0;
  auto read_string = [&](size_t at, size_t* end) {
    std::string out;
    size_t j = at + 1;
    for (; j < json.size() && json[j] != '"'; ++j) {
      if (json[j] == '\\' && j + 1 < json.size()) ++j;
      out.push_back(json[j]);
    }
    *end = j + 1;
    return out;
  };
  while (i < json.size()) {
    const char c = json[i];
    if (c == '{' || c == '[') {
      ++depth;
      ++i;
    } else if (c == '}' || c == ']') {
      --depth;
      ++i;
    } else if (c == '"') {
      size_t end = i;
      const std::string name = read_string(i, &end);
      size_t j = end;
      while (j < json.size() && absl::ascii_isspace(static_cast<unsigned char>(json[j]))) ++j;
      if (depth == 1 && j < json.size() && json[j] == ':' && name == key) {
        ++j;
        while (j < json.size() && absl::ascii_isspace(static_cast<unsigned char>(json[j]))) ++j;
        size_t k = j;
        int nest = 0;
        bool in_string = false;
        for (; k < json.size(); ++k) {
          const char d = json[k];
          if (in_string) {
            if (d == '\\')
              ++k;
            else if (d == '"')
              in_string = false;
            continue;
          }
          if (d == '"')
            in_string = true;
          else if (d == '[' || d == '{')
            ++nest;
          else if (d == ']' || d == '}') {
            if (nest == 0) break;
            --nest;
          } else if (d == ',' && nest == 0) {
            break;
          }
        }
        return std::string(absl::StripAsciiWhitespace(absl::string_view(json).substr(j, k - j)));
      }
      i = end;
    } else {
      ++i;
    }
  }
  return std::nullopt;
}

std::optional<int64_t> ParseJsonInt(absl::string_view value) {
  value = absl::StripAsciiWhitespace(value);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  int64_t out = 0;
  if (!absl::SimpleAtoi(value, &out)) return std::nullopt;
  return out;
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
  GroupedConfig config;
  const std::string json = instruction.attributes().backend_config.value_or("");
  if (auto v = JsonIntField(json, "group_offset")) config.group_offset = *v;
  if (auto v = JsonBoolField(json, "transpose_rhs")) config.transpose_rhs = *v;
  if (auto v = JsonIntArrayField(json, "tiling"); v.has_value() && !v->empty()) config.tm = (*v)[0];
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
    starts.push_back(starts.back() + size);
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
    const int64_t g = config.group_offset + local;
    if (g < 0 || g >= total_groups) continue;
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
    const int64_t g = config.group_offset + local;
    if (g < 0 || g >= total_groups) continue;  // no rows: stays zero
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

struct Registry {
  std::mutex mutex;
  std::map<std::string, CustomCallFn, std::less<>> targets;
};

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    r->targets[std::string(kAllocateBufferTarget)] = AllocateBuffer;
    r->targets["Sharding"] = ShardingIdentity;
    r->targets["TopK"] = TopKCustomCall;
    r->targets["SPMDFullToShardShape"] = ShardingIdentity;
    r->targets["SPMDShardToFullShape"] = ShardingIdentity;
    r->targets[std::string(kGmmTarget)] = [](DeviceEvaluator& ev, const Instruction& i,
                                             OperandValues ops) {
      return GroupedMatmul(ev, i, ops, /*transposed=*/false);
    };
    r->targets[std::string(kTgmmTarget)] = [](DeviceEvaluator& ev, const Instruction& i,
                                              OperandValues ops) {
      return GroupedMatmul(ev, i, ops, /*transposed=*/true);
    };
    return r;
  }();
  return *registry;
}

}  // namespace

std::optional<int64_t> JsonIntField(absl::string_view json, absl::string_view key) {
  const std::optional<std::string> value = JsonField(json, key);
  if (!value.has_value()) return std::nullopt;
  return ParseJsonInt(*value);
}

std::optional<bool> JsonBoolField(absl::string_view json, absl::string_view key) {
  const std::optional<std::string> value = JsonField(json, key);
  if (!value.has_value()) return std::nullopt;
  if (*value == "true") return true;
  if (*value == "false") return false;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> JsonIntArrayField(absl::string_view json,
                                                      absl::string_view key) {
  const std::optional<std::string> value = JsonField(json, key);
  if (!value.has_value() || value->size() < 2 || value->front() != '[' || value->back() != ']') {
    return std::nullopt;
  }
  std::vector<int64_t> out;
  const absl::string_view inner = absl::string_view(*value).substr(1, value->size() - 2);
  if (absl::StripAsciiWhitespace(inner).empty()) return out;
  for (absl::string_view part : absl::StrSplit(inner, ',')) {
    const std::optional<int64_t> v = ParseJsonInt(part);
    if (!v.has_value()) return std::nullopt;
    out.push_back(*v);
  }
  return out;
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
