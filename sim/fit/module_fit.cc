// Reading kernel custom-calls and fit-checking them (module_fit.h).
#include "sim/fit/module_fit.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/ir/backend_config.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// "gmm_wi0 (perfsim.gmm at 12:3)".
std::string Where(const Instruction& instruction) {
  std::string where =
      absl::StrCat(instruction.name(), " (", instruction.attributes().custom_call_target);
  const SourceLocation& at = instruction.location();
  if (at.line > 0) absl::StrAppend(&where, " at ", at.line, ":", at.column);
  return absl::StrCat(where, ")");
}

absl::Status Malformed(const Instruction& instruction, absl::string_view expected,
                       absl::string_view got) {
  return absl::InvalidArgumentError(
      absl::StrCat(Where(instruction), ": expected ", expected, "; got ", got));
}

// The array shape of operand `i` with rank `rank`.
absl::StatusOr<const Shape*> OperandArray(const Instruction& instruction, int64_t i,
                                          absl::string_view role, int64_t rank) {
  const Shape& shape = instruction.operand(i)->shape();
  if (!shape.IsArray() || shape.rank() != rank) {
    return Malformed(instruction, absl::StrCat(role, " (operand ", i, ") of rank ", rank),
                     shape.ToString(false));
  }
  return &shape;
}

// The backend_config "tiling"; `fallback` when absent, or an error when there is none.
absl::StatusOr<Tiling> ReadTiling(const Instruction& instruction, absl::string_view expected,
                                  std::optional<Tiling> fallback) {
  KernelBackendConfig config;
  PERFSIM_RETURN_IF_ERROR(ReadBackendConfig(instruction, &config));
  if (config.tiling_size() == 0) {
    if (fallback.has_value()) return *fallback;
    return Malformed(instruction, absl::StrCat("backend_config \"tiling\": ", expected), "none");
  }
  if (config.tiling_size() != 3) {
    return Malformed(instruction, absl::StrCat("backend_config \"tiling\": ", expected),
                     absl::StrCat("[", absl::StrJoin(config.tiling(), ","), "]"));
  }
  return Tiling{config.tiling(0), config.tiling(1), config.tiling(2)};
}

// "D" or "F" from backend_config "tiled_dim".
absl::StatusOr<KernelKind> ReadFusedKernel(const Instruction& instruction) {
  KernelBackendConfig config;
  PERFSIM_RETURN_IF_ERROR(ReadBackendConfig(instruction, &config));
  const std::string& dim = config.tiled_dim();
  if (dim == "D") return KernelKind::kFusedFfnDTiled;
  if (dim == "F") return KernelKind::kFusedFfnFTiled;
  return Malformed(instruction, "backend_config \"tiled_dim\": \"D\" or \"F\"",
                   dim.empty() ? "none" : absl::StrCat("\"", dim, "\""));
}

using KernelCall = std::optional<std::pair<KernelProblem, Tiling>>;

// perfsim.gmm and perfsim.tgmm (module_fit.h).
absl::StatusOr<KernelCall> MegabloxCall(const Instruction& instruction, bool is_gmm) {
  if (instruction.operand_count() < 3 || instruction.operand_count() > 4) {
    return Malformed(instruction, "3 or 4 operands (lhs, rhs, group_sizes[, group_offset])",
                     absl::StrCat(instruction.operand_count()));
  }
  const Shape& result = instruction.shape();
  if (!result.IsArray() || result.rank() != (is_gmm ? 2 : 3)) {
    return Malformed(instruction, absl::StrCat("a result of rank ", is_gmm ? 2 : 3),
                     result.ToString(false));
  }
  PERFSIM_ASSIGN_OR_RETURN(const Shape* lhs, OperandArray(instruction, 0, "lhs", 2));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* rhs, OperandArray(instruction, 1, "rhs", is_gmm ? 3 : 2));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* sizes, OperandArray(instruction, 2, "group_sizes", 1));
  KernelProblem problem;
  problem.dtypes = {lhs->element_type(), rhs->element_type(), result.element_type()};
  problem.shape.groups = sizes->dimensions(0);
  if (is_gmm) {
    problem.kernel = KernelKind::kGmm;
    KernelBackendConfig config;
    PERFSIM_RETURN_IF_ERROR(ReadBackendConfig(instruction, &config));
    problem.options.transpose_rhs = config.transpose_rhs();
    problem.shape.m = lhs->dimensions(0);
    problem.shape.k = lhs->dimensions(1);
    problem.shape.n = rhs->dimensions(problem.options.transpose_rhs ? 1 : 2);
  } else {
    problem.kernel = KernelKind::kTgmm;
    problem.shape.k = lhs->dimensions(0);
    problem.shape.m = lhs->dimensions(1);
    problem.shape.n = rhs->dimensions(1);
  }
  PERFSIM_ASSIGN_OR_RETURN(Tiling tiling,
                           ReadTiling(instruction, "[tm, tk, tn]", kMegabloxDefaultTiling));
  return KernelCall(std::make_pair(problem, tiling));
}

