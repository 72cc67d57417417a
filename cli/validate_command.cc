// `perfsim validate`: every backend's lowering, run in the reference interpreter, against the
// dense_einsum reference — forward output and every gradient — plus static checks.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "cli/step_flags.h"
#include "fmt/format.h"
#include "proto/validate_report.pb.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/moe/model_registry.h"
#include "sim/util/proto_format.h"
#include "sim/util/status.h"
#include "sim/validate/block_validate.h"
#include "sim/validate/validate.h"

namespace perfsim {
namespace {

constexpr char kValidateUsage[] =
    R"(usage: perfsim validate [--backend NAME|all] [--router FAMILY|all] [--routing CASE|all]
                        [--phase fwd|fwd_bwd|all] [--devices N|all] [--seed S] [--hw NAME]
                        [--tolerance X] [--format=table|json] [step flags]
       perfsim validate --hlo FILE [--model NAME] [--parallelism ...] [--phase fwd|fwd_bwd]
                        [--routing CASE|all] [--seed S] [--tolerance X] [--format=table|json]
       perfsim validate --block attention|dense_ffn|embedding|lm_head|all [--model NAME]
                        [--devices N] [--phase fwd|fwd_bwd|all] [--seed S] [--tolerance X]
                        [--format=table|json]
       all: [--memory-budget BYTES]

Lowers each backend for each router family, routing case, phase and device count, verifies the
module, runs the static checks (contracting dimensions agree by logical name; grouped weights
are [G,K,N]; kernel tiles sit on the dimensions of their role; the router runs in f32; the
backward reads only the residuals the forward saved, each the very value its forward op
consumed; receive buffers hold the worst case; group sizes sum to at most the rows), interprets
it on N virtual devices and compares y and every gradient (dx, d_router_w, d_wi_0, d_wi_1, d_wo,
d_router_bias, d_ws_0, d_ws_1, d_ws_o) with dense_einsum on one device. Modules with ragged
all-to-alls also run an adversarial routing once (every token to one ep shard; counts = 1 mod align_size).
Error = max|got - want| / max|want| per tensor; tolerance 1e-5 for f32 models, 2^-8*16 for
bf16. A NaN/Inf where the reference is finite fails (a poisoned, uninitialised buffer reached an
output).

  --router    model (the model's own) or softmax_topk, softmax_topk_norm, topk_softmax (with
              GPT-OSS's router bias), sigmoid_grouped (DeepSeek-V3's, with its score-correction
              bias), sigmoid_prescale; default all five families
  --routing   random, skewed, empty_experts, one_expert (the default: all four), or
              tiny_scores (sigmoid scores ~1e-8), adversarial
  --devices   1, 2, 4, 8 by default; each backend picks its parallelism for N devices
              (dense_einsum: dp=N; data-parallel backends: dp=N/2 x fsdp=2 from 4 devices;
              ep_ragged_a2a, ring_of_experts: ep as large as E allows, the rest fsdp), unless
              --parallelism fixes it (dp, fsdp, ep, tp); the table's "mesh" column says which
  --tolerance X  the largest relative error that passes (default: 1e-5 for f32 models,
              2^-8*16 for bf16)
  --format=json  every case as JSON (ValidateReport in proto/validate_report.proto), with
              the cause and the first diverging output of an --hlo failure
  --hw NAME   fit-check every kernel custom-call's tiling against this chip's VMEM first
              (default tpu_v5p); a misfit fails the case with the numbers
  --hlo FILE  validate your own lowering: entry parameters x, router_w, wi_0, wi_1, wo, then
              router_bias (router matmul bias), router_score_bias (score-correction bias) and
              ws_0, ws_1, ws_o (shared expert) where the model has them -- the order
              `perfsim lower --phase fwd` prints (jit with keep_unused=True: JAX's default
              drops parameters the function does not read); output y [tokens, D]; compared
              with --model's reference MoE on random inputs (x sharded over dp*fsdp*ep, experts
              over ep, weights' D over fsdp as --parallelism says). First the static checks on
              the module, roles from the parameter order and dimension names from the model:
              every dot contracts dimensions of the same name (wi_0 contracted over its F axis
              is caught when D == F), the router matmul runs in the model's router dtype, the
              combine weights expert outputs only after the inverse permutation. When the
              numbers differ, the first diverging output is named and, where the numbers tell,
              why (token rows that come out zero: dropped tokens; a match with the top-k
              weights renormalised the other way). With --phase fwd_bwd the module takes dy
              last and returns y and every gradient, or the gradients alone (jax.grad), each
              compared. --routing all runs every routing case; --tolerance applies.
  --block B   the whole step's other blocks instead of the MoE: each block (attention: each
              distinct layer kind of the model, scope and rope) lowered for tp = 2, 4, ... up to
              --devices (default 4; attention with and without sequence parallelism) and run
              in the interpreter against the block on one device, on the same seeded inputs,
              at B=2, S=16 in f32 with the model's dims capped (D 64, head_dim 8, F 64, V 96,
              window S/4; heads, masks and rope kept). Tolerance 1e-5 (block_validate.h)
  --memory-budget B  the most bytes a case may hold: after its static and fit checks and
              before anything is allocated, each case's global inputs plus the larger of the
              reference's and its own interpreter run are estimated, and a need beyond B is
              refused (exit 2) with need vs budget. Plain bytes or 512MiB, 8GiB, 1.5GB;
              default 4GiB, at most the machine's physical memory

