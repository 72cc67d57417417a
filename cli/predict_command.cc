// `perfsim predict`: step time of the MoE layer on a described cluster, with a breakdown.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "cli/predict_hlo.h"
#include "cli/scenario_flags.h"
#include "cli/step_flags.h"
#include "sim/predict/predict.h"
#include "sim/report/predict_report.h"
#include "sim/report/predict_summary.h"
#include "sim/util/file_io.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr char kPredictUsage[] =
    R"(usage: perfsim predict [--model NAME] [--hw NAME] [--mesh AxBxC] [--parallelism AXES]
                       [--backend NAME] [--routing uniform|zipf:S|hot:P|file:PATH]
                       [--batch B] [--seq S] [--phase fwd|fwd_bwd] [--adam] [--timeline]
                       [--format=table|json] [--trace OUT.json]
                       [--trace-devices all|IDS] [step flags]
       perfsim predict --hlo FILE.hlo --hw NAME [--mesh AxBxC] [--format=table|json]
                       [--trace OUT.json] [--trace-devices all|IDS]

With no flags: the embedded default scenario, a DeepSeek-V3 MoE layer (D=7168, F=2048, E=256,
K=8), fwd_bwd, on TPU v7x 4x8x8 (256 chips, 512 devices), ep_ragged_a2a with ep=256, dp=2,
batch 512 x seq 4096, uniform routing.

Naming --model, --hw, --mesh or --parallelism derives what is not named from the model and the
chip, and prints it first as flags to copy and edit ("chose: --mesh 8 --parallelism ep=8
--batch 64 --seq 4096"): the mesh is the chip's default slice (one NVLink node of a GPU; with
--model alone, the default's 4x8x8), the parallelism uses every device with ep = gcd(experts,
devices) and dp the rest, the batch is the largest power of two times the smallest batch that
splits over the token shards, at most 512, whose HBM plan fits; --seq stays 4096. Explicit flags
always win; a model that fits no batch is an error saying so.

The backend's per-device module is costed op by op on the chip (roofline with matrix-unit tile
padding, kernel overhead, grouped matmuls from the routing's group sizes), collectives on the
slice's topology (ragged all-to-all from the routing's traffic matrix), then scheduled on every
device with a compute and a communication stream (async collectives overlap independent
compute). Prints a summary: the scenario, step time, tokens/s per chip, MFU, exposed
communication, HBM per device against capacity, per-phase subtotals, the costliest ops of the
slowest device with what bounds them, and what limits the step, measured by re-predicting with
one knob changed (--ragged-buffer-factor 1, --capacity-factor 1, each other backend, a smaller
batch when HBM is over capacity) or read from the breakdown (exposed communication,
memory-bound expert compute).

  --hw NAME        a chip (perfsim hw list) or a .textproto
  --mesh AxBxC     physical slice (TPU torus dims, or the GPU count); default: the chip's
                   default slice. Its device count must equal the parallelism's.
  --routing        uniform | zipf:S | hot:P | file:PATH (tokens per expert; see README)
  --adam           count Adam's two f32 moments per parameter in HBM
  --timeline       print the slowest device's whole timeline (every op: start, duration,
                   stream, bound, stage, GFLOP, HBM MB, net MB) with totals, not the summary
  --trace OUT.json Chrome/Perfetto trace events (one process per device, a thread per stream)
  --trace-devices  which devices the trace shows: all, or ids and ranges (0,7,100-103);
                   default: the slowest device, device 0 and up to 8 in all, spread over the
                   simulated devices (the first data-parallel replica when every replica routes
                   alike: the others have the same timelines)
  --tiling-wi, --tiling-wo
                   kernel tilings of the megablox-style backends (megablox_gmm,
                   ring_of_experts, fused_expert_ffn); on TPU their forward tiles (the first
                   three numbers) are also the tiles of every ragged-dot of that projection
                   (sparse_ragged_dot, ep_ragged_a2a, grouped_gemm_aligned), as MaxText passes
                   them in the ragged_dot_tiling XLA metadata. GPU ragged-dots use (128,128,128).

