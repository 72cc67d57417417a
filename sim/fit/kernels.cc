// Kernel names, problem validation and the footprint dispatch (kernels.h).
#include "sim/fit/kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace perfsim {
namespace {

// Bounds that keep every byte count below 2^63: a block is at most two dimensions of at most
// 2^24 elements of at most 64 bits, times a buffer count of at most 16.
constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr int64_t kMaxRows = int64_t{1} << 40;
constexpr int64_t kMaxBufferCount = 16;

}  // namespace

absl::string_view KernelName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kGmm:
      return "gmm";
    case KernelKind::kTgmm:
      return "tgmm";
    case KernelKind::kGmmV2:
      return "gmm_v2";
    case KernelKind::kTgmmV2:
      return "tgmm_v2";
    case KernelKind::kFusedFfnDTiled:
      return "fused_ffn_d_tiled";
    case KernelKind::kFusedFfnFTiled:
      return "fused_ffn_f_tiled";
    case KernelKind::kRaggedGather:
      return "ragged_gather";
    case KernelKind::kGpuGroupedGemm:
      return "gpu_grouped_gemm";
  }
  return "?";
}

const std::vector<KernelKind>& AllKernels() {
  static const std::vector<KernelKind>* kinds = new std::vector<KernelKind>{
      KernelKind::kGmm,          KernelKind::kTgmm,           KernelKind::kGmmV2,
      KernelKind::kTgmmV2,       KernelKind::kFusedFfnDTiled, KernelKind::kFusedFfnFTiled,
      KernelKind::kRaggedGather, KernelKind::kGpuGroupedGemm,
  };
  return *kinds;
}

std::optional<KernelKind> ParseKernelName(absl::string_view name) {
  for (KernelKind kind : AllKernels()) {
    if (KernelName(kind) == name) return kind;
  }
  return std::nullopt;
}

bool IsTpuKernel(KernelKind kind) {
  switch (kind) {
    case KernelKind::kGmm:
    case KernelKind::kTgmm:
    case KernelKind::kGmmV2:
    case KernelKind::kTgmmV2:
    case KernelKind::kFusedFfnDTiled:
    case KernelKind::kFusedFfnFTiled:
    case KernelKind::kRaggedGather:
      return true;
    case KernelKind::kGpuGroupedGemm:
      return false;
  }
  return false;
}

