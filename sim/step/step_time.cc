#include "sim/step/step_time.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/collectives.h"

namespace perfsim {
namespace {

// The device-id strides of the step's axes (step_time.h).
struct Strides {
  int64_t tp = 1, cp = 1, fsdp = 1, dp = 1, pp = 1;
  explicit Strides(const TrainingStep& s) {
    tp = 1;
    cp = s.tp();
    fsdp = cp * s.cp();
    dp = fsdp * s.fsdp();
    pp = dp * s.dp();
  }
};

// The groups of pipeline rank 0's first device.
struct Groups {
  std::vector<int64_t> dense_dp;   // dp x cp: dense gradient reduction
  std::vector<int64_t> expert_dp;  // the expert replicas among the dp·fsdp·cp data ranks
  std::vector<int64_t> fsdp;       // the weight shards of FSDP (x dp x cp with zero 3)
  std::vector<std::pair<int64_t, int64_t>> cp_ring;
  std::vector<std::pair<int64_t, int64_t>> pp_send;
};

Groups MakeGroups(const TrainingStep& step) {
  const Strides st(step);
  Groups g;
  for (int64_t dp = 0; dp < step.dp(); ++dp) {
    for (int64_t cp = 0; cp < step.cp(); ++cp) g.dense_dp.push_back(dp * st.dp + cp * st.cp);
  }
  const int64_t data_ranks = step.dp() * step.fsdp() * step.cp();
  for (int64_t r = 0; r < data_ranks; r += step.ep()) g.expert_dp.push_back(r * step.tp());
  if (step.parallelism().zero() >= ZERO_3) {
    for (int64_t r = 0; r < data_ranks; ++r) g.fsdp.push_back(r * step.tp());
  } else {
    for (int64_t f = 0; f < step.fsdp(); ++f) g.fsdp.push_back(f * st.fsdp);
  }
  if (step.cp() > 1) {
    for (int64_t c = 0; c < step.cp(); ++c) {
      g.cp_ring.emplace_back(c * st.cp, ((c + 1) % step.cp()) * st.cp);
    }
  }
  if (step.pp() > 1) g.pp_send.emplace_back(0, st.pp);
  return g;
}

// A collective's seconds, 0 for a group of one.
absl::StatusOr<double> Seconds(absl::StatusOr<CollectiveTime> t) {
  if (!t.ok()) return t.status();
  return t->seconds;
}

struct LayerCost {
  double forward = 0;
  double backward = 0;
  double recompute = 0;
  double attention = 0;  // forward + backward + its recompute, for the breakdown
  double ffn = 0;
  bool moe = false;
  double exposed_fsdp_forward = 0;
  double exposed_fsdp_backward = 0;
  double exposed_cp_forward = 0;
  double exposed_cp_backward = 0;
};

bool Recomputes(const TrainingStep& step, absl::string_view module) {
  for (const std::string& name : step.proto().remat().recompute()) {
    if (name == module) return true;
  }
  return false;
}


}  // namespace

absl::StatusOr<StepPrediction> PredictStep(const TrainingStep& step, const Chip& chip,
                                           const Topology& topology, BlockTimer& timer,
                                           const PredictStepOptions& options) {
  if (step.devices() > topology.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the step's ", step.devices(), " devices do not fit the topology's ",
        topology.num_devices(), " (", topology.ToString(), ")"));
  }
  const ModelConfig& model = step.model();
  const StepPrecision& prec = step.proto().precision();
  const Groups groups = MakeGroups(step);
  const double tokens = static_cast<double>(step.tokens_per_microbatch());
  const double d = static_cast<double>(model.d_model());
  const double tp = static_cast<double>(step.tp());
  const bool fsdp_on = step.fsdp() > 1 || step.parallelism().zero() >= ZERO_3;
  StepPrediction out;
  out.pipeline = step.pipeline();

  // Block timings, once per distinct layer kind.
  using Key = std::tuple<bool, int, bool>;  // MoE, attention scope, rope
  absl::flat_hash_map<Key, std::pair<BlockTiming, BlockTiming>> kinds;
  std::vector<LayerCost> layers(static_cast<size_t>(model.proto().num_layers()));
  for (int64_t l = 0; l < model.proto().num_layers(); ++l) {
    const Key key{model.IsMoeLayer(l), static_cast<int>(model.LayerAttentionScope(l)),
                  model.LayerHasRope(l)};
    auto it = kinds.find(key);
    if (it == kinds.end()) {
      absl::StatusOr<BlockTiming> attention = timer.Attention(step, l);
      if (!attention.ok()) return attention.status();
      absl::StatusOr<BlockTiming> ffn = timer.Ffn(step, l);
      if (!ffn.ok()) return ffn.status();
      it = kinds.emplace(key, std::make_pair(*attention, *ffn)).first;
    }
    const BlockTiming& a = it->second.first;
    const BlockTiming& f = it->second.second;
    out.lower_bound |= a.lower_bound || f.lower_bound;
    LayerCost& c = layers[static_cast<size_t>(l)];
    c.moe = model.IsMoeLayer(l);
    c.forward = a.forward_seconds + f.forward_seconds;
    c.backward = a.backward_seconds + f.backward_seconds;
    double attention_recompute = 0;
    double ffn_recompute = 0;
    switch (step.proto().remat().policy()) {
      case REMAT_FULL:
        attention_recompute = a.forward_seconds;
        ffn_recompute = f.forward_seconds;
        break;
      case REMAT_SELECTIVE:
        if (Recomputes(step, "core_attn")) attention_recompute = a.core_forward_seconds;
        if ((c.moe && Recomputes(step, "moe")) || (!c.moe && Recomputes(step, "mlp"))) {
          ffn_recompute = f.forward_seconds;
        }
        break;
      default:
        break;
    }
    c.recompute = attention_recompute + ffn_recompute;
    c.attention = a.forward_seconds + a.backward_seconds + attention_recompute;
    c.ffn = f.forward_seconds + f.backward_seconds + ffn_recompute;

    // FSDP: gather before forward, gather again and reduce-scatter after backward.
    if (fsdp_on) {
      const LayerParams p = ParamsOfLayer(step, l);
      const double param_bytes = static_cast<double>(prec.param_bytes());
      const double grad_bytes = static_cast<double>(prec.grad_bytes());
      absl::StatusOr<double> gather = Seconds(AllGatherTime(p.dense * param_bytes, groups.fsdp, topology));
      if (!gather.ok()) return gather.status();
      absl::StatusOr<double> scatter =
          Seconds(ReduceScatterTime(p.dense * grad_bytes, groups.fsdp, topology));
      if (!scatter.ok()) return scatter.status();
      double expert_gather = 0, expert_scatter = 0;
      if (p.experts > 0) {
        absl::StatusOr<double> g = Seconds(AllGatherTime(p.experts * param_bytes, groups.expert_dp, topology));
        absl::StatusOr<double> s = Seconds(ReduceScatterTime(p.experts * grad_bytes, groups.expert_dp, topology));
        if (!g.ok()) return g.status();
        if (!s.ok()) return s.status();
        expert_gather = *g;
        expert_scatter = *s;
      }
      const double gathers = *gather + expert_gather;
      c.exposed_fsdp_forward = std::max(0.0, gathers - c.forward);
      c.exposed_fsdp_backward =
          std::max(0.0, gathers + *scatter + expert_scatter - c.backward - c.recompute);
    }
    // CP: the K/V ring.
    if (!groups.cp_ring.empty() && model.has_attention()) {
      const AttentionSpec& attn = model.attention();
      const double kv_width =
          model.is_mla()
              ? static_cast<double>(attn.num_query_heads()) *
                    static_cast<double>(attn.mla().qk_nope_head_dim() +
                                        attn.mla().qk_rope_head_dim() + attn.mla().v_head_dim())
              : 2 * static_cast<double>(attn.num_kv_heads() * attn.head_dim());
      absl::StatusOr<double> hop =
          Seconds(CollectivePermuteTime(tokens * kv_width / tp * 2, groups.cp_ring, topology));
      if (!hop.ok()) return hop.status();
      const double ring = static_cast<double>(step.cp() - 1) * *hop;
      c.exposed_cp_forward = std::max(0.0, ring - a.core_forward_seconds);
      c.exposed_cp_backward = std::max(0.0, 2 * ring - 2 * a.core_forward_seconds);
    }
  }
  out.distinct_layer_kinds = static_cast<int64_t>(kinds.size());

  absl::StatusOr<BlockTiming> embedding = timer.Embedding(step);
  if (!embedding.ok()) return embedding.status();
  absl::StatusOr<BlockTiming> head = timer.LmHead(step);
  if (!head.ok()) return head.status();
  out.lower_bound |= embedding->lower_bound || head->lower_bound;

  // Chunk costs.
  const PipelineSpec& pipeline = out.pipeline;
  const int64_t chunks = pipeline.num_chunks();
  PipelineStageCosts costs;
  costs.forward_seconds.assign(static_cast<size_t>(chunks), 0);
  costs.backward_seconds.assign(static_cast<size_t>(chunks), 0);
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t first = step.first_layer_of_chunk(c);
    double fwd = 0, bwd = 0;
    for (int64_t l = first; l < first + step.layers_in_chunk(c); ++l) {
      const LayerCost& lc = layers[static_cast<size_t>(l)];
      fwd += lc.forward + lc.exposed_fsdp_forward + lc.exposed_cp_forward;
      bwd += lc.backward + lc.recompute + lc.exposed_fsdp_backward + lc.exposed_cp_backward;
    }
    if (c == 0) {
      fwd += embedding->forward_seconds;
      bwd += embedding->backward_seconds;
    }
    if (c == chunks - 1) {
      fwd += head->forward_seconds;
      bwd += head->backward_seconds;
    }
    costs.forward_seconds[static_cast<size_t>(c)] = fwd;
    costs.backward_seconds[static_cast<size_t>(c)] = bwd;
  }
  if (!groups.pp_send.empty()) {
    const double act = tokens * d * 2 / (step.parallelism().sequence_parallel() ? tp : 1);
    absl::StatusOr<double> send = Seconds(CollectivePermuteTime(act, groups.pp_send, topology));
    if (!send.ok()) return send.status();
    costs.send_seconds = *send;
  }
  absl::StatusOr<PipelineTimeline> timeline = SimulatePipeline(pipeline, costs);
  if (!timeline.ok()) return timeline.status();
  out.pipeline_seconds = timeline->step_seconds;
  out.analytic_bubble_fraction = AnalyticBubbleFraction(pipeline);

  // Rank 0's work: its chunks, each micro-batch that passes through them.
  StepBreakdown& b = out.breakdown;
  const double m = static_cast<double>(step.microbatches_per_chunk());
  const std::vector<int64_t> rank0_chunks = step.chunks_of_rank(0);
  double rank0_busy = 0;
  double last_backward = 0;  // rank 0's backward of one micro-batch over its chunks
  int64_t rank0_layers = 0;
  for (const int64_t c : rank0_chunks) {
    rank0_busy += m * (costs.forward_seconds[static_cast<size_t>(c)] +
                       costs.backward_seconds[static_cast<size_t>(c)]);
    last_backward += costs.backward_seconds[static_cast<size_t>(c)];
    const int64_t first = step.first_layer_of_chunk(c);
    for (int64_t l = first; l < first + step.layers_in_chunk(c); ++l) {
      const LayerCost& lc = layers[static_cast<size_t>(l)];
      ++rank0_layers;
      b.attention_seconds += m * lc.attention;
      (lc.moe ? b.moe_seconds : b.dense_ffn_seconds) += m * lc.ffn;
      b.recompute_seconds += m * lc.recompute;
      b.exposed_fsdp_seconds += m * (lc.exposed_fsdp_forward + lc.exposed_fsdp_backward);
      b.exposed_cp_seconds += m * (lc.exposed_cp_forward + lc.exposed_cp_backward);
    }
  }
  const bool rank0_has_head =
      std::find(rank0_chunks.begin(), rank0_chunks.end(), chunks - 1) != rank0_chunks.end();
  b.embedding_head_seconds =
      m * (embedding->forward_seconds + embedding->backward_seconds +
           (rank0_has_head ? head->forward_seconds + head->backward_seconds : 0));
  b.pipeline_send_seconds = costs.send_seconds;
  b.bubble_seconds = std::max(0.0, out.pipeline_seconds - rank0_busy);
  out.bubble_fraction = out.pipeline_seconds > 0 ? b.bubble_seconds / out.pipeline_seconds : 0;

  // Rank 0's parameters (elements) on the device, before data-parallel sharding.
  double dense = 0, experts = 0;
  for (const int64_t c : rank0_chunks) {
    const int64_t first = step.first_layer_of_chunk(c);
    for (int64_t l = first; l < first + step.layers_in_chunk(c); ++l) {
      const LayerParams p = ParamsOfLayer(step, l);
      dense += p.dense;
      experts += p.experts;
    }
  }
  const double vocab_params = static_cast<double>(model.proto().vocab_size()) * d / tp;
  dense += vocab_params;  // the embedding
  if (rank0_has_head) {  // the LM head (unless tied) and the final norm
    dense += (model.proto().tied_embeddings() ? 0 : vocab_params) + d;
  }
  const double fsdp = static_cast<double>(step.fsdp());
  const double dense_local = dense / fsdp;
  const double expert_dp_size = static_cast<double>(groups.expert_dp.size());

  // DP gradient reduction (the fsdp shards reduce over dp·cp; experts over their replicas
  // unless FSDP already scattered them).
  const ZeroStage zero = step.parallelism().zero();
  const double grad_bytes = static_cast<double>(prec.grad_bytes());
  double reduce = 0;
  {
    absl::StatusOr<double> t = zero >= ZERO_1
        ? Seconds(ReduceScatterTime(dense_local * grad_bytes, groups.dense_dp, topology))
        : Seconds(AllReduceTime(dense_local * grad_bytes, groups.dense_dp, topology));
    if (!t.ok()) return t.status();
    reduce += *t;
    if (!fsdp_on && experts > 0) {
      absl::StatusOr<double> e = zero >= ZERO_1
          ? Seconds(ReduceScatterTime(experts * grad_bytes, groups.expert_dp, topology))
          : Seconds(AllReduceTime(experts * grad_bytes, groups.expert_dp, topology));
      if (!e.ok()) return e.status();
      reduce += *e;
    }
  }
  const double bucket = rank0_layers > 0 ? reduce / static_cast<double>(rank0_layers) : reduce;
  b.exposed_dp_seconds = reduce > 0 ? std::max(reduce - last_backward, bucket) : 0;

  // The optimizer: the state shard this device updates.
  const double dp_cp = static_cast<double>(step.dp() * step.cp());
  const double dense_state = dense_local / (zero >= ZERO_1 ? dp_cp : 1);
  const double expert_state =
      (fsdp_on || zero >= ZERO_1) ? experts / expert_dp_size : experts;
  absl::StatusOr<double> optimizer = timer.OptimizerSeconds(step, dense_state + expert_state);
  if (!optimizer.ok()) return optimizer.status();
  b.optimizer_seconds = *optimizer;

  // ZeRO >= 1 (not FSDP, which gathers per layer): the updated parameters gathered back.
  if (zero >= ZERO_1 && zero < ZERO_3 && !fsdp_on) {
    const double param_bytes = static_cast<double>(prec.param_bytes());
    absl::StatusOr<double> g = Seconds(AllGatherTime(dense_local * param_bytes, groups.dense_dp, topology));
    if (!g.ok()) return g.status();
    double gather = *g;
    if (experts > 0) {
      absl::StatusOr<double> e =
          Seconds(AllGatherTime(experts * param_bytes, groups.expert_dp, topology));
      if (!e.ok()) return e.status();
      gather += *e;
    }
    const double first_forward = costs.forward_seconds[0];
    const double gbucket = rank0_layers > 0 ? gather / static_cast<double>(rank0_layers) : gather;
    b.exposed_param_gather_seconds = gather > 0 ? std::max(gather - first_forward, gbucket) : 0;
  }

  out.step_seconds = out.pipeline_seconds + b.exposed_dp_seconds + b.optimizer_seconds +
                     b.exposed_param_gather_seconds;
  const double devices = static_cast<double>(step.devices());
  const double step_tokens = static_cast<double>(step.tokens_per_step());
  out.tokens_per_second = step_tokens / out.step_seconds;
  out.tokens_per_second_per_device = out.tokens_per_second / devices;
  out.tokens_per_second_per_chip =
      out.tokens_per_second_per_device *
      static_cast<double>(std::max<int64_t>(1, chip.proto().compute().devices_per_chip()));
  const StepTokens counted{.sequences = step.proto().global_batch(),
                           .seq_len = step.proto().seq_len(),
                           .mtp_layers = step.proto().mtp_layers()};
  out.flops_maxtext = ModelFlopsPerStep(model, counted, FlopConvention::kMaxText);
  out.flops_megatron = ModelFlopsPerStep(model, counted, FlopConvention::kMegatron);
  out.model_tflops_per_device_maxtext = out.flops_maxtext.total / out.step_seconds / devices / 1e12;
  out.model_tflops_per_device_megatron =
      out.flops_megatron.total / out.step_seconds / devices / 1e12;
  const double peak = chip.PeakMatmulFlopsPerSecond(MatmulDtype::kBf16);
  if (peak > 0) {
    out.mfu_maxtext = out.model_tflops_per_device_maxtext * 1e12 / peak;
    out.mfu_megatron = out.model_tflops_per_device_megatron * 1e12 / peak;
  }
  absl::StatusOr<StepMemory> memory = StepHbm(step, chip, options.search_max_micro_batch);
  if (!memory.ok()) return memory.status();
  out.memory = *memory;
  return out;
}

}  // namespace perfsim
