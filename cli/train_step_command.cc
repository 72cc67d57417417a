// `perfsim step`: the whole training step of a model on a slice (sim/step).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "fmt/format.h"
#include "proto/report.pb.h"
#include "proto/step.pb.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip_registry.h"
#include "sim/moe/model_registry.h"
#include "sim/step/block_timer.h"
#include "sim/step/step_sweep.h"
#include "sim/step/step_time.h"
#include "sim/step/training_step.h"
#include "sim/util/proto_format.h"
#include "sim/util/textproto.h"

namespace perfsim {
namespace {

constexpr char kStepUsage[] = R"(usage: perfsim step [--step FILE.textproto] [flags] [--format=table|json]

The whole training step of a model on a slice: every layer's attention and FFN (dense or MoE)
simulated once per distinct layer kind, composed with the pipeline schedule, FSDP gathers,
context-parallel ring, data-parallel gradient reduction, optimizer and ZeRO gathers. Prints the
step time, tokens/s per device, model TFLOP/s and MFU in MaxText's and Megatron's conventions,
where the time goes on pipeline rank 0, and HBM per device with the largest micro-batch that
fits. The fields and their meaning: proto/step.proto; the model: sim/step/step_time.h.

What the step is (flags override the --step file):
  --step FILE        a TrainingStepSpec textproto (proto/step.proto); '-' reads stdin
  --model NAME|FILE  a built-in model (perfsim models list) or a model textproto
  --hw NAME          a built-in chip (perfsim hw list)
  --mesh SHAPE       the slice: TPU "4x4x8", GPU "256" or "NODESxPER_NODE" (default: the
                     devices on a GPU, the chip's default slice on a TPU)
  --devices N        devices in the job (default: the product of the parallelism)
  --gbs N --seq N --mbs N   global batch (sequences), sequence length, micro-batch (Megatron)
  --parallelism "TP1 PP4 CP1 VP4 EP64 MBS1 FSDP=0; DP=rest"   a published row's string
                     (also NeMo Automodel's "... FSDP64 LBS8 GA1" and MaxText's "ICI FSDP 32 x TP 4")
  --tp --pp --vp --ep --cp --dp --fsdp N   each axis (Megatron's names)
  --zero 0|1|2|3     what the dp replicas shard (1: Megatron's distributed optimizer)
  --sp               tensor parallelism with sequence parallelism
  --schedule gpipe|1f1b|interleaved_1f1b|dualpipe   --uneven-pipeline (layers not dividing pp·vp)
  --remat none|full|selective:MODULE,...|maxtext:POLICY   MODULE: core_attn mlp moe_act moe
                     layernorm mla_up_proj shared_experts (Megatron's --recompute-modules);
                     POLICY: MaxText's remat_policy (full, minimal, save_dot_except_mlp, ...:
                     sim/step/training_step.h RematFromMaxTextPolicy)
  --precision bf16|fp8|mxfp8   --mtp N   --moe-backend NAME   --balanced-routing
MaxText's names:
  --per-device-batch-size N  (GBS = N · devices)   --gradient-accumulation-steps N
  --ici-data-parallelism --ici-fsdp-parallelism --ici-tensor-parallelism
  --ici-expert-parallelism --ici-pipeline-parallelism --ici-context-parallelism N
Sweep:
  --sweep [--top N]  rank every plan PP x VP x EP x TP x FSDP x micro-batch x remat (dp takes
                     the rest; DefaultStepSweepSpace in sim/step/step_sweep.h) by tokens/s per
                     device among those that fit HBM; the top N (default 10) as a table
Bad input exits 2 naming the numbers ("tp 3 does not divide the model's 128 query heads").
)";

absl::StatusOr<int64_t> Count(const ParsedFlags& flags, const std::string& name) {
  int64_t value = 0;
  const std::string text = flags.Get(name);
  if (!absl::SimpleAtoi(text, &value) || value < 0 || value > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, ": expected an integer in [0, ", int64_t{1} << 30, "]; got '", text, "'"));
  }
  return value;
}

absl::Status ApplyFlags(const ParsedFlags& flags, TrainingStepSpec& proto,
                        int64_t& per_device_batch, int64_t& accumulation) {
  if (flags.Has("model")) proto.set_model(flags.Get("model"));
  if (flags.Has("hw")) proto.set_hw(flags.Get("hw"));
  if (flags.Has("parallelism")) {
    if (absl::Status s = ApplyParallelismString(flags.Get("parallelism"), proto); !s.ok()) {
      return s;
    }
  }
  StepParallelism& p = *proto.mutable_parallelism();
  struct IntFlag {
    const char* name;
    std::function<void(int64_t)> set;
  };
  const std::vector<IntFlag> ints = {
      {"devices", [&](int64_t v) { proto.set_devices(v); }},
      {"gbs", [&](int64_t v) { proto.set_global_batch(v); }},
      {"seq", [&](int64_t v) { proto.set_seq_len(v); }},
      {"mbs", [&](int64_t v) { proto.set_micro_batch(v); }},
      {"mtp", [&](int64_t v) { proto.set_mtp_layers(v); }},
      {"tp", [&](int64_t v) { p.set_tp(v); }},
      {"ici-tensor-parallelism", [&](int64_t v) { p.set_tp(v); }},
      {"pp", [&](int64_t v) { p.set_pp(v); }},
      {"ici-pipeline-parallelism", [&](int64_t v) { p.set_pp(v); }},
      {"vp", [&](int64_t v) { p.set_vp(v); }},
      {"ep", [&](int64_t v) { p.set_ep(v); }},
      {"ici-expert-parallelism", [&](int64_t v) { p.set_ep(v); }},
      {"cp", [&](int64_t v) { p.set_cp(v); }},
      {"ici-context-parallelism", [&](int64_t v) { p.set_cp(v); }},
      {"dp", [&](int64_t v) { p.set_dp(v); }},
      {"ici-data-parallelism", [&](int64_t v) { p.set_dp(v); }},
      {"fsdp", [&](int64_t v) { p.set_fsdp(v); }},
      {"ici-fsdp-parallelism", [&](int64_t v) { p.set_fsdp(v); }},
      {"per-device-batch-size", [&](int64_t v) { per_device_batch = v; }},
      {"gradient-accumulation-steps", [&](int64_t v) { accumulation = v; }},
  };
  for (const IntFlag& f : ints) {
    if (!flags.Has(f.name)) continue;
    absl::StatusOr<int64_t> v = Count(flags, f.name);
    if (!v.ok()) return v.status();
    f.set(*v);
  }
  if (flags.Has("zero")) {
    absl::StatusOr<int64_t> z = Count(flags, "zero");
    if (!z.ok()) return z.status();
    if (*z > 3) {
      return absl::InvalidArgumentError(absl::StrCat("--zero: expected 0, 1, 2 or 3; got ", *z));
    }
    p.set_zero(static_cast<ZeroStage>(*z));
  }
  if (flags.Has("sp")) p.set_sequence_parallel(true);
  if (flags.Has("uneven-pipeline")) p.set_uneven_pipeline(true);
  if (flags.Has("balanced-routing")) proto.set_force_balanced_routing(true);
  if (flags.Has("moe-backend")) proto.set_moe_backend(flags.Get("moe-backend"));
  if (flags.Has("schedule")) {
    const std::string s = flags.Get("schedule");
    if (s == "gpipe") {
      p.set_schedule(PIPELINE_SCHEDULE_GPIPE);
    } else if (s == "1f1b") {
      p.set_schedule(PIPELINE_SCHEDULE_1F1B);
    } else if (s == "interleaved_1f1b") {
      p.set_schedule(PIPELINE_SCHEDULE_INTERLEAVED_1F1B);
    } else if (s == "dualpipe") {
      p.set_schedule(PIPELINE_SCHEDULE_DUALPIPE);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--schedule: expected gpipe, 1f1b, interleaved_1f1b or dualpipe; got '", s, "'"));
    }
  }
  if (flags.Has("precision")) {
    const std::string s = flags.Get("precision");
    if (s == "bf16") {
      proto.mutable_precision()->set_compute(PRECISION_BF16);
    } else if (s == "fp8") {
      proto.mutable_precision()->set_compute(PRECISION_FP8);
    } else if (s == "mxfp8") {
      proto.mutable_precision()->set_compute(PRECISION_MXFP8);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--precision: expected bf16, fp8 or mxfp8; got '", s, "'"));
    }
  }
  if (flags.Has("remat")) {
    const std::string s = flags.Get("remat");
    StepRemat& remat = *proto.mutable_remat();
    remat.Clear();
    if (s == "none") {
      remat.set_policy(REMAT_NONE);
    } else if (s == "full") {
      remat.set_policy(REMAT_FULL);
    } else if (absl::StartsWith(s, "maxtext:")) {
      absl::StatusOr<StepRemat> policy = RematFromMaxTextPolicy(s.substr(8));
      if (!policy.ok()) return policy.status();
      remat = *policy;
    } else if (absl::StartsWith(s, "selective:")) {
      remat.set_policy(REMAT_SELECTIVE);
      for (absl::string_view m : absl::StrSplit(s.substr(10), ',', absl::SkipEmpty())) {
        remat.add_recompute(std::string(m));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--remat: expected none, full, selective:MODULE[,MODULE...] or maxtext:POLICY; got '",
          s, "'"));
    }
  }
  return absl::OkStatus();
}

std::string ParallelismWords(const TrainingStep& step) {
  const StepParallelism& p = step.parallelism();
  return absl::StrCat("dp=", step.dp(), " fsdp=", step.fsdp(), " zero=", static_cast<int>(p.zero()),
                      " tp=", step.tp(), p.sequence_parallel() ? "+sp" : "", " ep=", step.ep(),
                      " pp=", step.pp(), " vp=", step.vp(), " cp=", step.cp(), " ",
                      PipelineScheduleKindName(step.pipeline().kind));
}

std::string RematWords(const TrainingStep& step) {
  const StepRemat& r = step.proto().remat();
  switch (r.policy()) {
    case REMAT_FULL:
      return "full";
    case REMAT_SELECTIVE:
      return absl::StrCat("selective:", absl::StrJoin(r.recompute(), ","));
    default:
      return "none";
  }
}

std::string PrecisionWords(const TrainingStep& step) {
  switch (step.proto().precision().compute()) {
    case PRECISION_FP8:
      return "fp8";
    case PRECISION_MXFP8:
      return "mxfp8";
    default:
      return "bf16";
  }
}

report::StepReport ToReport(const TrainingStep& step, const std::string& mesh,
                            const std::string& backend, const StepPrediction& p) {
  report::StepReport r;
  r.set_model(step.model().name());
  r.set_hw(step.proto().hw());
  r.set_mesh(mesh);
  r.set_devices(static_cast<double>(step.devices()));
  r.set_global_batch(static_cast<double>(step.proto().global_batch()));
  r.set_seq_len(static_cast<double>(step.proto().seq_len()));
  r.set_micro_batch(static_cast<double>(step.proto().micro_batch()));
  r.set_microbatches(static_cast<double>(step.microbatches()));
  r.set_parallelism(ParallelismWords(step));
  r.set_remat(RematWords(step));
  r.set_precision(PrecisionWords(step));
  r.set_moe_backend(backend);
  r.set_step_seconds(p.step_seconds);
  r.set_tokens_per_second(p.tokens_per_second);
  r.set_tokens_per_second_per_device(p.tokens_per_second_per_device);
  r.set_tokens_per_second_per_chip(p.tokens_per_second_per_chip);
  r.set_model_flops_maxtext(p.flops_maxtext.total);
  r.set_model_flops_megatron(p.flops_megatron.total);
  r.set_model_tflops_per_device_maxtext(p.model_tflops_per_device_maxtext);
  r.set_model_tflops_per_device_megatron(p.model_tflops_per_device_megatron);
  r.set_mfu_maxtext_pct(100 * p.mfu_maxtext);
  r.set_mfu_megatron_pct(100 * p.mfu_megatron);
  r.set_pipeline_seconds(p.pipeline_seconds);
  r.set_bubble_fraction(p.bubble_fraction);
  r.set_analytic_bubble_fraction(p.analytic_bubble_fraction);
  r.set_distinct_layer_kinds(static_cast<double>(p.distinct_layer_kinds));
  r.set_lower_bound(p.lower_bound);
  report::StepReportBreakdown& b = *r.mutable_breakdown();
  const StepBreakdown& s = p.breakdown;
  b.set_attention_seconds(s.attention_seconds);
  b.set_moe_seconds(s.moe_seconds);
  b.set_dense_ffn_seconds(s.dense_ffn_seconds);
  b.set_embedding_head_seconds(s.embedding_head_seconds);
  b.set_recompute_seconds(s.recompute_seconds);
  b.set_optimizer_seconds(s.optimizer_seconds);
  b.set_exposed_fsdp_seconds(s.exposed_fsdp_seconds);
  b.set_exposed_cp_seconds(s.exposed_cp_seconds);
  b.set_exposed_dp_seconds(s.exposed_dp_seconds);
  b.set_exposed_param_gather_seconds(s.exposed_param_gather_seconds);
  b.set_pipeline_send_seconds(s.pipeline_send_seconds);
  b.set_bubble_seconds(s.bubble_seconds);
  report::StepReportMemory& m = *r.mutable_memory();
  m.set_stage(static_cast<int32_t>(p.memory.stage));
  m.set_parameter_bytes(p.memory.parameter_bytes);
  m.set_master_weight_bytes(p.memory.master_weight_bytes);
  m.set_gradient_bytes(p.memory.gradient_bytes);
  m.set_optimizer_state_bytes(p.memory.optimizer_state_bytes);
  m.set_activation_bytes(p.memory.activation_bytes);
  m.set_transient_bytes(p.memory.transient_bytes);
  m.set_total_bytes(p.memory.total_bytes);
  m.set_capacity_bytes(static_cast<double>(p.memory.capacity_bytes));
  m.set_fits(p.memory.fits);
  m.set_max_micro_batch(static_cast<double>(p.memory.max_micro_batch));
  r.set_model_parameters(p.memory.model_parameters);
  return r;
}

void PrintTable(const report::StepReport& r, CliIo& io) {
  const double step = r.step_seconds();
  auto gib = [](double bytes) { return bytes / (1024.0 * 1024 * 1024); };
  io.out << fmt::format(
      "step: {} on {} x {} (mesh {}), GBS {} x {}, MBS {}, {} micro-batches\n", r.model(),
      r.devices(), r.hw(), r.mesh(), r.global_batch(), r.seq_len(), r.micro_batch(),
      r.microbatches());
  io.out << fmt::format("parallelism: {}; remat {}; {}{}\n", r.parallelism(), r.remat(),
                        r.precision(),
                        r.moe_backend().empty() ? "" : "; MoE " + r.moe_backend());
  io.out << fmt::format("step time            {:.4g} s{}\n", step,
                        r.lower_bound() ? " (lower bound: some op untimed)" : "");
  io.out << fmt::format("tokens/s per device  {:.5g}{}\n", r.tokens_per_second_per_device(),
                        r.tokens_per_second_per_chip() != r.tokens_per_second_per_device()
                            ? fmt::format(" ({:.5g} per chip)", r.tokens_per_second_per_chip())
                            : "");
  io.out << fmt::format("model TFLOP/s/device {:.4g} (Megatron), {:.4g} (MaxText)\n",
                        r.model_tflops_per_device_megatron(),
                        r.model_tflops_per_device_maxtext());
  io.out << fmt::format("MFU (bf16 peak)      {:.1f}% (Megatron), {:.1f}% (MaxText)\n",
                        r.mfu_megatron_pct(), r.mfu_maxtext_pct());
  io.out << fmt::format(
      "pipeline             {:.4g} s, bubble {:.1f}% on rank 0 (the schedule's analytic form: "
      "{:.1f}%)\n",
      r.pipeline_seconds(), 100 * r.bubble_fraction(), 100 * r.analytic_bubble_fraction());
  io.out << "where the time goes (pipeline rank 0, whole step):\n";
  const report::StepReportBreakdown& b = r.breakdown();
  auto row = [&](const char* name, double seconds) {
    io.out << fmt::format("  {:<28} {:>10.4g} s {:>6.1f}%\n", name, seconds,
                          step > 0 ? 100 * seconds / step : 0);
  };
  row("attention", b.attention_seconds());
  row("MoE FFN", b.moe_seconds());
  row("dense FFN", b.dense_ffn_seconds());
  row("embedding + LM head", b.embedding_head_seconds());
  row("  of which recompute", b.recompute_seconds());
  row("optimizer", b.optimizer_seconds());
  row("exposed FSDP gathers", b.exposed_fsdp_seconds());
  row("exposed CP ring", b.exposed_cp_seconds());
  row("exposed DP reduction", b.exposed_dp_seconds());
  row("exposed ZeRO param gather", b.exposed_param_gather_seconds());
  row("pipeline bubble", b.bubble_seconds());
  const report::StepReportMemory& m = r.memory();
  io.out << fmt::format(
      "HBM per device (rank {}): params {:.2f} GiB, master {:.2f}, grads {:.2f}, optimizer "
      "{:.2f}, activations {:.2f}, transient {:.2f}: {:.2f} of {:.2f} GiB, {}; largest MBS "
      "that fits: {}\n",
      m.stage(), gib(m.parameter_bytes()), gib(m.master_weight_bytes()),
      gib(m.gradient_bytes()), gib(m.optimizer_state_bytes()), gib(m.activation_bytes()),
      gib(m.transient_bytes()), gib(m.total_bytes()), gib(m.capacity_bytes()),
      m.fits() ? "fits" : "DOES NOT FIT", m.max_micro_batch());
}

std::string PlanWords(const TrainingStepSpec& spec) {
  const StepParallelism& p = spec.parallelism();
  std::string remat = "none";
  if (spec.remat().policy() == REMAT_FULL) remat = "full";
  if (spec.remat().policy() == REMAT_SELECTIVE) {
    remat = absl::StrCat("selective:", absl::StrJoin(spec.remat().recompute(), ","));
  }
  return absl::StrCat("pp=", p.pp(), " vp=", p.vp(), " ep=", p.ep(), " tp=", p.tp(), " fsdp=",
                      p.fsdp(), " dp=", p.dp(), " mbs=", spec.micro_batch(), " remat=", remat);
}

int RunSweep(const ParsedFlags& flags, const std::string& format, TrainingStepSpec base,
             const Chip& chip, CliIo& io) {
  if (format == "json") {
    return ReportStatus(
        absl::InvalidArgumentError("--sweep prints a table only: expected --format=table"), io);
  }
  int64_t top = 10;
  if (flags.Has("top")) {
    absl::StatusOr<int64_t> t = Count(flags, "top");
    if (!t.ok()) return ReportStatus(t.status(), io);
    top = *t;
  }
  if (base.devices() < 1 || base.global_batch() < 1 || base.seq_len() < 1) {
    return ReportStatus(absl::InvalidArgumentError(
                            "--sweep: expected --devices, --gbs and --seq (the plans vary the rest)"),
                        io);
  }
  absl::StatusOr<ModelConfig> model = ResolveModel(base.model());
  if (!model.ok()) return ReportStatus(model.status(), io);
  std::string mesh = flags.Get("mesh");
  if (mesh.empty() && chip.is_gpu()) mesh = absl::StrCat(base.devices());
  absl::StatusOr<Topology> topology = Topology::Create(chip, mesh);
  if (!topology.ok()) return ReportStatus(topology.status(), io);
  // Plans are ranked under balanced routing (receive buffers sized to what arrives).
  base.set_force_balanced_routing(true);
  const StepSweepSpace space = DefaultStepSweepSpace(base, *model, chip);
  CachedBlockTimer timer(std::make_unique<SimulatedBlockTimer>(chip, *topology));
  absl::StatusOr<StepSweepResult> result =
      SweepSteps(base, *model, space, chip, *topology, timer, top);
  if (!result.ok()) return ReportStatus(result.status(), io);
  io.out << fmt::format(
      "sweep: {} on {} x {}, GBS {} x {}: {} plans, {} valid, {} fit HBM; {} block simulations\n",
      model->name(), base.devices(), chip.name(), base.global_batch(), base.seq_len(),
      result->plans, result->evaluated,
      result->evaluated - [&] {
        for (const auto& [reason, count] : result->infeasible) {
          if (reason == "does not fit HBM") return count;
        }
        return int64_t{0};
      }(),
      result->block_simulations);
  io.out << fmt::format("{:>4}  {:>12}  {:>9}  {:>6}  {:>8}  {:>7}  {}\n", "rank",
                        "tokens/s/dev", "step s", "MFU %", "HBM GiB", "bubble", "plan");
  for (size_t i = 0; i < result->ranked.size(); ++i) {
    const StepSweepPlan& plan = result->ranked[i];
    io.out << fmt::format("{:>4}  {:>12.5g}  {:>9.4g}  {:>6.1f}  {:>8.1f}  {:>6.1f}%  {}\n", i + 1,
                          plan.tokens_per_second_per_device, plan.step_seconds,
                          100 * plan.mfu_megatron, plan.hbm_bytes / (1 << 30),
                          100 * plan.bubble_fraction, PlanWords(plan.spec));
  }
  io.out << "not ranked, by reason (first 8):\n";
  for (size_t i = 0; i < result->infeasible.size() && i < 8; ++i) {
    io.out << fmt::format("  {:>6}  {}\n", result->infeasible[i].second,
                          result->infeasible[i].first);
  }
  return kExitOk;
}

}  // namespace

int RunTrainStepCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(
      args, {{"format", true}, {"step", true}, {"model", true}, {"hw", true}, {"mesh", true},
             {"devices", true}, {"gbs", true}, {"seq", true}, {"mbs", true},
             {"parallelism", true}, {"tp", true}, {"pp", true}, {"vp", true}, {"ep", true},
             {"cp", true}, {"dp", true}, {"fsdp", true}, {"zero", true}, {"sp", false},
             {"schedule", true}, {"uneven-pipeline", false}, {"remat", true},
             {"precision", true}, {"mtp", true}, {"moe-backend", true},
             {"balanced-routing", false}, {"per-device-batch-size", true},
             {"gradient-accumulation-steps", true}, {"ici-data-parallelism", true},
             {"ici-fsdp-parallelism", true}, {"ici-tensor-parallelism", true},
             {"ici-expert-parallelism", true}, {"ici-pipeline-parallelism", true},
             {"ici-context-parallelism", true}, {"sweep", false}, {"top", true}});
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kStepUsage;
    return kExitOk;
  }
  absl::StatusOr<std::string> format = TableOrJsonFormat(*flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  if (absl::Status s = ExpectNoPositional(*flags); !s.ok()) return ReportStatus(s, io);

  TrainingStepSpec proto;
  if (flags->Has("step")) {
    const std::string path = flags->Get("step");
    absl::StatusOr<std::string> text = ReadInput(path, io.in);
    if (!text.ok()) return ReportStatus(text.status(), io);
    absl::StatusOr<TextProtoSource> source = ParseTextProto(*text, InputName(path), &proto);
    if (!source.ok()) return ReportStatus(source.status(), io);
  }
  int64_t per_device_batch = 0;
  int64_t accumulation = 0;
  if (absl::Status s = ApplyFlags(*flags, proto, per_device_batch, accumulation); !s.ok()) {
    return ReportStatus(s, io);
  }
  if (proto.model().empty() || proto.hw().empty()) {
    return ReportStatus(absl::InvalidArgumentError(
                            "expected --model and --hw (or a --step file naming them)"),
                        io);
  }
  absl::StatusOr<Chip> chip = ResolveChip(proto.hw());
  if (!chip.ok()) return ReportStatus(chip.status(), io);
  // MaxText: GBS = per-device batch · devices; one micro-batch per data rank unless the
  // accumulation steps say more.
  if (per_device_batch > 0) {
    const int64_t shards = BatchShardsOf(proto);
    if (proto.devices() <= 0 || shards < 1) {
      return ReportStatus(absl::InvalidArgumentError(
                              "--per-device-batch-size: expected --devices and a parallelism "
                              "that determines dp · fsdp"),
                          io);
    }
    const int64_t gbs = per_device_batch * proto.devices();
    const int64_t steps = accumulation > 0 ? accumulation : 1;
    proto.set_global_batch(gbs);
    if (gbs % (shards * steps) != 0) {
      return ReportStatus(absl::InvalidArgumentError(absl::StrCat(
                              "--per-device-batch-size: GBS ", gbs, " does not split into dp · fsdp ",
                              shards, " x ", steps, " accumulation steps")),
                          io);
    }
    proto.set_micro_batch(gbs / (shards * steps));
  }
  if (flags->Has("sweep")) return RunSweep(*flags, *format, proto, *chip, io);
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  if (!step.ok()) return ReportStatus(step.status(), io);

  std::string mesh = flags->Get("mesh");
  if (mesh.empty() && chip->is_gpu()) mesh = absl::StrCat(step->devices());
  absl::StatusOr<Topology> topology = Topology::Create(*chip, mesh);
  if (!topology.ok()) return ReportStatus(topology.status(), io);
  if (mesh.empty()) mesh = topology->ToString();
  SimulatedBlockTimer timer(*chip, *topology);
  absl::StatusOr<StepPrediction> prediction = PredictStep(*step, *chip, *topology, timer);
  if (!prediction.ok()) return ReportStatus(prediction.status(), io);
  const bool has_moe = step->model().proto().num_moe_layers() > 0;
  const report::StepReport report =
      ToReport(*step, mesh, has_moe ? timer.MoeBackend(*step) : "", *prediction);
  if (*format == "json") {
    io.out << ReportJson(report);
  } else {
    PrintTable(report, io);
  }
  return kExitOk;
}

}  // namespace perfsim
