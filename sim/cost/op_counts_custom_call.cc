// Custom-call counting (op_counts.h): XLA's -1 "unknown", and in true-cost mode the kernels
// perfsim knows (grouped matmuls, cuBLAS gemms, XLA:CPU TopK), the costs Pallas kernels
// declare, and annotations that move no data.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "proto/backend_config.pb.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/cost/op_counts_internal.h"
#include "sim/cost/shape_bytes.h"
#include "sim/ir/backend_config.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/util/status.h"

namespace perfsim {
namespace cost_internal {
namespace {

// The fields of a declared cost, and their range: more than 1e30 flops or bytes is more than
// every computer ever built could do in a year, so such a number is a mistake.
bool IsPlausibleDeclaredCost(double value) {
  return std::isfinite(value) && value >= 0 && value <= 1e30;
}

// The cost_estimate of a custom-call's backend_config, read as PallasBackendConfig: the top-level
// one, else the one inside custom_call_config (where Pallas writes it); nullopt when there is
// none. XLA lets a custom-call carry any text as its backend_config (a typed-FFI call's MLIR
// attributes `{module = "..."}`, `unspecified_dims=[0]`): text that protobuf's JSON parser cannot
// read declares no cost, unless it names a cost_estimate, which is then a declared cost perfsim
// cannot read: an error (ReadBackendConfig's, naming the instruction), never a silent lower bound.
absl::StatusOr<std::optional<CostEstimate>> DeclaredCost(const Instruction& instruction) {
  PallasBackendConfig config;
  const absl::Status status = ReadBackendConfig(instruction, &config);
  if (!status.ok()) {
    if (absl::StrContains(instruction.attributes().backend_config.value_or(""), "cost_estimate")) {
      return status;
    }
    return std::nullopt;
  }
  if (config.has_cost_estimate()) return config.cost_estimate();
  if (config.custom_call_config().has_cost_estimate()) {
    return config.custom_call_config().cost_estimate();
  }
  return std::nullopt;
}

// A readable declared cost (an unreadable one fails the cost pass: CheckDeclaredCost).
bool DeclaresCost(const Instruction& instruction) {
  const absl::StatusOr<std::optional<CostEstimate>> declared = DeclaredCost(instruction);
  return declared.ok() && declared->has_value();
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
    // rest is cuBLAS workspace). A config that does not read leaves the default counts.
    GpuGemmBackendConfig config;
    const bool has_dnums = ReadBackendConfig(instruction, &config).ok() &&
                           config.gemm_backend_config().has_dot_dimension_numbers();
    const Shape& result = instruction.shape().IsTuple() && instruction.shape().tuple_size() > 0
                              ? instruction.shape().tuple_shapes(0)
                              : instruction.shape();
    if (has_dnums && instruction.operand_count() >= 1) {
      const auto& contracting =
          config.gemm_backend_config().dot_dimension_numbers().lhs_contracting_dimensions();
      DotDimensionNumbers d;
      d.lhs_contracting_dimensions.assign(contracting.begin(), contracting.end());
      c.flops = static_cast<double>(DotFlops(instruction.operand(0)->shape(), ElementsIn(result), d));
    }
    c.bytes_accessed -= c.output_bytes;
    c.output_bytes = static_cast<double>(LeafBytes(result));
    c.bytes_accessed += c.output_bytes;
    return c;
  }
  // A kernel that declares its cost (Pallas: backend_config.custom_call_config.cost_estimate).
  // Implausible values are left out here; CheckDeclaredCost refuses them.
  const absl::StatusOr<std::optional<CostEstimate>> declared = DeclaredCost(instruction);
  if (declared.ok() && declared->has_value()) {
    const CostEstimate& estimate = **declared;
    if (estimate.has_flops() && IsPlausibleDeclaredCost(estimate.flops())) {
      c.flops = estimate.flops();
    }
    if (estimate.has_transcendentals() && IsPlausibleDeclaredCost(estimate.transcendentals())) {
      c.transcendentals = estimate.transcendentals();
    }
    if (estimate.has_bytes_accessed() && IsPlausibleDeclaredCost(estimate.bytes_accessed())) {
      c.bytes_accessed = estimate.bytes_accessed();
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
         cost_internal::DeclaresCost(instruction);
}

absl::Status CheckDeclaredCost(const Instruction& instruction) {
  if (instruction.opcode() != Opcode::kCustomCall) return absl::OkStatus();
  PERFSIM_ASSIGN_OR_RETURN(const std::optional<CostEstimate> estimate,
                           cost_internal::DeclaredCost(instruction));
  if (!estimate.has_value()) return absl::OkStatus();
  const struct {
    const char* key;
    bool present;
    double value;
  } fields[] = {{"flops", estimate->has_flops(), estimate->flops()},
                {"transcendentals", estimate->has_transcendentals(), estimate->transcendentals()},
                {"bytes_accessed", estimate->has_bytes_accessed(), estimate->bytes_accessed()}};
  for (const auto& field : fields) {
    if (!field.present || cost_internal::IsPlausibleDeclaredCost(field.value)) continue;
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": cost_estimate.", field.key,
                     ": expected a finite number in [0, 1e30]; got ", field.value));
  }
  return absl::OkStatus();
}

}  // namespace perfsim
