// `perfsim fit`: does a kernel tiling fit on-chip memory, and which tiling is fastest among
// those that do (sim/fit).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "fmt/format.h"
#include "proto/report.pb.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/kernels.h"
#include "sim/fit/tiling_search.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/proto_format.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr char kFitUsage[] =
    R"(usage: perfsim fit --kernel NAME --hw NAME --shape m,k,n[,groups] --dtype lhs,rhs,out
                   [--tiling tm,tk,tn] [--search] [--format=table|json] [kernel options]

Checks whether a kernel's tiling fits on-chip memory (VMEM, SMEM, SparseCore memory or GPU
shared memory) before a compile fails with "Ran out of memory in memory space vmem"; with
--search, finds the fastest legal tiling that fits.

  --kernel     gmm, tgmm (megablox v1), gmm_v2, tgmm_v2 (tokamax / MaxText v2),
               fused_ffn_d_tiled, fused_ffn_f_tiled, ragged_gather, gpu_grouped_gemm
  --hw         a chip from 'perfsim hw list' (tpu_v5p, ...) or a .textproto file
  --shape      gmm*, gpu_grouped_gemm: lhs [m,k] x rhs [groups,k,n] -> [m,n]
               tgmm*: lhs [k,m] x rhs [m,n] -> [groups,k,n]
               fused_ffn_*: m token rows, k = D, n = F, groups = experts
               ragged_gather: m rows gathered, k = D (row width), n = reduce group K (1 = none)
  --dtype      lhs,rhs,out element types (bf16, f32, f16, s8/int8, f8e4m3fn/fp8, s4/int4), or
               one type for all three
  --tiling     tm,tk,tn; fused_ffn_*: tm,td,tf (the untiled one equal to its dimension);
               ragged_gather: rows per step,D chunk; gpu_grouped_gemm: CTA tile M,K,N.
               Without --tiling and --search, the kernel's default tiling, each tile clamped
               to its dimension:
                 gmm, tgmm           128,128,128: megablox's tiling default (gmm.py signature,
                                     shared/reference/backends.md 1b)
                 fused_ffn_f_tiled   512,D,1024 and fused_ffn_d_tiled 512,1024,F: perfsim's
                                     fused_expert_ffn lowering defaults (MaxText's 512 / 1024
                                     tiles, backends.md 1a; sim/lowering/fused_expert_ffn.cc)
               gmm_v2, tgmm_v2 (tiles chosen by a heuristic to fit the limit), ragged_gather
               and gpu_grouped_gemm have no default: give --tiling or --search
  --search     enumerate legal tilings; print the fastest that fits and the runners-up, ranked
               by the cost model (sim/cost/grouped_matmul.h CostGroupedMatmul, group sizes
               unknown: tiles_m + groups - 1 visited m-tiles, tile waste, weight re-reads when
               tk < k) for gmm*, tgmm* and fused_ffn_*; by the GPU GEMM model
               (sim/cost/gpu_gemm.h: CTA waves, L2-aware traffic) for gpu_grouped_gemm; by a
               roofline proxy for ragged_gather (sim/fit/tiling_cost.h)
  --top N      runners-up to list with --search (default 5)
  --vmem-limit BYTES  replace the VMEM limit (default: the chip's scoped VMEM limit for gmm and
               tgmm, 0.9 x physical VMEM for the others); suffixes KiB, MiB, GiB (or K, M, G)
  --format=json  the report as JSON (FitReport in proto/report.proto)
kernel options:
  --existing-out      gmm: existing_out; gmm_v2, tgmm_v2: partial_sum
  --lhs-buffers N     gmm, tgmm: lhs buffer count (default 2)
  --transpose-rhs     gmm, gmm_v2, gpu_grouped_gemm: rhs stored [groups,n,k]
  --fuse-act          gmm_v2: fused activation (two rhs streams)
  --bias              gmm_v2: bias row
  --quant-block N     gmm_v2: k elements per rhs scale (quantised rhs; default all of k)
  --stages N          gpu_grouped_gemm: shared-memory pipeline stages (default 4)

Exit codes: 0 fits (or --search found a tiling that fits), 1 does not fit (a broken kernel
rule counts as not fitting), 2 bad input.
)";