Default model nano (D=40, F=56, E=12, K=2), batch 4, seq 16. Exit 0 when every case passes,
1 when any fails, 2 for bad input.
)";

template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> ParseList(const ParsedFlags& flags, const std::string& name,
                                         Parse parse) {
  std::vector<T> result;
  const std::string text = flags.Get(name, "all");
  if (text == "all") return result;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    absl::StatusOr<T> value = parse(part);
    if (!value.ok()) return Annotate(value.status(), absl::StrCat("--", name));
    result.push_back(*value);
  }
  return result;
}

std::string ErrorCell(const ValidationResult& r, absl::string_view tensor) {
  for (const TensorError& e : r.errors) {
    if (e.tensor == tensor) {
      return e.non_finite > 0 ? "NaN" : fmt::format("{:.1e}", e.max_rel_error);
    }
  }
  return "-";
}

std::string StatusWord(const ValidationResult& r) {
  return r.skipped ? "skip" : r.pass ? "pass" : "FAIL";
}

// "ep2 fsdp2": the axes used, major to minor ("1" on one device).
std::string MeshText(const Parallelism& p) {
  std::vector<std::string> parts;
  for (const auto& [name, size] : {std::pair<const char*, int64_t>{"dp", p.dp},
                                   {"fsdp", p.fsdp}, {"ep", p.ep}, {"tp", p.tp}}) {
    if (size > 1) parts.push_back(absl::StrCat(name, size));
  }
  return parts.empty() ? "1" : absl::StrJoin(parts, " ");
}

void PrintTable(const std::vector<ValidationResult>& results, std::ostream& out) {
  const std::vector<std::string> tensors = {"y",      "dx",     "d_router_w", "d_wi_0",
                                            "d_wi_1", "d_wo",   "d_router_bias", "d_ws_0",
                                            "d_ws_1", "d_ws_o"};
  out << fmt::format("{:<21} {:<18} {:<13} {:<7} {:>3} {:<11}", "backend", "router", "routing",
                     "phase", "dev", "mesh");
  for (const std::string& t : tensors) out << fmt::format(" {:>7}", t);
  out << "  status\n";
  int pass = 0, fail = 0, skip = 0;
  double worst = 0;
  for (const ValidationResult& r : results) {
    (r.skipped ? skip : r.pass ? pass : fail)++;
    for (const TensorError& e : r.errors) worst = std::max(worst, e.max_rel_error);
    if (r.skipped) continue;
    out << fmt::format("{:<21} {:<18} {:<13} {:<7} {:>3} {:<11}", r.backend, r.router, r.routing,
                       r.phase, r.devices, MeshText(r.parallelism));
    for (const std::string& t : tensors) {
      out << fmt::format(" {:>{}}", ErrorCell(r, t), std::max<size_t>(7, t.size()));
    }
    out << "  " << StatusWord(r) << "\n";
    if (!r.pass) out << "    " << r.message << "\n";
  }
  out << fmt::format("{} passed, {} failed, {} skipped (not supported by the backend); largest "
                     "relative error {:.2e}\n",
                     pass, fail, skip, worst);
  {
    // Notes on passing cases (knobs validate adjusted), one line per distinct note.
    std::vector<std::string> notes;
    for (const ValidationResult& r : results) {
      if (!r.pass || r.message.empty()) continue;
      std::string line = absl::StrCat(r.backend, ": ", r.message);
      if (std::find(notes.begin(), notes.end(), line) == notes.end()) notes.push_back(line);
    }
    for (const std::string& line : notes) out << "  note " << line << "\n";
  }
  if (skip > 0) {
    // One line per distinct reason, so a user sees why without --format=json.
    std::vector<std::string> reasons;
    for (const ValidationResult& r : results) {
      if (!r.skipped) continue;
      std::string line = absl::StrCat(r.backend, ": ", r.message);
      if (std::find(reasons.begin(), reasons.end(), line) == reasons.end()) reasons.push_back(line);
    }
    for (const std::string& line : reasons) out << "  skipped " << line << "\n";
  }
}

