#include "sim/moe/model_config.h"

#include <utility>

#include "sim/util/status.h"

namespace perfsim {
namespace {

void ApplyDefaults(ModelSpec& spec) {
  RouterSpec& router = *spec.mutable_router();
  if (router.num_groups() == 0) router.set_num_groups(1);
  if (router.topk_groups() == 0) router.set_topk_groups(router.num_groups());
  if (!router.has_routed_scaling_factor()) router.set_routed_scaling_factor(1.0);
  if (spec.moe_layer_interval() == 0) spec.set_moe_layer_interval(1);
}

}  // namespace

absl::string_view DTypeSpelling(DType dtype) {
  switch (dtype) {
    case DTYPE_F32:
      return "f32";
    case DTYPE_BF16:
      return "bf16";
    case DTYPE_F16:
      return "f16";
    case DTYPE_F8E4M3FN:
      return "f8e4m3fn";
    case DTYPE_F8E5M2:
      return "f8e5m2";
    case DTYPE_S8:
      return "s8";
    case DTYPE_UNSPECIFIED:
    case DType_INT_MIN_SENTINEL_DO_NOT_USE_:
    case DType_INT_MAX_SENTINEL_DO_NOT_USE_:
      break;
  }
  return "";
}

int64_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DTYPE_F32:
      return 4;
    case DTYPE_BF16:
    case DTYPE_F16:
      return 2;
    case DTYPE_F8E4M3FN:
    case DTYPE_F8E5M2:
    case DTYPE_S8:
      return 1;
    case DTYPE_UNSPECIFIED:
    case DType_INT_MIN_SENTINEL_DO_NOT_USE_:
    case DType_INT_MAX_SENTINEL_DO_NOT_USE_:
      break;
  }
  return 0;
}

absl::StatusOr<ModelConfig> ModelConfig::FromProto(ModelSpec proto, const TextProtoSource* source) {
  ApplyDefaults(proto);
  PERFSIM_RETURN_IF_ERROR(ValidateModelSpec(proto, source));
  return ModelConfig(std::move(proto));
}

absl::StatusOr<ModelConfig> ModelConfig::FromText(absl::string_view text,
                                                  absl::string_view filename) {
  ModelSpec proto;
  PERFSIM_ASSIGN_OR_RETURN(TextProtoSource source, ParseTextProto(text, filename, &proto));
  return FromProto(std::move(proto), &source);
}

absl::StatusOr<ModelConfig> ModelConfig::Load(const std::string& path) {
  PERFSIM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return FromText(text, path);
}

int64_t ModelConfig::ParamsPerExpert() const {
  return MatricesPerExpert() * d_model() * expert_ffn_dim();
}

int64_t ModelConfig::RoutedParamsPerMoeLayer() const { return num_experts() * ParamsPerExpert(); }

int64_t ModelConfig::RoutedParamsTotal() const {
  return proto_.num_moe_layers() * RoutedParamsPerMoeLayer();
}

int64_t ModelConfig::RoutedFlopsPerToken() const {
  return 2 * experts_per_token() * ParamsPerExpert();
}

int64_t ModelConfig::SharedFlopsPerToken() const {
  return 2 * num_shared_experts() * MatricesPerExpert() * d_model() * shared_expert_ffn_dim();
}

int64_t ModelConfig::RouterFlopsPerToken() const { return 2 * d_model() * num_experts(); }

bool ModelConfig::IsMoeLayer(int64_t layer) const {
  if (layer < 0 || layer >= proto_.num_layers()) return false;
  const int64_t interval = proto_.moe_layer_interval();
  if (interval > 1) return (layer + 1) % interval == 0;
  return layer >= proto_.num_dense_layers();
}

AttentionScope ModelConfig::LayerAttentionScope(int64_t layer) const {
  const AttentionSpec& a = proto_.attention();
  if (a.layer_scopes_size() == 0 || layer < 0) return ATTENTION_SCOPE_GLOBAL;
  return a.layer_scopes(static_cast<int>(layer % a.layer_scopes_size()));
}

bool ModelConfig::LayerHasRope(int64_t layer) const {
  if (!has_attention() || layer < 0) return false;
  const int64_t interval = proto_.attention().nope_layer_interval();
  return interval == 0 || (layer + 1) % interval != 0;
}

int64_t ModelConfig::QueryWidth() const {
  const AttentionSpec& a = proto_.attention();
  if (is_mla())
    return a.num_query_heads() * (a.mla().qk_nope_head_dim() + a.mla().qk_rope_head_dim());
  return a.num_query_heads() * a.head_dim();
}

int64_t ModelConfig::KeyWidth() const {
  const AttentionSpec& a = proto_.attention();
  // MLA decompresses one key per head (its rope part shared by all heads, then broadcast).
  if (is_mla()) return QueryWidth();
  return a.num_kv_heads() * a.head_dim();
}

int64_t ModelConfig::ValueWidth() const {
  const AttentionSpec& a = proto_.attention();
  if (is_mla()) return a.num_query_heads() * a.mla().v_head_dim();
  return a.num_kv_heads() * a.head_dim();
}

int64_t ModelConfig::AttentionParamsPerLayer() const {
  if (!has_attention()) return 0;
  const AttentionSpec& a = proto_.attention();
  const int64_t d = d_model();
  const int64_t heads = a.num_query_heads();
  if (!is_mla()) {
    // q and out are D x H·Dh; k and v are D x Hkv·Dh.
    return 2 * d * QueryWidth() + d * (KeyWidth() + ValueWidth());
  }
  const MlaSpec& m = a.mla();
  const int64_t q_head = m.qk_nope_head_dim() + m.qk_rope_head_dim();
  const int64_t q = m.q_lora_rank() == 0 ? d * heads * q_head
                                         : d * m.q_lora_rank() + m.q_lora_rank() * heads * q_head;
  // wkv_a: D -> kv_lora + rope (the latent, the shared rotary key); wkv_b: kv_lora -> H·(nope + v).
  const int64_t kv = d * (m.kv_lora_rank() + m.qk_rope_head_dim()) +
                     m.kv_lora_rank() * heads * (m.qk_nope_head_dim() + m.v_head_dim());
  return q + kv + heads * m.v_head_dim() * d;
}

}  // namespace perfsim
