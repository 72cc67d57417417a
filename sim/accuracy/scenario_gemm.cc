// kernel_grouped_gemm rows: one grouped-matmul call (scenario.h).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/accuracy/scenario_internal.h"
#include "sim/accuracy/text_fields.h"
#include "sim/cost/gpu_gemm.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/kernels.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr char kShapeForms[] =
    "'groups=G; M_per_group=M; N=..; K=..', 'group_sizes=[a,b,..]; N=..; K=..', "
    "'m=..; groups=..; N=..; K=..', 'G groups x R, N=.., K=..', '[M,K] x [G,K,N]' or "
    "'rhs (E=.., K x N=AxB)' with tokens 'touched groups x rows = AxB'";

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// A positive integer under one of `keys` of the op_shape, nullopt when no key is there.
absl::StatusOr<std::optional<int64_t>> ShapeInteger(const Measurement& row, const KeyValues& kv,
                                                    std::initializer_list<absl::string_view> keys) {
  const std::optional<std::string> text = kv.Find(keys);
  if (!text.has_value()) return std::optional<int64_t>();
  const std::optional<int64_t> value = ParseInteger(*text);
  if (!value.has_value() || *value <= 0) {
    return CellError(row, "op_shape",
                     absl::StrCat("a positive integer for ", *keys.begin(), " (got '", *text,
                                  "'); the forms are ", kShapeForms));
  }
  return value;
}

struct GemmShape {
  int64_t k = 0;  // the forward matmul's contraction (K) and output width (N)
  int64_t n = 0;
  std::vector<int64_t> group_sizes;
  std::string how;  // for the description
};

// Shapes of the row (scenario.h lists the forms); nullopt when the op_shape has none of them.
absl::StatusOr<std::optional<GemmShape>> ParseGemmShape(const Measurement& row) {
  const KeyValues kv = ParseOpShape(row.Field("op_shape").text);
  GemmShape shape;
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> k, ShapeInteger(row, kv, {"K", "k"}));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> n, ShapeInteger(row, kv, {"N", "n"}));
  if (const std::optional<std::string> kn = kv.Find({"K x N", "KxN", "k x n"})) {
    const std::optional<std::pair<int64_t, int64_t>> dims = ParseDimsPair(*kn);
    if (!dims.has_value()) return CellError(row, "op_shape", "'K x N=AxB' with positive A, B");
    k = dims->first;
    n = dims->second;
  }
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> groups,
                           ShapeInteger(row, kv, {"groups", "G", "num_groups"}));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> per_group,
                           ShapeInteger(row, kv, {"M_per_group", "m_per_group"}));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> m, ShapeInteger(row, kv, {"m", "M"}));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> experts, ShapeInteger(row, kv, {"E"}));
  if (!k.has_value() || !n.has_value()) return std::optional<GemmShape>();
  shape.k = *k;
  shape.n = *n;
  // A group list longer than any MoE's expert count would only exhaust memory.
  constexpr int64_t kMaxGroups = int64_t{1} << 16;
  for (const std::optional<int64_t>& count : {groups, experts}) {
    if (count.has_value() && *count > kMaxGroups) {
      return CellError(row, "op_shape",
                       absl::StrCat("at most ", kMaxGroups, " groups (E or groups)"));
    }
  }

  if (const std::optional<std::string> list = kv.Find({"group_sizes"})) {
    absl::string_view body = absl::StripAsciiWhitespace(*list);
    if (!absl::ConsumePrefix(&body, "[") || !absl::ConsumeSuffix(&body, "]")) {
      return CellError(row, "op_shape", "group_sizes=[a,b,...]");
    }
    for (absl::string_view piece : absl::StrSplit(body, ',')) {
      const std::optional<int64_t> size = ParseInteger(piece);
      if (!size.has_value()) {
        return CellError(row, "op_shape", "group_sizes of non-negative integers");
      }
      shape.group_sizes.push_back(*size);
    }
    shape.how = absl::StrCat("group sizes [", absl::StrJoin(shape.group_sizes, ","), "]");
  } else if (groups.has_value() && per_group.has_value()) {
    shape.group_sizes.assign(*groups, *per_group);
    shape.how = absl::StrCat(*groups, " groups of ", *per_group, " rows");
  } else if (groups.has_value() && m.has_value()) {
    for (int64_t g = 0; g < *groups; ++g) {
      shape.group_sizes.push_back(*m / *groups + (g < *m % *groups ? 1 : 0));
    }
    shape.how = absl::StrCat(*m, " rows split evenly over ", *groups, " groups");
  } else {
    // "touched groups x rows = 30x3" in the tokens cell, over E groups.
    const KeyValues tokens = ParseKeyValues(row.Field("tokens").text);
    const std::optional<std::string> touched = tokens.Find({"touched groups x rows"});
    if (!touched.has_value()) return std::optional<GemmShape>();
    const std::optional<std::pair<int64_t, int64_t>> dims = ParseDimsPair(*touched);
    if (!dims.has_value()) return CellError(row, "tokens", "'touched groups x rows = AxB'");
    if (!experts.has_value()) {
      PERFSIM_ASSIGN_OR_RETURN(experts, OptionalIntegerColumn(row, "E"));
    }
    if (!experts.has_value() || *experts < dims->first) {
      return CellError(row, "op_shape",
                       absl::StrCat("E >= the ", dims->first,
                                    " touched groups (in op_shape or "
                                    "the E column)"));
    }
    // The touched groups spread evenly over the E groups.
    shape.group_sizes.assign(*experts, 0);
    for (int64_t i = 0; i < dims->first; ++i) {
      shape.group_sizes[i * *experts / dims->first] = dims->second;
    }
    shape.how = absl::StrCat(dims->first, " of ", *experts, " groups touched, ", dims->second,
                             " rows each");
  }
  if (shape.group_sizes.empty()) return CellError(row, "op_shape", "at least one group");
  // The cost model counts flops and bytes in int64: 2·M·K·N must fit with room to spare.
  double rows = 0;
  for (int64_t size : shape.group_sizes) rows += static_cast<double>(size);
  if (2 * rows * static_cast<double>(shape.k) * static_cast<double>(shape.n) > 0x1p62) {
    return CellError(row, "op_shape", "a matmul of at most 2^62 flops (2·M·K·N)");
  }
  return std::optional<GemmShape>(std::move(shape));
}