// validate's JSON: proto/validate_report.proto, printed by ReportJson (protobuf's JSON printer
// under proto/report.proto's conventions).
report::ValidateReport ToReport(const std::vector<ValidationResult>& results) {
  report::ValidateReport out;
  for (const ValidationResult& r : results) {
    report::ValidateResult* v = out.add_results();
    v->set_backend(r.backend);
    v->set_router(r.router);
    v->set_routing(r.routing);
    v->set_phase(r.phase);
    v->set_devices(static_cast<int32_t>(r.devices));
    v->mutable_parallelism()->set_dp(static_cast<int32_t>(r.parallelism.dp));
    v->mutable_parallelism()->set_fsdp(static_cast<int32_t>(r.parallelism.fsdp));
    v->mutable_parallelism()->set_ep(static_cast<int32_t>(r.parallelism.ep));
    v->mutable_parallelism()->set_tp(static_cast<int32_t>(r.parallelism.tp));
    v->set_status(r.skipped ? "skip" : r.pass ? "pass" : "fail");
    v->set_tolerance(r.tolerance);
    AddTensorErrors(r.errors, *v);
    v->set_message(r.message);
    v->set_cause(r.cause);
    v->set_diverging_output(r.diverging_output);
  }
  return out;
}

void PrintJson(const std::vector<ValidationResult>& results, std::ostream& out) {
  out << ReportJson(ToReport(results));
}

// `perfsim validate --block`: sim/validate/block_validate.h does the work.
int RunBlockValidate(const ParsedFlags& flags, bool json, CliIo& io) {
  absl::StatusOr<std::vector<Block>> blocks = ParseBlocks(flags.Get("block"));
  if (!blocks.ok()) return ReportStatus(blocks.status(), io);
  absl::StatusOr<ModelConfig> model = ResolveModel(flags.Get("model", "nano"));
  if (!model.ok()) return ReportStatus(Annotate(model.status(), "--model"), io);
  BlockValidationOptions options{.model = *std::move(model), .blocks = *blocks};
  absl::StatusOr<std::vector<Phase>> phases = ParseList<Phase>(flags, "phase", ParsePhase);
  absl::StatusOr<uint64_t> seed = SeedFlag(flags, /*fallback=*/1);
  const std::string devices = flags.Get("devices", "4");
  for (const absl::Status& s : {phases.status(), seed.status()}) {
    if (!s.ok()) return ReportStatus(s, io);
  }
  if (!absl::SimpleAtoi(devices, &options.max_devices)) {
    return ReportStatus(absl::InvalidArgumentError(absl::StrCat(
                            "--devices: expected a device count; got '", devices, "'")),
                        io);
  }
  options.phases = *phases;
  options.seed = *seed;
  if (flags.Has("tolerance") && (!absl::SimpleAtod(flags.Get("tolerance"), &options.tolerance) ||
                                 !(options.tolerance > 0) || !std::isfinite(options.tolerance))) {
    return ReportStatus(
        absl::InvalidArgumentError(absl::StrCat("--tolerance: expected a positive number; got '",
                                                flags.Get("tolerance"), "'")),
        io);
  }
  if (flags.Has("memory-budget")) {
    absl::StatusOr<int64_t> budget = ParseMemoryBudget("memory-budget", flags.Get("memory-budget"));
    if (!budget.ok()) return ReportStatus(budget.status(), io);
    options.memory_budget_bytes = *budget;
  }
  absl::StatusOr<std::vector<BlockValidationResult>> results = ValidateBlocks(options);
  if (!results.ok()) return ReportStatus(results.status(), io);
  if (json) {
    io.out << ReportJson(BlockValidationReport(*results));
  } else {
    PrintBlockTable(*results, io.out);
  }
  bool ran = false;
  for (const BlockValidationResult& r : *results) {
    if (!r.pass && !r.skipped) return kExitCheckFailed;
    ran = ran || !r.skipped;
  }
  if (ran) return kExitOk;
  // Nothing compared: every case is one the lowerings or the tp sizes refuse (bad input).
  return ReportStatus(
      absl::InvalidArgumentError(absl::StrCat(
          "validate --block: expected at least one case to run; got ", results->size(),
          " skipped (first: ", results->front().block, ": ", results->front().message, ")")),
      io);
}

}  // namespace

