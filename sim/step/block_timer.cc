#include "sim/step/block_timer.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sim/lowering/attention.h"
#include "sim/lowering/dense_layers.h"
#include "sim/lowering/layer.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/step_spec.h"
#include "sim/simulator/simulator.h"

namespace perfsim {
namespace {

constexpr PrimitiveType kCompute = PrimitiveType::kBF16;

struct Simulated {
  double seconds = 0;
  double core_seconds = 0;  // of the attention core's instructions (attention only)
  bool lower_bound = false;
};

// A flash-attention kernel (either direction): the attention core.
bool IsFlashKernel(const Instruction* instruction) {
  if (instruction == nullptr || instruction->annotation() == nullptr) return false;
  const Kernel::Name kernel = instruction->annotation()->kernel().kernel();
  return kernel == Kernel::KERNEL_FLASH_ATTENTION || kernel == Kernel::KERNEL_FLASH_ATTENTION_BWD;
}

absl::StatusOr<Simulated> Simulate(const Module& module, int64_t devices, const Chip& chip,
                                   const Topology& topology) {
  SimulatorOptions options;
  options.num_devices = devices;
  absl::StatusOr<Timeline> t = SimulateModule(module, chip, topology, options);
  if (!t.ok()) return t.status();
  Simulated s;
  s.seconds = t->step_seconds;
  s.lower_bound = !t->untimed.empty() || !t->unknown_rates.empty();
  for (const TimelineOp& op : t->ops) {
    if (IsFlashKernel(op.instruction)) s.core_seconds += op.seconds;
  }
  return s;
}

absl::StatusOr<Simulated> SimulateLayer(absl::StatusOr<LoweredLayer> layer, int64_t devices,
                                        const Chip& chip, const Topology& topology) {
  if (!layer.ok()) return layer.status();
  return Simulate(*layer->module, devices, chip, topology);
}

// A block's timing from its forward and forward+backward simulations: the backward is their
// difference (the simulator starts the backward when the forward's outputs are ready).
absl::StatusOr<BlockTiming> ForwardAndBackward(
    const std::function<absl::StatusOr<Simulated>(Phase)>& simulate) {
  absl::StatusOr<Simulated> fwd = simulate(Phase::kForward);
  if (!fwd.ok()) return fwd.status();
  absl::StatusOr<Simulated> both = simulate(Phase::kForwardBackward);
  if (!both.ok()) return both.status();
  BlockTiming t;
  t.forward_seconds = fwd->seconds;
  t.backward_seconds = std::max(0.0, both->seconds - fwd->seconds);
  t.lower_bound = fwd->lower_bound || both->lower_bound;
  return t;
}

}  // namespace

// FP8 GEMMs for fp8 and MXFP8 steps on a chip with an fp8 matmul rate.
bool Fp8Gemms(const TrainingStep& step, const Chip& chip) {
  return step.proto().precision().compute() != PRECISION_BF16 &&
         chip.PeakMatmulFlopsPerSecond(MatmulDtype::kFp8) > 0;
}

StepSpec MoeLayerSpec(const TrainingStep& step, Phase phase) {
  StepSpec spec = StepSpec::Defaults(step.model());
  spec.batch = step.proto().micro_batch() * step.ep();
  spec.seq = step.proto().seq_len() / step.cp();
  spec.phase = phase;
  spec.parallelism = Parallelism{.dp = 1, .ep = step.ep(), .tp = step.tp(), .fsdp = 1};
  // Forced-balanced routing sends every shard exactly its T_l·K rows: a dropless dispatch
  // sizes its receive buffer to what arrives, not to the worst case.
  if (step.proto().force_balanced_routing()) spec.knobs.ragged_buffer_factor = 1;
  return spec;
}

std::string SimulatedBlockTimer::MoeBackend(const TrainingStep& step) const {
  if (!step.proto().moe_backend().empty()) return step.proto().moe_backend();
  // The first that lowers this split: TPUs prefer the megablox kernels, GPUs grouped GEMMs
  // behind an expert-parallel all-to-all.
  static constexpr const char* kTpu[] = {"megablox_gmm", "ep_ragged_a2a", "sparse_ragged_dot",
                                         "dense_einsum"};
  static constexpr const char* kGpu[] = {"ep_ragged_a2a", "sparse_ragged_dot",
                                         "grouped_gemm_aligned", "dense_einsum"};
  StepSpec spec = MoeLayerSpec(step, Phase::kForwardBackward);
  for (const char* name : chip_.is_tpu() ? absl::MakeConstSpan(kTpu) : absl::MakeConstSpan(kGpu)) {
    absl::StatusOr<const perfsim::MoeBackend*> backend = FindBackend(name);
    if (backend.ok() && (*backend)->Supports(spec).ok()) return name;
  }
  return chip_.is_tpu() ? kTpu[0] : kGpu[0];
}

absl::StatusOr<BlockTiming> SimulatedBlockTimer::Attention(const TrainingStep& step,
                                                           int64_t layer) {
  const ModelConfig& model = step.model();
  if (!model.has_attention()) return BlockTiming{};
  const int64_t seq = step.proto().seq_len() / step.cp();
  auto lower = [&](Phase phase) {
    AttentionLoweringSpec spec =
        AttentionLoweringSpec::FromModel(model, layer, step.proto().micro_batch(), seq);
    spec.tp = step.tp();
    spec.sequence_parallel = step.parallelism().sequence_parallel();
    spec.phase = phase;
    spec.dtype = kCompute;
    spec.fp8_gemms = Fp8Gemms(step, chip_);
    // The flash kernel needs its blocks to divide the sequence; a toy sequence runs plain.
    if (seq % spec.flash_block_q == 0 && seq % spec.flash_block_kv == 0) {
      spec.kernel = AttentionKernel::kFlash;
    }
    return SimulateLayer(LowerAttention(spec), step.tp(), chip_, topology_);
  };
  absl::StatusOr<Simulated> fwd = lower(Phase::kForward);
  if (!fwd.ok()) return fwd.status();
  absl::StatusOr<Simulated> both = lower(Phase::kForwardBackward);
  if (!both.ok()) return both.status();
  BlockTiming t;
  t.forward_seconds = fwd->seconds;
  t.backward_seconds = std::max(0.0, both->seconds - fwd->seconds);
  t.core_forward_seconds = fwd->core_seconds;
  // Context parallelism: the module holds the device's S/cp queries against its own S/cp keys;
  // over the ring they meet all cp shards' keys (load-balanced causal halves), so the core does
  // cp times the work of the local module's.
  if (step.cp() > 1) {
    const double extra = static_cast<double>(step.cp() - 1);
    const double core_bwd = std::max(0.0, both->core_seconds - fwd->core_seconds);
    t.forward_seconds += extra * fwd->core_seconds;
    t.backward_seconds += extra * core_bwd;
    t.core_forward_seconds *= static_cast<double>(step.cp());
  }
  t.lower_bound = fwd->lower_bound || both->lower_bound;
  return t;
}

absl::StatusOr<BlockTiming> SimulatedBlockTimer::Ffn(const TrainingStep& step, int64_t layer) {
  const ModelConfig& model = step.model();
  const int64_t seq = step.proto().seq_len() / step.cp();
  auto simulate = [&](Phase phase) -> absl::StatusOr<Simulated> {
    if (model.IsMoeLayer(layer)) {
      StepSpec spec = MoeLayerSpec(step, phase);
      spec.backend = MoeBackend(step);
      // The experts stay bf16: their ragged-dots do not take a fused operand cast in the
      // simulator (fusion.h), so an fp8 lowering would pay a separate quantisation of every
      // weight and token buffer per micro-batch, slower than bf16 -- not what TE does.
      absl::StatusOr<LoweredStep> lowered = LowerStep(spec);
      if (!lowered.ok()) {
        return absl::Status(lowered.status().code(),
                            absl::StrCat("MoE layer (", spec.backend, ", ep ", step.ep(),
                                         "): ", lowered.status().message()));
      }
      return Simulate(*lowered->module, spec.num_devices(), chip_, topology_);
    }
    DenseFfnSpec spec =
        DenseFfnSpec::FromModel(model, step.proto().micro_batch(), seq, step.tp(), phase);
    spec.activation_type = kCompute;
    spec.param_type = kCompute;
    spec.fp8_gemms = Fp8Gemms(step, chip_);
    return SimulateLayer(LowerDenseFfn(spec), step.tp(), chip_, topology_);
  };
  return ForwardAndBackward(simulate);
}

absl::StatusOr<BlockTiming> SimulatedBlockTimer::Embedding(const TrainingStep& step) {
  const ModelConfig& model = step.model();
  if (model.proto().vocab_size() == 0) return BlockTiming{};
  auto simulate = [&](Phase phase) -> absl::StatusOr<Simulated> {
    EmbeddingSpec spec = EmbeddingSpec::FromModel(model, step.proto().micro_batch(),
                                                  step.proto().seq_len() / step.cp(), step.tp(),
                                                  phase);
    spec.activation_type = kCompute;
    spec.param_type = kCompute;
    return SimulateLayer(LowerEmbedding(spec), step.tp(), chip_, topology_);
  };
  return ForwardAndBackward(simulate);
}

absl::StatusOr<BlockTiming> SimulatedBlockTimer::LmHead(const TrainingStep& step) {
  const ModelConfig& model = step.model();
  if (model.proto().vocab_size() == 0) return BlockTiming{};
  auto simulate = [&](Phase phase) -> absl::StatusOr<Simulated> {
    LmHeadSpec spec = LmHeadSpec::FromModel(model, step.proto().micro_batch(),
                                            step.proto().seq_len() / step.cp(), step.tp(), phase);
    spec.activation_type = kCompute;
    spec.param_type = kCompute;
    return SimulateLayer(LowerLmHead(spec), step.tp(), chip_, topology_);
  };
  return ForwardAndBackward(simulate);
}

absl::StatusOr<double> SimulatedBlockTimer::OptimizerSeconds(const TrainingStep& step,
                                                             double elements) {
  OptimizerSpec spec;
  spec.num_params = static_cast<int64_t>(elements);
  if (spec.num_params <= 0) return 0.0;
  spec.param_type = PrimitiveType::kF32;
  spec.grad_type = step.proto().precision().grad_bytes() == 2 ? PrimitiveType::kBF16
                                                               : PrimitiveType::kF32;
  absl::StatusOr<Simulated> s = SimulateLayer(LowerAdamW(spec), 1, chip_, topology_);
  if (!s.ok()) return s.status();
  return s->seconds;
}

}  // namespace perfsim