// The element types: "lhs bf16 ...; rhs fp8", "FP8 e4m3 in (...), BF16 out", or one word.
struct GemmTypes {
  PrimitiveType lhs = PrimitiveType::kBF16;
  PrimitiveType rhs = PrimitiveType::kBF16;
  PrimitiveType out = PrimitiveType::kBF16;
};

std::optional<GemmTypes> ParseGemmTypes(absl::string_view text) {
  std::optional<PrimitiveType> lhs = FindDtypeWord(text, "lhs");
  if (!lhs.has_value()) lhs = FindDtypeWordBefore(text, "in");
  if (!lhs.has_value()) lhs = FindDtypeWord(text, "");
  if (!lhs.has_value()) return std::nullopt;
  GemmTypes types;
  types.lhs = *lhs;
  types.rhs = FindDtypeWord(text, "rhs").value_or(*lhs);
  // The output is what the text says, else the lhs type (preferred_element_type default).
  types.out = FindDtypeWordBefore(text, "out").value_or(*lhs);
  return types;
}

// gmm_v2 / tgmm_v2 default tiling (shared/reference/backends.md 1b): tk, tn start at k, n
// rounded up to 128; tn halves first (floor 2 MXU columns), then tk (floor 128), until sim/fit
// says the kernel fits its VMEM limit.
absl::StatusOr<GroupedMatmulSpec> V2Tiling(GroupedMatmulSpec spec, const Chip& chip,
                                           std::string* rule) {
  const bool tgmm = spec.kind == GroupedMatmulKind::kTgmm;
  const int64_t lhs_bits = BitWidth(spec.lhs_type);
  const int64_t rhs_bits = BitWidth(spec.rhs_type);
  if (tgmm) {
    spec.tm = std::min<int64_t>(256, spec.m);
  } else {
    const int64_t lhs_factor = std::min<int64_t>((16 + lhs_bits - 1) / lhs_bits, 2);
    const int64_t rhs_factor = std::min<int64_t>((16 + rhs_bits - 1) / rhs_bits, 2);
    spec.tm = std::min<int64_t>(128 * lhs_factor / rhs_factor, spec.m);
  }
  spec.tk = RoundUp(spec.k, 128);
  spec.tn = RoundUp(spec.n, 128);
  const int64_t tn_floor =
      std::max<int64_t>(128, 2 * chip.proto().compute().matrix_unit().output_columns_elements());
  KernelProblem problem;
  problem.kernel = tgmm ? KernelKind::kTgmmV2 : KernelKind::kGmmV2;
  problem.shape = {spec.m, spec.k, spec.n, spec.num_groups};
  problem.dtypes = {spec.lhs_type, spec.rhs_type, spec.out_type};
  while (true) {
    PERFSIM_ASSIGN_OR_RETURN(FitReport fit, CheckFit(problem, {spec.tm, spec.tk, spec.tn}, chip));
    if (fit.fits) {
      *rule = absl::StrCat(KernelName(problem.kernel), " default tiling (", spec.tm, ", ", spec.tk,
                           ", ", spec.tn, "), fits ", FormatBytes(fit.limit_bytes), " of VMEM");
      return spec;
    }
    if (spec.tn / 2 >= tn_floor) {
      spec.tn /= 2;
    } else if (spec.tk / 2 >= 128) {
      spec.tk /= 2;
    } else {
      *rule = absl::StrCat(KernelName(problem.kernel), " tiling (", spec.tm, ", ", spec.tk, ", ",
                           spec.tn, "), the smallest the default rule reaches: ", fit.reason);
      return spec;
    }
  }
}

}  // namespace

