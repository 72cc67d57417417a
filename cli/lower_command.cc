// `perfsim lower`: the per-device HLO module a backend lowers the MoE step of a predict scenario
// to (predict's flags: cli/scenario_flags.h), and optionally the inputs `perfsim validate`
// would run it on (for running the printed module elsewhere, e.g. in XLA:
// tools/jax/xla_accepts.py).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "cli/scenario_flags.h"
#include "cli/step_flags.h"
#include "sim/interp/npy.h"
#include "sim/ir/hlo_printer.h"
#include "sim/lowering/lowering.h"
#include "sim/predict/predict.h"
#include "sim/util/checked_math.h"
#include "sim/util/file_io.h"
#include "sim/util/status.h"
#include "sim/validate/validate.h"

namespace perfsim {
namespace {

constexpr char kLowerUsage[] =
    R"(usage: perfsim lower [--model NAME] [--hw NAME] [--mesh AxBxC] [--parallelism AXES]
                     [--backend NAME] [--routing uniform|zipf:S|hot:P|file:PATH]
                     [--batch B] [--seq S] [--phase fwd|fwd_bwd] [--adam] [step flags]
                     [--inputs-dir DIR [--inputs-routing CASE] [--seed S] [--memory-budget B]]

Prints the per-device SPMD module (HLO text) that `perfsim predict` with the same flags
simulates: the backend's lowering of one MoE layer step, entry parameters x, router_w, wi_0,
wi_1, wo, [router_bias], [router_score_bias], [ws_0, ws_1, ws_o], [dy]; root tuple
(y[, dx, d_router_w, d_wi_0, d_wi_1, d_wo, ...]). Each instruction's metadata op_name names its
stage (moe/router, moe/dispatch, ...). The module is verified before printing. So