std::string TilingToString(const Tiling& tiling) {
  // ragged_gather has two tiles (tn = 0).
  if (tiling.tn == 0) return absl::StrCat("(", tiling.tm, ", ", tiling.tk, ")");
  return absl::StrCat("(", tiling.tm, ", ", tiling.tk, ", ", tiling.tn, ")");
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

absl::Status ValidateProblem(const KernelProblem& problem) {
  const ProblemShape& s = problem.shape;
  std::vector<std::string> problems;
  auto in_range = [&](absl::string_view name, int64_t value, int64_t max) {
    if (value < 1 || value > max) {
      problems.push_back(absl::StrCat(name, ": expected 1..", max, "; got ", value));
    }
  };
  in_range("m", s.m, kMaxRows);
  in_range("k", s.k, kMaxDim);
  in_range("n", s.n, kMaxDim);
  in_range("groups", s.groups, kMaxDim);
  const KernelOptions& o = problem.options;
  in_range("lhs buffer count", o.lhs_buffer_count, kMaxBufferCount);
  in_range("pipeline stages", o.pipeline_stages, kMaxBufferCount);
  if (o.quant_block_size < 0 || o.quant_block_size > kMaxDim) {
    problems.push_back(
        absl::StrCat("quant block size: expected 0..", kMaxDim, "; got ", o.quant_block_size));
  }
  for (PrimitiveType dtype : {problem.dtypes.lhs, problem.dtypes.rhs, problem.dtypes.out}) {
    if (!IsArrayType(dtype) || BitWidth(dtype) <= 0) {
      problems.push_back(
          absl::StrCat("dtype: expected an array element type; got ", PrimitiveTypeName(dtype)));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(KernelName(problem.kernel), ": ", absl::StrJoin(problems, "; ")));
}

std::optional<Tiling> DefaultTiling(const KernelProblem& problem) {
  const ProblemShape& s = problem.shape;
  // MaxText's row tile and embed / mlp tiles, as perfsim's lowerings default them.
  constexpr int64_t kRowTile = 512;
  constexpr int64_t kDimTile = 1024;
  switch (problem.kernel) {
    case KernelKind::kGmm:
    case KernelKind::kTgmm:
      return Tiling{std::min<int64_t>(128, s.m), std::min<int64_t>(128, s.k),
                    std::min<int64_t>(128, s.n)};
    case KernelKind::kFusedFfnFTiled:
      return Tiling{std::min(kRowTile, s.m), s.k, std::min(kDimTile, s.n)};
    case KernelKind::kFusedFfnDTiled:
      return Tiling{std::min(kRowTile, s.m), std::min(kDimTile, s.k), s.n};
    case KernelKind::kGmmV2:
    case KernelKind::kTgmmV2:
    case KernelKind::kRaggedGather:
    case KernelKind::kGpuGroupedGemm:
      return std::nullopt;
  }
  return std::nullopt;
}

absl::string_view DefaultTilingSource(KernelKind kind) {
  switch (kind) {
    case KernelKind::kGmm:
    case KernelKind::kTgmm:
      return "megablox's default tiling=(128, 128, 128), clamped to the dimensions";
    case KernelKind::kFusedFfnFTiled:
      return "perfsim's fused_expert_ffn default (512, D, 1024), clamped to the dimensions";
    case KernelKind::kFusedFfnDTiled:
      return "perfsim's fused_expert_ffn default (512, 1024, F), clamped to the dimensions";
    case KernelKind::kGmmV2:
    case KernelKind::kTgmmV2:
      return "no fixed default: the kernel shrinks its tiles until they fit its limit, a "
             "heuristic the references give only in outline";
    case KernelKind::kRaggedGather:
    case KernelKind::kGpuGroupedGemm:
      return "no default: the references give no tiling for this kernel";
  }
  return "";
}

absl::Status CheckTilingRange(const KernelProblem& problem, const Tiling& tiling) {
  std::vector<std::pair<absl::string_view, int64_t>> used = {{"tm", tiling.tm}, {"tk", tiling.tk}};
  // ragged_gather has no third tile.
  if (problem.kernel != KernelKind::kRaggedGather) used.push_back({"tn", tiling.tn});
  for (const auto& [name, value] : used) {
    if (value < 1 || value > kMaxDim) {
      return absl::InvalidArgumentError(absl::StrCat(KernelName(problem.kernel), ": tiling ", name,
                                                     ": expected 1..", kMaxDim, "; got ", value));
    }
  }
  return absl::OkStatus();
}

KernelFootprint ComputeFootprint(const KernelProblem& problem, const Tiling& tiling,
                                 const Chip& chip) {
  switch (problem.kernel) {
    case KernelKind::kGmm:
    case KernelKind::kTgmm:
    case KernelKind::kGmmV2:
    case KernelKind::kTgmmV2:
      return MegabloxFootprint(problem, tiling);
    case KernelKind::kFusedFfnDTiled:
    case KernelKind::kFusedFfnFTiled:
      return FusedFfnFootprint(problem, tiling);
    case KernelKind::kRaggedGather:
      return RaggedGatherFootprint(problem, tiling);
    case KernelKind::kGpuGroupedGemm:
      return GpuGroupedGemmFootprint(problem, tiling, chip);
  }
  return {};
}

void CheckDtype(absl::string_view what, PrimitiveType dtype,
                std::initializer_list<PrimitiveType> allowed, KernelFootprint& footprint) {
  for (PrimitiveType ok : allowed) {
    if (dtype == ok) return;
  }
  std::vector<std::string> names;
  for (PrimitiveType ok : allowed) names.emplace_back(PrimitiveTypeName(ok));
  footprint.violations.push_back(absl::StrCat(
      what, ": expected one of ", absl::StrJoin(names, ", "), "; got ", PrimitiveTypeName(dtype)));
}

void CheckBlockDim(absl::string_view tile_name, int64_t tile, absl::string_view dim_name,
                   int64_t dim, int64_t multiple, KernelFootprint& footprint) {
  if (tile % multiple == 0 || tile == dim) return;
  footprint.violations.push_back(absl::StrCat(tile_name, ": expected a multiple of ", multiple,
                                              " or the whole ", dim_name, " (", dim, "); got ",
                                              tile));
}

void CheckDivides(absl::string_view tile_name, int64_t tile, absl::string_view dim_name,
                  int64_t dim, KernelFootprint& footprint) {
  if (dim % tile == 0) return;
  footprint.violations.push_back(absl::StrCat(dim_name, " % ", tile_name, " == 0: expected ",
                                              dim_name, " (", dim, ") divisible by ", tile_name,
                                              " (", tile, ")"));
}

}  // namespace perfsim
