// A validated view over one MoE model description (proto/model.proto).
//
//   PERFSIM_ASSIGN_OR_RETURN(ModelConfig model, ResolveModel("deepseek_v3"));  // model_registry.h
//   model.d_model();               // D = 7168
//   model.RoutedFlopsPerToken();   // forward: 2·K·3·D·F = 2·8·3·7168·2048 = 704,643,072
//   model.experts_per_group();     // E / num_groups = 256 / 8 = 32
//
// A ModelConfig always satisfies ValidateModelSpec: D, F, E > 0, 1 <= K <= E, the groups divide
// E and can supply K experts, the layer counts add up, every dtype and kind is set. When the
// description has an attention block (every built-in model does): H >= 1, Hkv divides H (MLA:
// Hkv = H), the MLA sizes are present exactly for MLA, the layer-scope pattern fits in the layers
// and has a window exactly when some layer is local.
//
//   model.attention().kind();          // ATTENTION_KIND_MLA
//   model.AttentionParamsPerLayer();   // 187,105,280 (see below)
//   model.IsMoeLayer(2);               // false: DeepSeek-V3's first 3 layers are dense
//
// Defaults are applied before validation, so proto() may differ from the file: an unset
// router.num_groups becomes 1 (no grouping), an unset router.topk_groups becomes num_groups, an
// unset router.routed_scaling_factor becomes 1 and an unset moe_layer_interval becomes 1.
#ifndef PERFSIM_SIM_MOE_MODEL_CONFIG_H_
#define PERFSIM_SIM_MOE_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/model.pb.h"
#include "sim/util/textproto.h"

namespace perfsim {

// HLO spelling of a model dtype: "f32", "bf16", "f16", "f8e4m3fn", "f8e5m2", "s8"; "" if unset.
absl::string_view DTypeSpelling(DType dtype);

// Bytes per element: 4 for f32, 2 for bf16/f16, 1 for fp8/s8; 0 if unset.
int64_t DTypeBytes(DType dtype);

// Checks every field of `spec` and reports ALL problems at once as InvalidArgument, one per line,
// each "file:line:col: field.path: expected X; got Y" when `source` (may be null) knows where the
// field was written. Does not apply defaults; see ModelConfig::FromProto.
absl::Status ValidateModelSpec(const ModelSpec& spec, const TextProtoSource* source);

class ModelConfig {
 public:
  // Applies defaults (see the file comment), then validates.
  static absl::StatusOr<ModelConfig> FromProto(ModelSpec proto,
                                               const TextProtoSource* source = nullptr);
  // Parses textproto `text` (syntax errors as "filename:line:col: ...") and validates it.
  static absl::StatusOr<ModelConfig> FromText(absl::string_view text, absl::string_view filename);
  // Reads and parses the file at `path`.
  static absl::StatusOr<ModelConfig> Load(const std::string& path);

  const ModelSpec& proto() const { return proto_; }
  const std::string& name() const { return proto_.name(); }

  int64_t d_model() const { return proto_.d_model(); }
  int64_t expert_ffn_dim() const { return proto_.expert_ffn_dim(); }
  int64_t num_experts() const { return proto_.num_experts(); }
  int64_t experts_per_token() const { return proto_.experts_per_token(); }
  int64_t num_shared_experts() const { return proto_.num_shared_experts(); }
  int64_t shared_expert_ffn_dim() const { return proto_.shared_expert_ffn_dim(); }
  int64_t num_groups() const { return proto_.router().num_groups(); }
  int64_t topk_groups() const { return proto_.router().topk_groups(); }
  int64_t experts_per_group() const { return num_experts() / num_groups(); }

  // Weight matrices per expert FFN: 3 when gated (wi_0, wi_1, wo), else 2 (wi, wo).
  int64_t MatricesPerExpert() const { return proto_.activation().gated() ? 3 : 2; }
  // Weights of one routed expert (biases excluded): matrices·D·F elements.
  int64_t ParamsPerExpert() const;
  // Routed-expert weights of one MoE layer: E·ParamsPerExpert() elements (shared excluded).
  int64_t RoutedParamsPerMoeLayer() const;
  // Routed-expert weights of the whole model: num_moe_layers·RoutedParamsPerMoeLayer().
  int64_t RoutedParamsTotal() const;

  // Forward FLOPs per token of one MoE layer (a multiply-add counts 2):
  //   routed: 2·K·matrices·D·F;  shared: 2·n_shared·matrices·D·F_shared;  router: 2·D·E.
  int64_t RoutedFlopsPerToken() const;
  int64_t SharedFlopsPerToken() const;
  int64_t RouterFlopsPerToken() const;

  // Bytes of one routed expert's weights in param_dtype: ParamsPerExpert()·DTypeBytes.
  int64_t BytesPerExpert() const { return ParamsPerExpert() * DTypeBytes(proto_.param_dtype()); }

  // --- The rest of the decoder layer (proto/model.proto AttentionSpec, NormSpec). ---

  // False for a description of the MoE block alone; the attention figures below are then 0.
  bool has_attention() const { return proto_.has_attention(); }
  const AttentionSpec& attention() const { return proto_.attention(); }
  bool is_mla() const { return proto_.attention().kind() == ATTENTION_KIND_MLA; }

  // Layer `layer` (0-based) has routed experts: with moe_layer_interval n > 1 when
  // (layer + 1) % n == 0 (Llama 4 Maverick: layers 1, 3, ..., 47), otherwise when
  // layer >= num_dense_layers (DeepSeek-V3: layers 3 to 60).
  bool IsMoeLayer(int64_t layer) const;
  // The scope of layer `layer`: layer_scopes[layer % size]; GLOBAL when the pattern is empty or
  // there is no attention block. GPT-OSS: SLIDING_WINDOW on even layers, GLOBAL on odd ones.
  AttentionScope LayerAttentionScope(int64_t layer) const;
  // Layer `layer` rotates q and k; false on the NoPE layers (Llama 4: 3, 7, ..., 47) and
  // without an attention block.
  bool LayerHasRope(int64_t layer) const;

  // Per token, all heads together, elements: the query (= key) width H·Dh (MLA:
  // H·(qk_nope + qk_rope)), the key/value width of the K/V heads Hkv·Dh (MLA: as the query) and
  // the value width Hkv·Dh (MLA: H·v_head_dim), which the output projection reads.
  int64_t QueryWidth() const;
  int64_t KeyWidth() const;
  int64_t ValueWidth() const;
  // Attention weights of one layer (biases, norms and sinks excluded), elements:
  //   GQA: D·H·Dh (q) + 2·D·Hkv·Dh (k, v) + H·Dh·D (out);
  //   MLA: D·q_lora + q_lora·H·(nope + rope) (q; D·H·(nope + rope) when q_lora = 0)
  //        + D·(kv_lora + rope) + kv_lora·H·(nope + v) (kv) + H·v·D (out).
  // DeepSeek-V3: 48,758,784 + 20,905,984 + 117,440,512 = 187,105,280.
  int64_t AttentionParamsPerLayer() const;

 private:
  explicit ModelConfig(ModelSpec proto) : proto_(std::move(proto)) {}
  ModelSpec proto_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_MOE_MODEL_CONFIG_H_