// perfsim.fused_ffn (module_fit.h).
absl::StatusOr<KernelCall> FusedFfnCall(const Instruction& instruction) {
  if (instruction.operand_count() < 5 || instruction.operand_count() > 6) {
    return Malformed(instruction,
                     "5 or 6 operands (x, wi_0, wi_1, wo, group_sizes[, group_offset])",
                     absl::StrCat(instruction.operand_count()));
  }
  const Shape& result = instruction.shape();
  if (!result.IsArray() || result.rank() != 2) {
    return Malformed(instruction, "a result of rank 2", result.ToString(false));
  }
  PERFSIM_ASSIGN_OR_RETURN(const Shape* x, OperandArray(instruction, 0, "x", 2));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* wi_0, OperandArray(instruction, 1, "wi_0", 3));
  PERFSIM_RETURN_IF_ERROR(OperandArray(instruction, 2, "wi_1", 3).status());
  PERFSIM_RETURN_IF_ERROR(OperandArray(instruction, 3, "wo", 3).status());
  PERFSIM_ASSIGN_OR_RETURN(const Shape* sizes, OperandArray(instruction, 4, "group_sizes", 1));
  KernelProblem problem;
  PERFSIM_ASSIGN_OR_RETURN(problem.kernel, ReadFusedKernel(instruction));
  problem.dtypes = {x->element_type(), wi_0->element_type(), result.element_type()};
  problem.shape = {x->dimensions(0), x->dimensions(1), wi_0->dimensions(2), sizes->dimensions(0)};
  PERFSIM_ASSIGN_OR_RETURN(Tiling tiling, ReadTiling(instruction, "[tm, td, tf]", std::nullopt));
  return KernelCall(std::make_pair(problem, tiling));
}

absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok() || context.empty()) return status;
  absl::Status annotated(status.code(), absl::StrCat(context, ": ", status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    annotated.SetPayload(url, payload);
  });
  return annotated;
}

absl::Status Misfit(std::string message) {
  absl::Status status = absl::ResourceExhaustedError(message);
  status.SetPayload(kMisfitPayloadUrl, absl::Cord("fit"));
  return status;
}

std::string FitMessage(const InstructionFit& fit) {
  const FitReport& r = fit.report;
  const std::string head =
      absl::StrCat(Where(*fit.instruction), ": ", r.kernel, " tiling ", TilingToString(r.tiling));
  if (!r.violations.empty()) return absl::StrCat(head, " ", r.reason);
  if (r.margin_bytes >= 0) return absl::StrCat(head, ": ", r.reason);
  const absl::string_view space = MemorySpaceName(r.limits.space);
  std::vector<std::string> largest;
  for (const FitBuffer& b : LargestBuffers(r.buffers)) {
    if (b.space != r.limits.space || largest.size() == 3) continue;
    largest.push_back(absl::StrCat(b.name, " ", b.count, " x ", DimsToString(b.allocated_shape),
                                   " ", PrimitiveTypeName(b.dtype), " = ", FormatBytes(b.bytes)));
  }
  return absl::StrCat(head, " needs ", FormatBytes(r.required_bytes), " of ", space, " (",
                      r.required_bytes, " bytes); limit ", FormatBytes(r.limit_bytes), " (",
                      r.limit_bytes, " bytes, ", r.limits.limit_source, "), short by ",
                      FormatBytes(-r.margin_bytes),
                      "; largest buffers: ", absl::StrJoin(largest, ", "));
}

}  // namespace

bool IsMisfit(const absl::Status& status) {
  return status.GetPayload(kMisfitPayloadUrl).has_value();
}

absl::StatusOr<std::optional<std::pair<KernelProblem, Tiling>>> KernelCallProblem(
    const Instruction& instruction) {
  if (instruction.opcode() != Opcode::kCustomCall) return std::nullopt;
  const std::string& target = instruction.attributes().custom_call_target;
  if (target == kGmmTarget) return MegabloxCall(instruction, /*is_gmm=*/true);
  if (target == kTgmmTarget) return MegabloxCall(instruction, /*is_gmm=*/false);
  if (target == kFusedFfnTarget) return FusedFfnCall(instruction);
  return std::nullopt;
}

absl::StatusOr<std::vector<InstructionFit>> FitCheckModule(
    const Module& module, const Chip& chip, std::optional<int64_t> vmem_limit_bytes) {
  std::vector<InstructionFit> fits;
  for (const std::unique_ptr<Computation>& computation : module.computations()) {
    for (const std::unique_ptr<Instruction>& instruction : computation->instructions()) {
      PERFSIM_ASSIGN_OR_RETURN(auto call, KernelCallProblem(*instruction));
      if (!call.has_value()) continue;
      absl::StatusOr<FitReport> report =
          CheckFit(call->first, call->second, chip, vmem_limit_bytes);
      if (!report.ok()) return Annotate(report.status(), Where(*instruction));
      fits.push_back(InstructionFit{instruction.get(), *std::move(report)});
    }
  }
  return fits;
}

absl::Status MisfitStatus(const InstructionFit& fit) {
  if (fit.report.fits) return absl::OkStatus();
  return Misfit(FitMessage(fit));
}

absl::Status CheckModuleFits(const Module& module, const Chip& chip,
                             std::optional<int64_t> vmem_limit_bytes, absl::string_view context) {
  absl::StatusOr<std::vector<InstructionFit>> fits = FitCheckModule(module, chip, vmem_limit_bytes);
  if (!fits.ok()) return WithContext(fits.status(), context);
  std::vector<std::string> misfits;
  for (const InstructionFit& fit : *fits) {
    if (!fit.report.fits) misfits.push_back(FitMessage(fit));
  }
  if (misfits.empty()) return absl::OkStatus();
  return WithContext(Misfit(absl::StrJoin(misfits, "\n")), context);
}

}  // namespace perfsim
