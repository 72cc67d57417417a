// Custom-call counting (op_counts.h): XLA's -1 "unknown", and in true-cost mode the kernels
// perfsim knows (grouped matmuls, cuBLAS gemms, XLA:CPU TopK), the costs Pallas kernels
// declare, and annotations that move no data.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/cost/op_counts_internal.h"
#include "sim/cost/shape_bytes.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/util/json_fields.h"

namespace perfsim {
namespace cost_internal {
namespace {

// A number field of a JSON object, written as a number or a quoted string.
std::optional<double> JsonNumber(absl::string_view json, absl::string_view key) {
  const std::optional<std::string> text = JsonTopLevelValue(json, key);
  if (!text.has_value()) return std::nullopt;
  absl::string_view value = *text;
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  double out = 0;
  if (!absl::SimpleAtod(value, &out)) return std::nullopt;
  return out;
}

// The fields of a declared cost, and their range: more than 1e30 flops or bytes is more than
// every computer ever built could do in a year, so such a number is a mistake.
constexpr const char* kDeclaredCostKeys[] = {"flops", "transcendentals", "bytes_accessed"};
bool IsPlausibleDeclaredCost(double value) {
  return std::isfinite(value) && value >= 0 && value <= 1e30;
}

// A declared cost's field when it is a plausible number; CheckDeclaredCost reports the others.
std::optional<double> DeclaredValue(absl::string_view estimate, absl::string_view key) {
  const std::optional<double> value = JsonNumber(estimate, key);
  if (value.has_value() && IsPlausibleDeclaredCost(*value)) return value;
  return std::nullopt;
}

// The cost_estimate object of a custom-call's backend_config, top level or inside
// custom_call_config (where Pallas writes it).
std::optional<std::string> CostEstimateJson(const Instruction& instruction) {
  const std::string config = instruction.attributes().backend_config.value_or("");
  std::optional<std::string> estimate = JsonTopLevelValue(config, "cost_estimate");
  if (estimate.has_value()) return estimate;
  if (const std::optional<std::string> inner = JsonTopLevelValue(config, "custom_call_config")) {
    return JsonTopLevelValue(*inner, "cost_estimate");
  }
  return std::nullopt;
}

// Custom-call targets that annotate shardings or allocate, and move no data.
bool IsAnnotationTarget(absl::string_view target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape" || target == kAllocateBufferTarget ||
         absl::StartsWith(target, "xla.sdy.");
}

// XLA:CPU's TopK custom-call in the form counted below: one operand, (values, indices).
bool IsCountedTopK(const Instruction& instruction) {
  return instruction.attributes().custom_call_target == "TopK" &&
         instruction.operand_count() == 1 && instruction.shape().IsTuple() &&
         instruction.shape().tuple_size() == 2;
}

bool IsCublasGemmTarget(absl::string_view target) {
  return absl::StartsWith(target, "__cublas$gemm") || absl::StartsWith(target, "__cublas$lt$matmul");
}

}  // namespace

OpCounts Counter::CountCustomCall(const Instruction& instruction, OpCounts c) {
  const std::string& target = instruction.attributes().custom_call_target;
  if (xla()) {
    // XLA marks a custom call as unknown: -1 for flops, bytes and every per-operand entry.
    c.flops = -1;
    c.bytes_accessed = -1;
    c.output_bytes = -1;
    for (double& b : c.operand_bytes) b = -1;
    return c;
  }
  if (IsAnnotationTarget(target)) {
    return OpCounts{.operand_bytes = std::vector<double>(instruction.operand_count(), 0.0)};
  }
  if (IsGroupedMatmulTarget(target)) {
    const absl::StatusOr<GroupedMatmulSpec> spec = GroupedMatmulSpecFromInstruction(instruction);
    if (spec.ok()) {
      const absl::StatusOr<GroupedMatmulWork> work = CountGroupedMatmul(*spec);
      if (work.ok()) {
        c.flops = work->flops;
        c.transcendentals = work->transcendentals;
        c.bytes_accessed = work->bytes_accessed;
        c.output_bytes = work->out_bytes;
        c.operand_bytes.assign(instruction.operand_count(), 0.0);
        // Weights: one operand for the matmuls, three (same size each) for fused_ffn.
        const size_t weights = spec->kind == GroupedMatmulKind::kFusedFfn ? 3 : 1;
        if (!c.operand_bytes.empty()) c.operand_bytes[0] = work->lhs_bytes;
        for (size_t i = 1; i <= weights && i < c.operand_bytes.size(); ++i) {
          c.operand_bytes[i] = work->rhs_bytes / static_cast<double>(weights);
        }
        // The group sizes (and offset) are read into SMEM once.
        for (size_t i = weights + 1; i < c.operand_bytes.size(); ++i) {
          c.operand_bytes[i] = static_cast<double>(ShapeSizeBytes(instruction.operand(i)->shape()));
          c.bytes_accessed += c.operand_bytes[i];
        }
      }
    }
    return c;
  }
  if (IsCountedTopK(instruction)) {
    const Shape& values = instruction.shape().tuple_shapes(0);
    const int64_t k = values.rank() > 0 ? values.dimensions(values.rank() - 1) : 1;
    c.flops = static_cast<double>(ElementsIn(instruction.operand(0)->shape()) *
                                  std::max<int64_t>(1, Log2Ceiling(k)));
    return c;
  }
  if (IsCublasGemmTarget(target)) {
    // As XLA's GPU analysis: dot flops from gemm_backend_config, result = tuple element 0 (the
    // rest is cuBLAS workspace).
    const std::string config = instruction.attributes().backend_config.value_or("");
    const std::optional<std::string> gemm = JsonTopLevelValue(config, "gemm_backend_config");
    const std::optional<std::string> dnums =
        gemm ? JsonTopLevelValue(*gemm, "dot_dimension_numbers") : std::nullopt;
    const std::optional<std::vector<int64_t>> contracting =
        dnums ? JsonTopLevelIntArray(*dnums, "lhs_contracting_dimensions") : std::nullopt;
    const Shape& result = instruction.shape().IsTuple() && instruction.shape().tuple_size() > 0
                              ? instruction.shape().tuple_shapes(0)
                              : instruction.shape();
    if (contracting.has_value() && instruction.operand_count() >= 1) {
      DotDimensionNumbers d;
      d.lhs_contracting_dimensions = *contracting;
      c.flops = static_cast<double>(DotFlops(instruction.operand(0)->shape(), ElementsIn(result), d));
    }
    c.bytes_accessed -= c.output_bytes;
    c.output_bytes = static_cast<double>(LeafBytes(result));
    c.bytes_accessed += c.output_bytes;
    return c;
  }
  // A kernel that declares its cost (Pallas: backend_config.custom_call_config.cost_estimate).
  if (const std::optional<std::string> estimate = CostEstimateJson(instruction)) {
    if (const std::optional<double> v = DeclaredValue(*estimate, "flops")) c.flops = *v;
    if (const std::optional<double> v = DeclaredValue(*estimate, "transcendentals")) {
      c.transcendentals = *v;
    }
    if (const std::optional<double> v = DeclaredValue(*estimate, "bytes_accessed")) {
      c.bytes_accessed = *v;
    }
  }
  return c;
}

}  // namespace cost_internal

bool CustomCallWorkKnown(const Instruction& instruction) {
  if (instruction.opcode() != Opcode::kCustomCall) return false;
  const std::string& target = instruction.attributes().custom_call_target;
  return cost_internal::IsAnnotationTarget(target) || IsGroupedMatmulTarget(target) ||
         cost_internal::IsCountedTopK(instruction) || cost_internal::IsCublasGemmTarget(target) ||
         cost_internal::CostEstimateJson(instruction).has_value();
}

absl::Status CheckDeclaredCost(const Instruction& instruction) {
  if (instruction.opcode() != Opcode::kCustomCall) return absl::OkStatus();
  const std::optional<std::string> estimate = cost_internal::CostEstimateJson(instruction);
  if (!estimate.has_value()) return absl::OkStatus();
  for (const char* key : cost_internal::kDeclaredCostKeys) {
    const std::optional<std::string> text = JsonTopLevelValue(*estimate, key);
    if (!text.has_value()) continue;
    const std::optional<double> value = cost_internal::JsonNumber(*estimate, key);
    if (value.has_value() && cost_internal::IsPlausibleDeclaredCost(*value)) continue;
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": cost_estimate.", key,
                     ": expected a finite number in [0, 1e30]; got ", *text));
  }
  return absl::OkStatus();
}
}  // namespace perfsim
