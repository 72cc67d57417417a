#include "sim/step/step_memory.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/step/pipeline_schedule.h"

namespace perfsim {
namespace {

// Bytes of one bf16 activation element and of an f32 one.
constexpr double kAct = 2;
constexpr double kF32 = 4;

bool Recomputes(const TrainingStep& step, const char* module) {
  for (const std::string& name : step.proto().remat().recompute()) {
    if (name == module) return true;
  }
  return false;
}

// Every pipeline rank's memory for `step`; the fullest.
absl::StatusOr<StepMemory> Evaluate(const TrainingStep& step, const Chip& chip) {
  const ModelConfig& m = step.model();
  const PipelineSpec pipeline = step.pipeline();
  absl::StatusOr<PipelineTimeline> timeline =
      SimulatePipeline(pipeline, PipelineStageCosts::Uniform(pipeline, 1, 2, 0));
  if (!timeline.ok()) return timeline.status();

  const StepParallelism& par = step.parallelism();
  const StepPrecision& prec = step.proto().precision();
  const double dp_cp = static_cast<double>(step.dp() * step.cp());
  const double fsdp = static_cast<double>(step.fsdp());
  const double expert_dp =
      static_cast<double>(step.dp() * step.fsdp() * step.cp()) / static_cast<double>(step.ep());
  const bool sharded_params = step.fsdp() > 1 || par.zero() >= ZERO_3;
  const double dense_param_shards = fsdp * (par.zero() >= ZERO_3 ? dp_cp : 1);
  const double dense_grad_shards = fsdp * (par.zero() >= ZERO_2 ? dp_cp : 1);
  const double dense_state_shards = fsdp * (par.zero() >= ZERO_1 ? dp_cp : 1);
  const double expert_param_shards = sharded_params ? expert_dp : 1;
  const double expert_grad_shards = (sharded_params || par.zero() >= ZERO_2) ? expert_dp : 1;
  const double expert_state_shards = (sharded_params || par.zero() >= ZERO_1) ? expert_dp : 1;
  const double moments = step.proto().optimizer() == OPTIMIZER_ADAMW ? 2 : 1;
  const double d = static_cast<double>(m.d_model());
  const double tp = static_cast<double>(step.tp());
  const double vocab_params = static_cast<double>(m.proto().vocab_size()) * d / tp;
  const double tokens = static_cast<double>(step.tokens_per_microbatch());

  StepMemory best;
  best.capacity_bytes = chip.hbm_capacity_bytes();
  for (int64_t rank = 0; rank < step.pp(); ++rank) {
    double dense = 0;
    double experts = 0;
    double largest_layer = 0;
    double chunk_activation = 0;  // the largest chunk's bytes per micro-batch
    const std::vector<int64_t> rank_chunks = step.chunks_of_rank(rank);
    for (const int64_t chunk : rank_chunks) {
      const int64_t first = step.first_layer_of_chunk(chunk);
      double activation = 0;
      for (int64_t layer = first; layer < first + step.layers_in_chunk(chunk); ++layer) {
        const LayerParams p = ParamsOfLayer(step, layer);
        dense += p.dense;
        experts += p.experts;
        largest_layer = std::max(largest_layer, p.dense + p.experts);
        activation += ActivationBytesPerToken(step, layer) * tokens;
      }
      chunk_activation = std::max(chunk_activation, activation);
    }
    const int64_t last_chunk = step.pp() * step.vp() - 1;
    const bool first_rank =
        std::find(rank_chunks.begin(), rank_chunks.end(), 0) != rank_chunks.end();
    const bool last_rank =
        std::find(rank_chunks.begin(), rank_chunks.end(), last_chunk) != rank_chunks.end();
    if (first_rank) dense += vocab_params;
    if (last_rank) dense += (m.proto().tied_embeddings() && first_rank ? 0 : vocab_params) + d;

    StepMemory mem;
    mem.stage = rank;
    mem.capacity_bytes = chip.hbm_capacity_bytes();
    mem.parameter_bytes = (dense / dense_param_shards + experts / expert_param_shards) *
                          static_cast<double>(prec.param_bytes());
    mem.master_weight_bytes = (dense / dense_state_shards + experts / expert_state_shards) *
                              static_cast<double>(prec.master_weight_bytes());
    mem.gradient_bytes = (dense / dense_grad_shards + experts / expert_grad_shards) *
                         static_cast<double>(prec.grad_bytes());
    mem.optimizer_state_bytes = (dense / dense_state_shards + experts / expert_state_shards) *
                                moments * static_cast<double>(prec.optimizer_state_bytes());
    mem.activation_bytes =
        static_cast<double>(timeline->max_in_flight[static_cast<size_t>(rank)]) *
        chunk_activation;
    if (last_rank) {
      mem.transient_bytes +=
          tokens * static_cast<double>(m.proto().vocab_size()) / tp * kF32;
    }
    if (sharded_params) {
      mem.transient_bytes += 2 * largest_layer * static_cast<double>(prec.param_bytes());
    }
    mem.total_bytes = mem.parameter_bytes + mem.master_weight_bytes + mem.gradient_bytes +
                      mem.optimizer_state_bytes + mem.activation_bytes + mem.transient_bytes;
    if (rank == 0 || mem.total_bytes > best.total_bytes) best = mem;
  }
  best.fits = best.total_bytes <= static_cast<double>(best.capacity_bytes);

  // The whole model's parameters, for reports.
  double total = static_cast<double>(m.proto().vocab_size()) * d *
                     (m.proto().tied_embeddings() ? 1 : 2) + d;
  for (int64_t layer = 0; layer < m.proto().num_layers(); ++layer) {
    const double matrices = static_cast<double>(m.MatricesPerExpert());
    total += static_cast<double>(m.AttentionParamsPerLayer()) + 2 * d;
    if (m.IsMoeLayer(layer)) {
      total += d * static_cast<double>(m.num_experts()) +
               static_cast<double>(m.num_shared_experts()) * matrices * d *
                   static_cast<double>(m.shared_expert_ffn_dim()) +
               static_cast<double>(m.num_experts()) * matrices * d *
                   static_cast<double>(m.expert_ffn_dim());
    } else {
      total += matrices * d * static_cast<double>(m.proto().dense_ffn_dim());
    }
  }
  best.model_parameters = total;
  return best;
}

}  // namespace

LayerParams ParamsOfLayer(const TrainingStep& step, int64_t layer) {
  const ModelConfig& m = step.model();
  const double d = static_cast<double>(m.d_model());
  const double tp = static_cast<double>(step.tp());
  const double matrices = static_cast<double>(m.MatricesPerExpert());
  LayerParams p;
  p.dense = static_cast<double>(m.AttentionParamsPerLayer()) / tp + 2 * d;
  if (m.IsMoeLayer(layer)) {
    p.dense += d * static_cast<double>(m.num_experts());  // router
    p.dense += static_cast<double>(m.num_shared_experts()) * matrices * d *
               static_cast<double>(m.shared_expert_ffn_dim()) / tp;
    p.experts = static_cast<double>(m.num_experts() / step.ep()) * matrices * d *
                static_cast<double>(m.expert_ffn_dim()) / tp;
  } else {
    p.dense += matrices * d * static_cast<double>(m.proto().dense_ffn_dim()) / tp;
  }
  return p;
}

double ActivationBytesPerToken(const TrainingStep& step, int64_t layer) {
  const ModelConfig& m = step.model();
  const double d = static_cast<double>(m.d_model());
  const double tp = static_cast<double>(step.tp());
  const double d_size = step.parallelism().sequence_parallel() ? d / tp : d;
  if (step.proto().remat().policy() == REMAT_FULL) return d_size * kAct;

  const double norm_in = d_size * kAct;
  const double norm_out = Recomputes(step, "layernorm") ? 0 : d_size * kAct;
  double bytes = 0;

  // Attention block.
  if (m.has_attention()) {
    const AttentionSpec& a = m.attention();
    const double h = static_cast<double>(a.num_query_heads());
    bytes += norm_in + norm_out;
    double value_width = 0;
    if (m.is_mla()) {
      const MlaSpec& mla = a.mla();
      const double qk = static_cast<double>(mla.qk_nope_head_dim() + mla.qk_rope_head_dim());
      const double v = static_cast<double>(mla.v_head_dim());
      // q latent before and after its norm, kv latent (with the rope key) and its normed part.
      bytes += (2 * static_cast<double>(mla.q_lora_rank()) +
                static_cast<double>(mla.kv_lora_rank() + mla.qk_rope_head_dim()) +
                static_cast<double>(mla.kv_lora_rank())) *
               kAct;
      if (!Recomputes(step, "mla_up_proj")) bytes += h * (2 * qk + v) / tp * kAct;
      value_width = h * v;
    } else {
      const double hd = static_cast<double>(a.head_dim());
      const double hkv = static_cast<double>(a.num_kv_heads());
      bytes += (h + 2 * hkv) * hd / tp * kAct;
      value_width = h * hd;
    }
    if (!Recomputes(step, "core_attn")) bytes += value_width / tp * kAct + h / tp * kF32;
  }

  // FFN block.
  const double matrices = static_cast<double>(m.MatricesPerExpert());
  bytes += norm_in + norm_out;
  if (m.IsMoeLayer(layer)) {
    if (Recomputes(step, "moe")) return bytes;
    const double k = static_cast<double>(m.experts_per_token());
    const double f = static_cast<double>(m.expert_ffn_dim()) / tp;
    bytes += 2 * static_cast<double>(m.num_experts()) * kF32;  // router logits, probabilities
    bytes += 2 * k * d * kAct;                                 // dispatched copies, outputs
    // h0, h1 (gated) or h, then the activation.
    bytes += k * (matrices - 1) * f * kAct;
    if (!Recomputes(step, "moe_act")) bytes += k * f * kAct;
    if (m.num_shared_experts() > 0 && !Recomputes(step, "shared_experts")) {
      bytes += static_cast<double>(m.num_shared_experts()) * matrices *
               static_cast<double>(m.shared_expert_ffn_dim()) / tp * kAct;
    }
  } else if (!Recomputes(step, "mlp")) {
    bytes += matrices * static_cast<double>(m.proto().dense_ffn_dim()) / tp * kAct;
  }
  return bytes;
}

absl::StatusOr<StepMemory> StepHbm(const TrainingStep& step, const Chip& chip,
                                   bool search_max_micro_batch) {
  absl::StatusOr<StepMemory> memory = Evaluate(step, chip);
  if (!memory.ok()) return memory.status();
  if (!search_max_micro_batch) return memory;
  // The largest micro-batch that fits: activations grow with it, the micro-batches in flight
  // may shrink (fewer of them per step). Candidates: the divisors of GBS / (dp · fsdp).
  const int64_t per_rank = step.proto().global_batch() / step.batch_shards();
  std::vector<int64_t> divisors;
  for (int64_t i = 1; i * i <= per_rank; ++i) {
    if (per_rank % i != 0) continue;
    divisors.push_back(i);
    if (i * i != per_rank) divisors.push_back(per_rank / i);
  }
  std::sort(divisors.begin(), divisors.end());
  for (int64_t mbs : divisors) {
    TrainingStepSpec proto = step.proto();
    proto.set_micro_batch(mbs);
    absl::StatusOr<TrainingStep> candidate = TrainingStep::FromProto(proto, step.model());
    if (!candidate.ok()) continue;  // e.g. interleaving needs m a multiple of pp
    absl::StatusOr<StepMemory> m = Evaluate(*candidate, chip);
    if (!m.ok()) return m.status();
    if (m->fits) memory->max_micro_batch = mbs;
  }
  return memory;
}

}  // namespace perfsim