absl::Status UsageError(absl::string_view message) { return absl::InvalidArgumentError(message); }

// "m,k,n[,groups]" and the like: `min`..`max` positive integers.
absl::StatusOr<std::vector<int64_t>> ParseIntList(absl::string_view flag, absl::string_view text,
                                                  size_t min, size_t max,
                                                  absl::string_view expected) {
  std::vector<int64_t> values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &value) || value < 1) {
      values.clear();
      break;
    }
    values.push_back(value);
  }
  if (values.size() < min || values.size() > max) {
    return UsageError(absl::StrCat("--", flag, ": expected ", expected, "; got '", text, "'"));
  }
  return values;
}

absl::StatusOr<PrimitiveType> ParseDtype(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "fp8") return PrimitiveType::kF8E4M3FN;
  if (lower == "int8") return PrimitiveType::kS8;
  if (lower == "int4") return PrimitiveType::kS4;
  std::optional<PrimitiveType> type = ParsePrimitiveType(lower);
  if (!type.has_value() || !IsArrayType(*type) || *type == PrimitiveType::kPred) {
    return UsageError(
        absl::StrCat("--dtype: expected an element type such as bf16, f32, s8, "
                     "f8e4m3fn; got '",
                     name, "'"));
  }
  return *type;
}

absl::StatusOr<OperandDtypes> ParseDtypes(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ',');
  if (parts.size() != 1 && parts.size() != 3) {
    return UsageError(
        absl::StrCat("--dtype: expected lhs,rhs,out or one type for all; got '", text, "'"));
  }
  std::vector<PrimitiveType> types;
  for (absl::string_view part : parts) {
    PERFSIM_ASSIGN_OR_RETURN(PrimitiveType type, ParseDtype(absl::StripAsciiWhitespace(part)));
    types.push_back(type);
  }
  if (types.size() == 1) return OperandDtypes{types[0], types[0], types[0]};
  return OperandDtypes{types[0], types[1], types[2]};
}

// "33554432", "32MiB", "32M", "16384KiB".
absl::StatusOr<int64_t> ParseBytes(absl::string_view flag, absl::string_view text) {
  absl::string_view digits = absl::StripAsciiWhitespace(text);
  int64_t scale = 1;
  const std::pair<absl::string_view, int64_t> kSuffixes[] = {
      {"KiB", int64_t{1} << 10}, {"MiB", int64_t{1} << 20}, {"GiB", int64_t{1} << 30},
      {"K", int64_t{1} << 10},   {"M", int64_t{1} << 20},   {"G", int64_t{1} << 30}};
  for (const auto& [suffix, factor] : kSuffixes) {
    if (digits.size() > suffix.size() && digits.substr(digits.size() - suffix.size()) == suffix) {
      digits.remove_suffix(suffix.size());
      scale = factor;
      break;
    }
  }
  int64_t value = 0;
  if (!absl::SimpleAtoi(digits, &value) || value < 1 || value > (int64_t{1} << 40) / scale) {
    return UsageError(absl::StrCat("--", flag,
                                   ": expected a positive byte count such as 33554432 or 32MiB; "
                                   "got '",
                                   text, "'"));
  }
  return value * scale;
}

// Kernel options given for a kernel they do not apply to are usage errors.
absl::Status RequireKernel(const ParsedFlags& flags, const std::string& flag, KernelKind kernel,
                           std::initializer_list<KernelKind> applies_to) {
  if (!flags.Has(flag)) return absl::OkStatus();
  std::vector<std::string> names;
  for (KernelKind k : applies_to) {
    if (k == kernel) return absl::OkStatus();
    names.emplace_back(KernelName(k));
  }
  return UsageError(absl::StrCat("--", flag, ": applies to ", absl::StrJoin(names, ", "),
                                 "; got --kernel ", KernelName(kernel)));
}