int RunValidateCommand(const std::vector<std::string>& args, CliIo& io) {
  std::vector<FlagSpec> specs = StepFlagSpecs();
  for (const char* name :
       {"router", "routing", "devices", "seed", "format", "hlo", "hw", "tolerance",
        "memory-budget", "block"}) {
    specs.push_back({name, true});
  }
  specs.push_back({"help", false});
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kValidateUsage << "\n" << kStepFlagsHelp;
    return kExitOk;
  }
  absl::StatusOr<std::string> format = TableOrJsonFormat(*flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  if (absl::Status s = ExpectNoPositional(*flags); !s.ok()) return ReportStatus(s, io);
  if (flags->Has("block")) return RunBlockValidate(*flags, *format == "json", io);
  // `--phase all` is validate's sweep over phases, not a step's phase: the step is built from
  // the flags without it (the suite parses the list itself).
  absl::StatusOr<ParsedFlags> step_flags = flags;
  if (flags->Get("phase") == "all") {
    std::vector<std::string> rest;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--phase=all") continue;
      if (args[i] == "--phase" && i + 1 < args.size() && args[i + 1] == "all") {
        ++i;
        continue;
      }
      rest.push_back(args[i]);
    }
    step_flags = ParseFlags(rest, specs);
    if (!step_flags.ok()) return ReportStatus(step_flags.status(), io);
  }
  absl::StatusOr<StepSpec> base = StepSpecFromFlags(*step_flags, StepFlagDefaults());
  if (!base.ok()) return ReportStatus(base.status(), io);
  absl::StatusOr<uint64_t> seed = SeedFlag(*flags, /*fallback=*/1);
  if (!seed.ok()) return ReportStatus(seed.status(), io);
  double tolerance = 0;
  if (flags->Has("tolerance") &&
      (!absl::SimpleAtod(flags->Get("tolerance"), &tolerance) || !(tolerance > 0) ||
       !std::isfinite(tolerance))) {
    return ReportStatus(absl::InvalidArgumentError(absl::StrCat(
                            "--tolerance: expected a positive number; got '",
                            flags->Get("tolerance"), "'")),
                        io);
  }
  absl::StatusOr<std::vector<RoutingCase>> routings =
      ParseList<RoutingCase>(*flags, "routing", ParseRoutingCase);
  if (!routings.ok()) return ReportStatus(routings.status(), io);
  int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes;
  if (flags->Has("memory-budget")) {
    absl::StatusOr<int64_t> budget =
        ParseMemoryBudget("memory-budget", flags->Get("memory-budget"));
    if (!budget.ok()) return ReportStatus(budget.status(), io);
    memory_budget_bytes = *budget;
  }

  std::vector<ValidationResult> results;
  if (flags->Has("hlo")) {
    absl::StatusOr<std::string> text = ReadInput(flags->Get("hlo"), io.in);
    if (!text.ok()) return ReportStatus(text.status(), io);
    absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(*text, flags->Get("hlo"));
    if (!module.ok()) return ReportStatus(module.status(), io);
    if (!flags->Has("batch") && !flags->Has("seq")) {
      // Tokens from the module: x is [T_l, D] per device.
      const Computation* entry = (*module)->entry();
      if (entry != nullptr && entry->parameter_count() > 0 &&
          entry->parameter(0)->shape().rank() == 2) {
        base->batch = 1;
        base->seq = entry->parameter(0)->shape().dimensions(0) * base->token_shards();
      }
    }
    if (absl::Status valid = base->Validate(); !valid.ok()) return ReportStatus(valid, io);
    // A user's module is a forward unless --phase says it has the backward too.
    if (flags->Get("phase") == "all") {
      return ReportStatus(absl::InvalidArgumentError(
                              "--phase: expected fwd or fwd_bwd with --hlo (a module is one "
                              "phase); got 'all'"),
                          io);
    }
    const Phase phase = flags->Has("phase") ? base->phase : Phase::kForward;
    if (absl::Status fits = CheckValidationMemory(*base, phase, memory_budget_bytes); !fits.ok()) {
      return ReportStatus(fits, io);
    }
    const std::vector<RoutingCase> cases =
        flags->Get("routing", "random") == "all" ? AllRoutingCases() : *routings;
    for (RoutingCase routing : cases.empty() ? std::vector<RoutingCase>{RoutingCase::kRandom}
                                             : cases) {
      // Each case runs on its own copy of the module (the step owns it).
      if (*module == nullptr) {
        module = ParseHloModule(*text, flags->Get("hlo"));
        if (!module.ok()) return ReportStatus(module.status(), io);
      }
      results.push_back(ValidateHloModule(*std::move(module), *base,
                                          HloValidationOptions{.phase = phase,
                                                               .routing = routing,
                                                               .seed = *seed,
                                                               .tolerance = tolerance,
                                                               .memory_budget_bytes =
                                                                   memory_budget_bytes}));
      results.back().backend = flags->Get("hlo");
      if (!results.back().pass && results.back().errors.empty()) {
        // Nothing ran: the module does not fit the contract. That is bad input.
        return ReportStatus(absl::InvalidArgumentError(
                                absl::StrCat(flags->Get("hlo"), ": ", results.back().message)),
                            io);
      }
    }
  } else {
    absl::StatusOr<Chip> chip = ResolveChip(flags->Get("hw", "tpu_v5p"));
    if (!chip.ok()) return ReportStatus(Annotate(chip.status(), "--hw"), io);
    SuiteOptions options{.base = *base,
                         .seed = *seed,
                         .chip = &*chip,
                         .tolerance = tolerance,
                         .memory_budget_bytes = memory_budget_bytes};
    const std::string backend = flags->Get("backend", "all");
    if (backend != "all") options.backends = absl::StrSplit(backend, ',');
    for (const std::string& name : options.backends) {
      if (absl::StatusOr<const MoeBackend*> b = FindBackend(name); !b.ok()) {
        return ReportStatus(Annotate(b.status(), "--backend"), io);
      }
    }
    absl::StatusOr<std::vector<RouterFamily>> routers =
        ParseList<RouterFamily>(*flags, "router", ParseRouterFamily);
    if (!routers.ok()) return ReportStatus(routers.status(), io);
    options.routers = *routers;
    options.routings = *routings;
    absl::StatusOr<std::vector<Phase>> phases = ParseList<Phase>(*flags, "phase", ParsePhase);
    if (!phases.ok()) return ReportStatus(phases.status(), io);
    options.phases = *phases;
    absl::StatusOr<std::vector<int64_t>> devices =
        ParseList<int64_t>(*flags, "devices", [](absl::string_view s) -> absl::StatusOr<int64_t> {
          int64_t n = 0;
          if (!absl::SimpleAtoi(s, &n) || n < 1) {
            return absl::InvalidArgumentError(
                absl::StrCat("expected a positive device count; got '", s, "'"));
          }
          return n;
        });
    if (!devices.ok()) return ReportStatus(devices.status(), io);
    options.devices = *devices;
    if (flags->Has("parallelism")) options.parallelism = base->parallelism;
    results = RunSuite(options);
  }
  if (*format == "json") {
    PrintJson(results, io.out);
  } else {
    PrintTable(results, io.out);
  }
  // A case beyond the memory budget was refused before it allocated: bad input, named with
  // its need (the table shows what the other cases found).
  for (const ValidationResult& r : results) {
    if (r.over_budget) {
      return ReportStatus(absl::ResourceExhaustedError(absl::StrCat(
                              r.backend, " ", r.phase, " on ", r.devices, " device",
                              r.devices == 1 ? "" : "s", ": ", r.message)),
                          io);
    }
  }
  for (const ValidationResult& r : results) {
    if (!r.pass && !r.skipped) return kExitCheckFailed;
  }
  // Nothing compared is not a pass: every case asked for is one the backends do not support,
  // which is a request that cannot be checked (bad input), named with the first reason.
  const auto ran = std::find_if(results.begin(), results.end(),
                                [](const ValidationResult& r) { return !r.skipped; });
  if (ran == results.end()) {
    return ReportStatus(
        absl::InvalidArgumentError(absl::StrCat(
            "validate: expected at least one case to run; got ", results.size(),
            results.size() == 1 ? " case, skipped" : " cases, all skipped",
            results.empty() ? std::string()
                            : absl::StrCat(" (first: ", results[0].backend, ": ",
                                           results[0].message, ")"))),
        io);
  }
  return kExitOk;
}

}  // namespace perfsim