--hlo FILE.hlo (or - for standard input) predicts a real XLA module instead of perfsim's MoE
lowering, with the model-agnostic simulator (sim/simulator/simulator.h): every entry
instruction costed on the chip (fusions, calls and custom-calls as one kernel, while loops times
their trip count, conditionals by their slowest branch; an unfused module is loop-fused first),
collectives on the slice synchronising their replica groups, async -start/-done pairs overlapping
independent compute, one static order on every device. The report is the --timeline table (or
the same JSON keys); phases are per-op_name subtotals (the first path component after JAX's
"jit(NAME)/"). --hw is required; --mesh defaults to the smallest slice holding the devices the
module names. --routing draws the ragged sizes of the ops whose annotations say what they hold
(a module `perfsim lower` printed); model flags (--model, --backend, --batch, ...) are refused.

--timeline columns: HBM MB is what the op reads and writes in the device's HBM (a ragged
all-to-all: the rows it sends and receives, not its buffers); net MB what it sends to other
devices; a duration marked '*' is a lower bound (the chip description lacks a rate it needs).
Exit 0 on success (an over-capacity HBM plan is reported, not an error), 2 for bad input.
)";

}  // namespace

int RunPredictCommand(const std::vector<std::string>& args, CliIo& io) {
  std::vector<FlagSpec> specs = ScenarioFlagSpecs();
  for (const char* name : {"format", "trace", "trace-devices", "hlo"}) {
    specs.push_back({name, true});
  }
  specs.push_back({"timeline", false});
  specs.push_back({"help", false});
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kPredictUsage << "\n" << kStepFlagsHelp;
    return kExitOk;
  }
  if (flags->Has("hlo")) return RunPredictHlo(*flags, io);
  if (absl::Status s = ExpectNoPositional(*flags); !s.ok()) return ReportStatus(s, io);
  absl::StatusOr<std::string> format = TableOrJsonFormat(*flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  absl::StatusOr<FlaggedScenario> scenario = ScenarioFromFlags(*flags);
  if (!scenario.ok()) return ReportStatus(scenario.status(), io);
  const PredictOptions& options = scenario->options;
  const std::string& chose = scenario->chose;
  TraceDevices trace_devices;
  if (flags->Has("trace-devices")) {
    if (!flags->Has("trace")) {
      return ReportStatus(absl::InvalidArgumentError(
                              "--trace-devices: expected --trace OUT.json too; got none"),
                          io);
    }
    // The device count must be in range before it bounds the ids (StepSpec's limits).
    if (absl::Status s = options.spec.ValidateLimits(); !s.ok()) return ReportStatus(s, io);
    absl::StatusOr<TraceDevices> parsed =
        ParseTraceDevices(flags->Get("trace-devices"), options.spec.num_devices());
    if (!parsed.ok()) return ReportStatus(parsed.status(), io);
    trace_devices = *parsed;
  }
  if (flags->Has("trace")) {
    // Refuse a trace that cannot be written before predicting, not after.
    if (absl::Status s = CheckWritablePath(flags->Get("trace")); !s.ok()) {
      return ReportStatus(Annotate(s, "--trace"), io);
    }
  }
  absl::StatusOr<Prediction> prediction = Predict(options);
  if (!prediction.ok()) return ReportStatus(prediction.status(), io);
  if (flags->Has("trace")) {
    if (absl::Status s = WriteFileAtomically(flags->Get("trace"),
                                             PredictionTrace(*prediction, trace_devices));
        !s.ok()) {
      return ReportStatus(Annotate(s, "--trace"), io);
    }
  }
  if (*format == "json") {
    io.out << PredictionJson(*prediction);
    return kExitOk;
  }
  if (!chose.empty()) io.out << "chose: " << chose << "\n";
  if (flags->Has("timeline")) {
    io.out << FormatPredictionTable(*prediction);
  } else {
    io.out << FormatPredictionSummary(*prediction, PredictAlternatives(*prediction));
  }
  return kExitOk;
}

}  // namespace perfsim