absl::StatusOr<KernelOptions> ParseOptions(const ParsedFlags& flags, KernelKind kernel) {
  using K = KernelKind;
  PERFSIM_RETURN_IF_ERROR(
      RequireKernel(flags, "existing-out", kernel, {K::kGmm, K::kGmmV2, K::kTgmmV2}));
  PERFSIM_RETURN_IF_ERROR(RequireKernel(flags, "lhs-buffers", kernel, {K::kGmm, K::kTgmm}));
  PERFSIM_RETURN_IF_ERROR(
      RequireKernel(flags, "transpose-rhs", kernel, {K::kGmm, K::kGmmV2, K::kGpuGroupedGemm}));
  PERFSIM_RETURN_IF_ERROR(RequireKernel(flags, "fuse-act", kernel, {K::kGmmV2}));
  PERFSIM_RETURN_IF_ERROR(RequireKernel(flags, "bias", kernel, {K::kGmmV2}));
  PERFSIM_RETURN_IF_ERROR(RequireKernel(flags, "quant-block", kernel, {K::kGmmV2}));
  PERFSIM_RETURN_IF_ERROR(RequireKernel(flags, "stages", kernel, {K::kGpuGroupedGemm}));
  KernelOptions options;
  options.existing_out = flags.Has("existing-out");
  options.transpose_rhs = flags.Has("transpose-rhs");
  options.fuse_activation = flags.Has("fuse-act");
  options.bias = flags.Has("bias");
  if (flags.Has("lhs-buffers")) {
    PERFSIM_ASSIGN_OR_RETURN(
        std::vector<int64_t> v,
        ParseIntList("lhs-buffers", flags.Get("lhs-buffers"), 1, 1, "a positive buffer count"));
    options.lhs_buffer_count = v[0];
  }
  if (flags.Has("quant-block")) {
    PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                             ParseIntList("quant-block", flags.Get("quant-block"), 1, 1,
                                          "a positive number of k elements"));
    options.quant_block_size = v[0];
  }
  if (flags.Has("stages")) {
    PERFSIM_ASSIGN_OR_RETURN(
        std::vector<int64_t> v,
        ParseIntList("stages", flags.Get("stages"), 1, 1, "a positive number of stages"));
    options.pipeline_stages = v[0];
  }
  return options;
}

// ---- output ----

std::string DtypeName(PrimitiveType type) { return std::string(PrimitiveTypeName(type)); }

// [tm, tk, tn]; [rows, chunk] for ragged_gather (tn = 0).
void SetTiling(const Tiling& t, google::protobuf::RepeatedField<double>* out) {
  out->Add(t.tm);
  out->Add(t.tk);
  if (t.tn != 0) out->Add(t.tn);
}

std::string Header(const FitReport& r) {
  const KernelProblem& p = r.problem;
  return fmt::format("{} on {}: m={} k={} n={} groups={}, {} x {} -> {}", r.kernel, r.chip,
                     p.shape.m, p.shape.k, p.shape.n, p.shape.groups, DtypeName(p.dtypes.lhs),
                     DtypeName(p.dtypes.rhs), DtypeName(p.dtypes.out));
}

std::string BytesCell(int64_t bytes) { return fmt::format("{} ({} B)", FormatBytes(bytes), bytes); }

void PrintBuffers(const FitReport& r, std::ostream& out) {
  static constexpr char kRow[] = "  {:<14} {:<18} {:<14} {:<14} {:<8} {:>5} {:>12}\n";
  out << fmt::format(kRow, "buffer", "memory", "block", "allocated", "dtype", "count", "bytes");
  for (const FitBuffer& b : r.buffers) {
    out << fmt::format(kRow, std::string(b.name), std::string(MemorySpaceName(b.space)),
                       DimsToString(b.block_shape), DimsToString(b.allocated_shape),
                       DtypeName(b.dtype), b.count, FormatBytes(b.bytes));
  }
}

