// A validated whole training step (proto/step.proto): the model, the chip, the batch and
// every parallelism, with the derived quantities the step composition needs.
//
//   TrainingStepSpec proto;  // from a textproto, or from flags:
//   PERFSIM_RETURN_IF_ERROR(ApplyParallelismString("TP1 PP4 CP1 VP4 EP64 MBS1 FSDP=0; DP=rest",
//                                                  proto));
//   PERFSIM_ASSIGN_OR_RETURN(TrainingStep step, TrainingStep::FromProto(proto));
//   step.microbatches();        // gradient-accumulation steps m = GBS / (MBS · dp · fsdp)
//   step.layers_per_chunk(c);   // decoder layers of pipeline chunk c
//
// Devices: devices = dp · fsdp · cp · tp · pp. Tokens split over dp · fsdp (batch) and cp
// (sequence); tp splits heads, the FFN width and the vocabulary; pp·vp chunks split the
// layers; ep splits the experts over ep of the dp · fsdp · cp devices.
//
// Errors (InvalidArgument, every problem at once, one per line, each naming the numbers):
//   "parallelism: devices 256 = dp · fsdp · cp · tp · pp: expected 256; got 1 · 1 · 1 · 1 · 3 = 3"
//   "parallelism: tp 3 does not divide the model's 128 query heads"
//   "parallelism: ep 7 does not divide the model's 256 experts"
//   "parallelism: pp · vp = 16 chunks do not divide the model's 61 layers (61 % 16 = 13); set
//    uneven_pipeline to spread them"
//   "global_batch: 100 sequences do not split into micro_batch 1 · dp 64 · fsdp 1 = 64"
#ifndef PERFSIM_SIM_STEP_TRAINING_STEP_H_
#define PERFSIM_SIM_STEP_TRAINING_STEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/step.pb.h"
#include "sim/moe/model_config.h"
#include "sim/step/pipeline_schedule.h"

namespace perfsim {

// Fills proto.parallelism (and micro_batch, where the text gives MBS) from the strings the
// published rows and recipes use, any case, separated by spaces, commas, semicolons or "x":
//   Megatron-Bridge   "TP1 PP4 CP1 VP4 EP64 MBS1 FSDP=0; DP=rest"  (VP- / VPP: virtual stages;
//                     FSDP=0: no FSDP; DP=rest: dp is what the devices leave)
//   NeMo Automodel    "TP1 PP4 CP1 EP64 VP8 FSDP64 MBS1 LBS8 GA1"  (FSDP64: ZeRO-3 over 64)
//   MaxText           "ICI FSDP 32 x TP 4", "ICI FSDP 256"         (axis name, then its size)
// Also "ETP1" (expert tensor parallelism: only 1 is modelled), "DP8", "SP" (sequence
// parallelism). Unknown words are an error naming them; a recipe's prose after "(" is ignored.
absl::Status ApplyParallelismString(absl::string_view text, TrainingStepSpec& proto);

// The sequences' data-parallel split dp · fsdp of an unvalidated spec (dp = 0 read as the devices
// fsdp · cp · tp · pp leave); 0 when the axes do not determine it. MaxText's batch flags need it
// before the batch is known.
int64_t BatchShardsOf(const TrainingStepSpec& proto);

// MaxText's remat_policy names as the modules perfsim recomputes (MaxText's policies name what
// is SAVED, every other value of the layer is recomputed; perfsim's unit is a module):
//   full, save_out_proj, custom        REMAT_FULL (custom: as the published MaxText recipes
//                                       use it, the layer input offloaded, the rest recomputed)
//   save_qkv_proj, qkv_proj_offloaded  core_attn, mlp, moe, layernorm (only q, k, v kept)
//   save_dot_except_mlp(wi)            core_attn, mlp, moe (attention projections kept)
//   save_dot_with_context_except_mlp   mlp, moe (the attention output "context" kept too)
//   minimal, minimal_offloaded         core_attn (every projection kept, the batched attention
//                                       dots recomputed: checkpoint_dots_with_no_batch_dims)
//   minimal_with_context               layernorm (all matmul outputs and the context kept)
//   none                               REMAT_NONE
// Offloading is not timed. InvalidArgument naming the known names for any other.
absl::StatusOr<StepRemat> RematFromMaxTextPolicy(absl::string_view name);

class TrainingStep {
 public:
  // Resolves the model (models/ name or path), fills dp = 0 ("rest") and devices = 0, applies
  // defaults (pp, vp, tp, cp, ep, fsdp, micro_batch: 1; param_bytes 2, master, grad and moment
  // bytes 4: Megatron's bf16 mixed precision), and validates.
  static absl::StatusOr<TrainingStep> FromProto(TrainingStepSpec proto);
  // The same with an already resolved model (tests, sweeps).
  static absl::StatusOr<TrainingStep> FromProto(TrainingStepSpec proto, ModelConfig model);

  const TrainingStepSpec& proto() const { return proto_; }
  const ModelConfig& model() const { return model_; }
  const StepParallelism& parallelism() const { return proto_.parallelism(); }

  int64_t devices() const { return proto_.devices(); }
  int64_t dp() const { return parallelism().dp(); }
  int64_t fsdp() const { return parallelism().fsdp(); }
  int64_t tp() const { return parallelism().tp(); }
  int64_t pp() const { return parallelism().pp(); }
  int64_t vp() const { return parallelism().vp(); }
  int64_t cp() const { return parallelism().cp(); }
  int64_t ep() const { return parallelism().ep(); }
  // Batch shards: dp · fsdp.
  int64_t batch_shards() const { return dp() * fsdp(); }
  // Gradient-accumulation steps (micro-batches per step on one pipeline).
  int64_t microbatches() const {
    return proto_.global_batch() / (proto_.micro_batch() * batch_shards());
  }
  // Tokens one device processes per micro-batch: MBS · S / cp.
  int64_t tokens_per_microbatch() const {
    return proto_.micro_batch() * proto_.seq_len() / cp();
  }
  int64_t tokens_per_step() const { return proto_.global_batch() * proto_.seq_len(); }
  // The pipeline's schedule (PipelineSpec: stages pp, micro-batches, vp, kind).
  PipelineSpec pipeline() const;
  // Decoder layers of chunk c (chunk c = vp_stage · pp + rank, as pipeline_schedule.h): the
  // even split, or with uneven_pipeline the first (layers mod chunks) chunks one more.
  int64_t layers_in_chunk(int64_t chunk) const;
  // The first decoder layer of chunk c.
  int64_t first_layer_of_chunk(int64_t chunk) const;
  // The chunks pipeline rank `rank` holds: v·pp + rank for each virtual stage v; with DualPipe
  // rank and its mirror pp - 1 - rank (pipeline_schedule.h).
  std::vector<int64_t> chunks_of_rank(int64_t rank) const;
  // How many micro-batches pass through each chunk a rank holds: all of them, or half with
  // DualPipe (each direction feeds one of a rank's two chunks).
  int64_t microbatches_per_chunk() const;

 private:
  TrainingStep(TrainingStepSpec proto, ModelConfig model)
      : proto_(std::move(proto)), model_(std::move(model)) {}
  TrainingStepSpec proto_;
  ModelConfig model_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_STEP_TRAINING_STEP_H_