  perfsim lower FLAGS > m.hlo
  perfsim predict --hlo m.hlo --hw H --mesh M [--routing SPEC]

is the scenario of `perfsim predict FLAGS`, H and M the chip and slice it runs on.

The flags are predict's, with predict's defaults: with none, the embedded default scenario
(DeepSeek-V3, fwd_bwd, ep_ragged_a2a with dp=2, ep=256 for TPU v7x 4x8x8, batch 512 x seq
4096). Naming --model, --hw, --mesh or --parallelism derives what is not named as predict does
(perfsim predict --help) and prints it to standard error first ("chose: --mesh 8 --parallelism
ep=8 --batch 64 --seq 4096"); standard output holds the module alone. The scenario is checked
as predict checks it (the mesh's device count against the parallelism's, the batch split over
dp·fsdp, the kernels' tilings on the chip): what predict refuses, lower refuses.
--hw, --mesh and --adam choose the scenario but are not in the module. Nor is --routing: the
tokens each expert gets are run-time values, which `perfsim predict --hlo m.hlo --routing SPEC`
draws; lower checks the spec (a file: must exist and parse) and prints the same module for
every routing.

  --inputs-dir DIR  also write the inputs `perfsim validate` runs the module on, device by
                    device: DIR/in<i>.d<device>.npy is parameter i's shard on that device
                    (global inputs of the inputs' routing case and seed, sharded as the
                    backend lays them out). The directory must exist. The files are written
                    all or none.
  --inputs-routing CASE
                    with --inputs-dir: how the router weights of the inputs route the tokens,
                    a validation case (random, skewed, empty_experts, one_expert,
                    tiny_scores, adversarial; default random; see perfsim validate). Not
                    --routing: that is predict's routing distribution, which the inputs
                    cannot hold (their routing follows from the router's scores).
  --seed S          with --inputs-dir: the inputs' seed (default 1)
  --memory-budget B with --inputs-dir: the most bytes the inputs may take in memory (the
                    global arrays and their shards, held at once); a need beyond B is refused
                    before anything is made (exit 2). Plain bytes or 512MiB, 8GiB, 1.5GB;
                    default 4GiB, at most the machine's physical memory
)";

// Refuses inputs larger than `budget_bytes` before any is made: the global arrays and their
// shards are held at once, so the need is twice the global inputs' bytes.
absl::Status CheckInputsMemory(const LoweredStep& step, int64_t budget_bytes) {
  PERFSIM_ASSIGN_OR_RETURN(ValidationMemory need,
                           EstimateValidationMemory(step.spec, step.spec.phase));
  PERFSIM_ASSIGN_OR_RETURN(const int64_t total,
                           CheckedMul("bytes --inputs-dir needs", need.input_bytes, 2));
  if (total <= budget_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "--inputs-dir: the inputs and their shards need ", total, " bytes (global inputs ",
      need.input_bytes, " x 2); budget ", budget_bytes,
      " bytes (--memory-budget): expected a need within the budget"));
}

absl::Status WriteInputs(const LoweredStep& step, const std::string& dir, RoutingCase routing,
                         uint64_t seed, int64_t budget_bytes) {
  PERFSIM_RETURN_IF_ERROR(CheckInputsMemory(step, budget_bytes));
  const std::vector<Literal> global = MakeGlobalInputs(step, routing, seed);
  // All or nothing: every file is written in full before any replaces what was there.
  AtomicFileSet files;
  for (int64_t device = 0; device < step.spec.num_devices(); ++device) {
    for (size_t i = 0; i < step.parameters.size(); ++i) {
      const Literal shard = ShardOf(global[i], step.parameters[i], step.spec.parallelism, device);
      const std::string path = absl::StrCat(dir, "/in", i, ".d", device, ".npy");
      absl::StatusOr<std::string> bytes = SerializeNpy(shard);
      if (!bytes.ok()) return Annotate(bytes.status(), path);
      PERFSIM_RETURN_IF_ERROR(Annotate(files.Stage(path, *bytes), "--inputs-dir"));
    }
  }
  return Annotate(files.Commit(), "--inputs-dir");
}

}  // namespace

int RunLowerCommand(const std::vector<std::string>& args, CliIo& io) {
  std::vector<FlagSpec> specs = ScenarioFlagSpecs();
  for (const char* name : {"inputs-dir", "inputs-routing", "seed", "memory-budget"}) {
    specs.push_back({name, true});
  }
  specs.push_back({"help", false});
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kLowerUsage << "\n" << kStepFlagsHelp;
    return kExitOk;
  }
  if (absl::Status s = ExpectNoPositional(*flags); !s.ok()) return ReportStatus(s, io);
  if (!flags->Has("inputs-dir") &&
      (flags->Has("inputs-routing") || flags->Has("seed") || flags->Has("memory-budget"))) {
    return ReportStatus(absl::InvalidArgumentError("--inputs-routing, --seed and --memory-budget: "
                                                   "expected them only with --inputs-dir"),
                        io);
  }
  int64_t budget_bytes = kDefaultValidationMemoryBudgetBytes;
  if (flags->Has("memory-budget")) {
    absl::StatusOr<int64_t> budget = ParseMemoryBudget("memory-budget", flags->Get("memory-budget"));
    if (!budget.ok()) return ReportStatus(budget.status(), io);
    budget_bytes = *budget;
  }
  absl::StatusOr<RoutingCase> inputs_routing =
      ParseRoutingCase(flags->Get("inputs-routing", "random"));
  if (!inputs_routing.ok()) {
    return ReportStatus(Annotate(inputs_routing.status(), "--inputs-routing"), io);
  }
  absl::StatusOr<uint64_t> seed = SeedFlag(*flags, /*fallback=*/1);
  if (!seed.ok()) return ReportStatus(seed.status(), io);
  absl::StatusOr<FlaggedScenario> scenario = ScenarioFromFlags(*flags);
  if (!scenario.ok()) return ReportStatus(scenario.status(), io);
  // The scenario as predict prepares it: a mesh of another device count, a batch that does not
  // split, a tiling that does not fit is refused here as there.
  if (absl::StatusOr<PreparedStep> prepared = PrepareStep(scenario->options); !prepared.ok()) {
    return ReportStatus(prepared.status(), io);
  }
  absl::StatusOr<LoweredStep> step = LowerStep(scenario->options.spec);
  if (!step.ok()) return ReportStatus(step.status(), io);
  if (!scenario->chose.empty()) io.err << "chose: " << scenario->chose << "\n";
  if (flags->Has("inputs-dir")) {
    if (absl::Status s =
            WriteInputs(*step, flags->Get("inputs-dir"), *inputs_routing, *seed, budget_bytes);
        !s.ok()) {
      return ReportStatus(s, io);
    }
  }
  io.out << PrintModule(*step->module);
  return kExitOk;
}

}  // namespace perfsim