void PrintReport(const FitReport& r, std::ostream& out) {
  const std::string space(MemorySpaceName(r.limits.space));
  const std::string required = absl::StrCat(space, " required");
  const std::string physical = absl::StrCat("physical ", space);
  // Labels in one column as wide as the longest ("SparseCore memory required").
  const size_t width = std::max<size_t>(16, std::max(required.size(), physical.size()));
  auto line = [&](const std::string& label, const std::string& value) {
    out << "  " << label << std::string(width - label.size() + 1, ' ') << value << "\n";
  };
  PrintBuffers(r, out);
  line(required, BytesCell(r.required_bytes));
  line("limit", absl::StrCat(BytesCell(r.limit_bytes), ": ", r.limits.limit_source));
  line("margin", BytesCell(r.margin_bytes));
  if (r.limits.default_limit_bytes != r.limit_bytes) {
    line("default limit", absl::StrCat(BytesCell(r.limits.default_limit_bytes), ": ",
                                       r.fits_default_limit ? "fits" : "does not fit"));
  }
  if (r.physical_bytes != r.limit_bytes || r.limits.space != MemorySpace::kSparseCoreMemory) {
    line(physical, absl::StrCat(BytesCell(r.physical_bytes), ": ",
                                r.fits_physical ? "fits" : "does not fit"));
  }
  if (r.smem_required_bytes > 0) {
    line("SMEM required", absl::StrCat(FormatBytes(r.smem_required_bytes), " of ",
                                       FormatBytes(r.limits.smem_limit_bytes)));
  }
  for (size_t i = 1; i < r.violations.size(); ++i) {
    out << "  also breaks: " << r.violations[i] << "\n";
  }
  out << (r.fits ? "fits: " : "DOES NOT FIT: ") << r.reason << "\n";
}

// The problem and the tiling's report; the caller adds what the form (--tiling, --search) adds.
report::FitReport FitReportOf(const FitReport& r) {
  report::FitReport out;
  const KernelProblem& p = r.problem;
  out.set_kernel(std::string(KernelName(p.kernel)));
  out.set_hw(r.chip);
  report::FitShape& shape = *out.mutable_shape();
  shape.set_m(p.shape.m);
  shape.set_k(p.shape.k);
  shape.set_n(p.shape.n);
  shape.set_groups(p.shape.groups);
  report::FitDtypes& dtype = *out.mutable_dtype();
  dtype.set_lhs(DtypeName(p.dtypes.lhs));
  dtype.set_rhs(DtypeName(p.dtypes.rhs));
  dtype.set_out(DtypeName(p.dtypes.out));
  SetTiling(r.tiling, out.mutable_tiling());
  out.set_fits(r.fits);
  out.set_memory(std::string(MemorySpaceName(r.limits.space)));
  out.set_required_bytes(r.required_bytes);
  out.set_limit_bytes(r.limit_bytes);
  out.set_limit_source(r.limits.limit_source);
  out.set_physical_bytes(r.physical_bytes);
  out.set_margin_bytes(r.margin_bytes);
  out.set_default_limit_bytes(r.limits.default_limit_bytes);
  out.set_fits_default_limit(r.fits_default_limit);
  out.set_fits_physical(r.fits_physical);
  out.set_smem_required_bytes(r.smem_required_bytes);
  out.set_smem_limit_bytes(r.limits.smem_limit_bytes);
  for (const std::string& v : r.violations) out.add_violations(v);
  out.set_reason(r.reason);
  for (const FitBuffer& b : r.buffers) {
    report::FitBuffer& buffer = *out.add_buffers();
    buffer.set_name(std::string(b.name));
    buffer.set_memory(std::string(MemorySpaceName(b.space)));
    buffer.set_role(std::string(BufferRoleName(b.role)));
    for (int64_t d : b.block_shape) buffer.add_shape(d);
    for (int64_t d : b.allocated_shape) buffer.add_allocated_shape(d);
    buffer.set_dtype(DtypeName(b.dtype));
    buffer.set_count(b.count);
    buffer.set_bytes(b.bytes);
  }
  return out;
}

std::string Bound(const TilingCostEstimate& c) {
  return c.compute_seconds >= c.memory_seconds ? "compute" : "memory";
}

std::string Micros(double seconds) { return fmt::format("{:.1f} us", seconds * 1e6); }

// JSON: the chosen tiling's report at top level (the fastest that fits, or, when nothing
// fits, the smallest footprint), its estimate, the search summary and the runners-up.
report::FitReport SearchReportOf(const KernelProblem& problem, const TilingSearchResult& s) {
  const bool found = s.best.has_value();
  report::FitReport out = FitReportOf(found ? *s.best : *s.smallest_misfit);
  report::FitSearch& search = *out.mutable_search();
  search.set_candidates(s.candidates);
  search.set_fitting(s.fitting);
  search.set_chosen(found ? "fastest fitting tiling" : "smallest footprint; nothing fits");
  search.set_cost_model(std::string(TilingCostModelName(problem.kernel)));
  if (found) {
    out.set_estimated_seconds(s.best_cost.seconds);
    out.set_compute_seconds(s.best_cost.compute_seconds);
    out.set_memory_seconds(s.best_cost.memory_seconds);
    out.set_overhead_seconds(s.best_cost.overhead_seconds);
    out.set_grid_steps(s.best_cost.grid_steps);
  }
  for (const RankedTiling& r : s.runners_up) {
    report::FitRunnerUp& runner = *out.add_runners_up();
    SetTiling(r.tiling, runner.mutable_tiling());
    runner.set_required_bytes(r.required_bytes);
    runner.set_estimated_seconds(r.cost.seconds);
  }
  return out;
}