absl::StatusOr<MappedRow> MapGroupedGemmRow(const Measurement& row, const Chip& chip,
                                            Scenario scenario) {
  if (scenario.metric == ScenarioMetric::kLinkBandwidth) {
    return SkippedRow("a grouped GEMM's bandwidth (GB/s) is not predicted; its time or TFLOP/s is");
  }
  PERFSIM_ASSIGN_OR_RETURN(std::optional<GemmShape> shape, ParseGemmShape(row));
  if (!shape.has_value()) {
    return SkippedRow(absl::StrCat("op_shape: expected ", kShapeForms, "; got '",
                                   CellText(row, "op_shape"), "'"));
  }
  const std::optional<GemmTypes> types = ParseGemmTypes(row.Field("dtype").text);
  if (!types.has_value()) {
    return SkippedRow(absl::StrCat("dtype: expected a dtype word (bf16, fp8, ...); got '",
                                   CellText(row, "dtype"), "'"));
  }
  const std::optional<std::string> op = ParseKeyValues(row.Field("op_shape").text).Find({"op"});
  GroupedMatmulSpec spec;
  spec.lhs_type = types->lhs;
  spec.rhs_type = types->rhs;
  spec.out_type = types->out;
  spec.num_groups = static_cast<int64_t>(shape->group_sizes.size());
  int64_t rows = 0;
  for (int64_t size : shape->group_sizes) rows += size;
  spec.m = std::max<int64_t>(rows, 1);
  spec.group_sizes = shape->group_sizes;
  std::string op_name = "fwd gmm";
  if (!op.has_value() || *op == "fwd") {
    spec.kind = GroupedMatmulKind::kGmm;
    spec.k = shape->k;
    spec.n = shape->n;
  } else if (*op == "dlhs") {
    // dx[m, K] = dy[m, N] @ W[g]^T: the contraction is N.
    spec.kind = GroupedMatmulKind::kGmm;
    spec.k = shape->n;
    spec.n = shape->k;
    op_name = "dlhs gmm";
  } else if (*op == "drhs") {
    // dW[g][K, N] = x[rows of g]^T @ dy[rows of g]: tgmm over the grouped rows.
    spec.kind = GroupedMatmulKind::kTgmm;
    spec.k = shape->k;
    spec.n = shape->n;
    op_name = "drhs tgmm";
  } else {
    return CellError(row, "op_shape", "op=fwd, op=dlhs or op=drhs");
  }
  if (rows == 0) return CellError(row, "op_shape", "at least one row in some group");

  GroupedGemmScenario gemm;
  if (chip.is_gpu()) {
    // The kernel picks its CTA tile; CostGroupedMatmul prices a GPU gmm / tgmm with the tile
    // and L2 model of sim/cost/gpu_gemm.h, as predict does. The spec's tiling is that tile,
    // for the description. jax.lax.ragged_dot on a GPU is XLA's own op, which XLA expands to
    // a dense dot over every group (grouped_matmul.h, kXlaRaggedDot); any other kernel the row
    // names (DeepGEMM, CUTLASS, cuBLASLt, Triton) is a grouped-GEMM kernel.
    const bool xla_ragged_dot = ContainsNoCase(row.Field("backend_kernel").text, "ragged_dot");
    if (xla_ragged_dot) spec.implementation = GroupedMatmulImplementation::kXlaRaggedDot;
    const GpuGemmTile tile = ChooseGpuGemmTile(GpuGemmsOf(spec), chip);
    spec.tm = tile.tm;
    spec.tk = tile.tk;
    spec.tn = tile.tn;
    gemm.tiling_rule = absl::StrCat(
        xla_ragged_dot ? "XLA:GPU ragged-dot as one dense dot over all groups; " : "",
        "GPU: CTA tile (", tile.tm, ", ", tile.tn, "), k step ", tile.tk,
        ", L2 reuse (sim/cost/gpu_gemm.h)");
  } else if (ContainsNoCase(row.Field("backend_kernel").text, "gmm_v2")) {
    PERFSIM_ASSIGN_OR_RETURN(spec, V2Tiling(spec, chip, &gemm.tiling_rule));
  } else {
    spec.tm = spec.tk = spec.tn = 128;
    gemm.tiling_rule = "ragged-dot tiling (128, 128, 128)";
  }
  gemm.spec = spec;
  scenario.description =
      absl::StrCat(op_name, " m=", spec.m, " k=", spec.k, " n=", spec.n, ", ", shape->how, ", ",
                   PrimitiveTypeName(spec.lhs_type), "x", PrimitiveTypeName(spec.rhs_type), "->",
                   PrimitiveTypeName(spec.out_type), "; ", gemm.tiling_rule);
  scenario.what = std::move(gemm);
  MappedRow out;
  out.scenario = std::move(scenario);
  return out;
}

}  // namespace perfsim