int PrintSearch(const KernelProblem& problem, const TilingSearchResult& s,
                const std::string& format, CliIo& io) {
  const bool found = s.best.has_value();
  if (format == "json") {
    io.out << ReportJson(SearchReportOf(problem, s));
    return found ? kExitOk : kExitCheckFailed;
  }
  const FitReport& any = found ? *s.best : *s.smallest_misfit;
  io.out << Header(any) << "\n";
  io.out << fmt::format("search: {} legal tilings, {} fit {} ({})\n", s.candidates, s.fitting,
                        FormatBytes(s.limits.limit_bytes), s.limits.limit_source);
  io.out << "ranked by " << TilingCostModelName(problem.kernel) << "\n";
  if (!found) {
    io.out << "no tiling fits; the smallest footprint is tiling " << TilingToString(any.tiling)
           << ":\n";
    PrintReport(any, io.out);
    return kExitCheckFailed;
  }
  static constexpr char kRow[] = "  {:<5} {:<22} {:>12} {:>12}  {}\n";
  io.out << fmt::format(kRow, "rank", "tiling", "required", "est. time", "bound");
  io.out << fmt::format(kRow, 1, TilingToString(s.best->tiling),
                        FormatBytes(s.best->required_bytes), Micros(s.best_cost.seconds),
                        Bound(s.best_cost));
  for (size_t i = 0; i < s.runners_up.size(); ++i) {
    const RankedTiling& r = s.runners_up[i];
    io.out << fmt::format(kRow, i + 2, TilingToString(r.tiling), FormatBytes(r.required_bytes),
                          Micros(r.cost.seconds), Bound(r.cost));
  }
  io.out << "best tiling " << TilingToString(s.best->tiling) << ":\n";
  PrintReport(*s.best, io.out);
  return kExitOk;
}

// `tiling_source`: "given", or where the default tiling comes from.
int PrintFit(const FitReport& r, absl::string_view tiling_source, const std::string& format,
             CliIo& io) {
  if (format == "json") {
    report::FitReport out = FitReportOf(r);
    out.set_tiling_source(std::string(tiling_source));
    io.out << ReportJson(out);
  } else {
    io.out << Header(r) << ", tiling " << TilingToString(r.tiling);
    if (tiling_source != "given") io.out << " (no --tiling: " << tiling_source << ")";
    io.out << "\n";
    PrintReport(r, io.out);
  }
  return r.fits ? kExitOk : kExitCheckFailed;
}

struct FitRequest {
  KernelProblem problem;
  std::optional<Tiling> tiling;
  bool search = false;
  int64_t top = 5;
  std::optional<int64_t> vmem_limit_bytes;
};

absl::StatusOr<FitRequest> ParseRequest(const ParsedFlags& flags) {
  for (const char* required : {"kernel", "hw", "shape", "dtype"}) {
    if (!flags.Has(required)) {
      return UsageError(absl::StrCat("fit: expected --", required, "; got none"));
    }
  }
  FitRequest request;
  const std::optional<KernelKind> kernel = ParseKernelName(flags.Get("kernel"));
  if (!kernel.has_value()) {
    std::vector<std::string> names;
    for (KernelKind k : AllKernels()) names.emplace_back(KernelName(k));
    return UsageError(absl::StrCat("--kernel: expected one of ", absl::StrJoin(names, ", "),
                                   "; got '", flags.Get("kernel"), "'"));
  }
  KernelProblem& p = request.problem;
  p.kernel = *kernel;
  PERFSIM_ASSIGN_OR_RETURN(
      std::vector<int64_t> shape,
      ParseIntList("shape", flags.Get("shape"), 3, 4, "m,k,n[,groups] as positive integers"));
  p.shape = {shape[0], shape[1], shape[2], shape.size() == 4 ? shape[3] : 1};
  PERFSIM_ASSIGN_OR_RETURN(p.dtypes, ParseDtypes(flags.Get("dtype")));
  PERFSIM_ASSIGN_OR_RETURN(p.options, ParseOptions(flags, p.kernel));
  request.search = flags.Has("search");
  if (request.search && flags.Has("tiling")) {
    return UsageError("fit: expected at most one of --tiling and --search; got both");
  }
  if (flags.Has("tiling")) {
    const bool gather = p.kernel == KernelKind::kRaggedGather;
    PERFSIM_ASSIGN_OR_RETURN(
        std::vector<int64_t> t,
        ParseIntList("tiling", flags.Get("tiling"), gather ? 2 : 3, gather ? 2 : 3,
                     gather ? "rows_per_step,d_chunk as positive integers"
                            : "tm,tk,tn as positive integers"));
    request.tiling = Tiling{t[0], t[1], gather ? 0 : t[2]};
  }
  if (flags.Has("top")) {
    if (!request.search) return UsageError("--top: applies to --search");
    PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                             ParseIntList("top", flags.Get("top"), 1, 1, "a positive count"));
    request.top = v[0];
  }
  if (flags.Has("vmem-limit")) {
    PERFSIM_ASSIGN_OR_RETURN(request.vmem_limit_bytes,
                             ParseBytes("vmem-limit", flags.Get("vmem-limit")));
  }
  return request;
}

}  // namespace

int RunFitCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, {{"kernel", true},
                                                        {"hw", true},
                                                        {"shape", true},
                                                        {"dtype", true},
                                                        {"tiling", true},
                                                        {"search", false},
                                                        {"top", true},
                                                        {"format", true},
                                                        {"vmem-limit", true},
                                                        {"existing-out", false},
                                                        {"lhs-buffers", true},
                                                        {"transpose-rhs", false},
                                                        {"fuse-act", false},
                                                        {"bias", false},
                                                        {"quant-block", true},
                                                        {"stages", true},
                                                        {"help", false}});
  if (!flags.ok()) {
    io.err << kFitUsage;
    return ReportStatus(flags.status(), io);
  }
  if (flags->Has("help")) {
    io.out << kFitUsage;
    return kExitOk;
  }
  if (!flags->positional().empty()) {
    return ReportStatus(UsageError(absl::StrCat("fit: expected only flags; got '",
                                                flags->positional().front(), "'")),
                        io);
  }
  absl::StatusOr<std::string> format = TableOrJsonFormat(*flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  absl::StatusOr<FitRequest> request = ParseRequest(*flags);
  if (!request.ok()) return ReportStatus(request.status(), io);
  absl::StatusOr<Chip> chip = ResolveChip(flags->Get("hw"));
  if (!chip.ok()) return ReportStatus(chip.status(), io);
  if (request->search) {
    TilingSearchOptions options;
    options.max_runners_up = request->top;
    options.vmem_limit_bytes = request->vmem_limit_bytes;
    absl::StatusOr<TilingSearchResult> result = SearchTilings(request->problem, *chip, options);
    if (!result.ok()) return ReportStatus(result.status(), io);
    if (result->candidates == 0) {
      return ReportStatus(UsageError("fit --search: no legal tiling to try for this shape"), io);
    }
    return PrintSearch(request->problem, *result, *format, io);
  }
  absl::string_view tiling_source = "given";
  if (!request->tiling.has_value()) {
    const KernelKind kernel = request->problem.kernel;
    request->tiling = DefaultTiling(request->problem);
    tiling_source = DefaultTilingSource(kernel);
    if (!request->tiling.has_value()) {
      return ReportStatus(
          UsageError(absl::StrCat("fit: ", KernelName(kernel), " has ", tiling_source,
                                  "; expected --tiling or --search; got neither")),
          io);
    }
  }
  absl::StatusOr<FitReport> report =
      CheckFit(request->problem, *request->tiling, *chip, request->vmem_limit_bytes);
  if (!report.ok()) return ReportStatus(report.status(), io);
  return PrintFit(*report, tiling_source, *format, io);
}

}  // namespace perfsim
