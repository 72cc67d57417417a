#include "sim/step/training_step.h"

#include <cctype>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sim/moe/model_registry.h"

namespace perfsim {
namespace {

// Plausibility limits: far beyond any real job, small enough that every product the step
// derives (devices, tokens, tokens times a model dimension) stays inside int64.
constexpr int64_t kMaxAxis = int64_t{1} << 20;
constexpr int64_t kMaxDevices = int64_t{1} << 24;
constexpr int64_t kMaxSequences = int64_t{1} << 24;
constexpr int64_t kMaxSeqLen = int64_t{1} << 24;
constexpr int64_t kMaxTokens = int64_t{1} << 36;
// Micro-batches times pipeline chunks: the (chunk, micro-batch) pairs the schedule simulates
// (a real step has at most a few hundred thousand).
constexpr int64_t kMaxPipelineTasks = int64_t{1} << 20;

// Megatron's --recompute-modules names; MaxText's remat policies map onto them.
constexpr absl::string_view kRecomputeModules[] = {
    "core_attn", "mlp", "moe_act", "moe", "layernorm", "mla_up_proj", "shared_experts"};

bool KnownRecomputeModule(absl::string_view name) {
  for (absl::string_view known : kRecomputeModules) {
    if (name == known) return true;
  }
  return false;
}

struct AxisWord {
  std::string name;   // upper case letters
  std::string value;  // "4", "rest", "-", "" (none given)
};

// "TP1" -> {TP, 1}; "DP=rest" -> {DP, rest}; "VP-" -> {VP, -}; "FSDP" -> {FSDP, ""}.
AxisWord SplitWord(absl::string_view word) {
  size_t i = 0;
  while (i < word.size() && std::isalpha(static_cast<unsigned char>(word[i]))) ++i;
  AxisWord out{absl::AsciiStrToUpper(word.substr(0, i)), std::string(word.substr(i))};
  if (!out.value.empty() && out.value[0] == '=') out.value.erase(0, 1);
  return out;
}

absl::Status SetAxis(const AxisWord& w, TrainingStepSpec& proto) {
  StepParallelism& p = *proto.mutable_parallelism();
  if (w.name == "SP") {
    p.set_sequence_parallel(true);
    return absl::OkStatus();
  }
  int64_t n = 0;
  const bool rest = absl::AsciiStrToLower(w.value) == "rest";
  if (w.value == "-") {
    n = 1;  // "VP-": no virtual stages
  } else if (rest) {
    if (w.name != "DP" && w.name != "DATA") {
      return absl::InvalidArgumentError(
          absl::StrCat("parallelism: expected a number after ", w.name, "; got 'rest' (only DP may be the rest)"));
    }
    n = 0;
  } else if (!absl::SimpleAtoi(w.value, &n) || n < 0 || n > kMaxAxis) {
    return absl::InvalidArgumentError(absl::StrCat("parallelism: expected ", w.name,
                                                   " followed by a count in [0, ", kMaxAxis,
                                                   "]; got '", w.name, w.value, "'"));
  }
  if (w.name == "TP" || w.name == "TENSOR") {
    p.set_tp(n);
  } else if (w.name == "PP" || w.name == "PIPELINE") {
    p.set_pp(n);
  } else if (w.name == "VP" || w.name == "VPP") {
    p.set_vp(n);
  } else if (w.name == "CP" || w.name == "CONTEXT" || w.name == "SEQUENCE") {
    p.set_cp(n);
  } else if (w.name == "EP" || w.name == "EXPERT") {
    p.set_ep(n);
  } else if (w.name == "ETP") {
    if (n > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parallelism: expert tensor parallelism is not modelled: expected ETP1; got ETP", n));
    }
  } else if (w.name == "FSDP") {
    p.set_fsdp(n == 0 ? 1 : n);  // "FSDP=0": off
  } else if (w.name == "DP" || w.name == "DATA") {
    p.set_dp(n);
  } else if (w.name == "MBS") {
    proto.set_micro_batch(n);
  } else if (w.name == "LBS" || w.name == "GA") {
    // Local batch size and accumulation steps follow from GBS, MBS and dp: not stored.
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "parallelism: expected one of TP PP VP VPP CP EP ETP FSDP DP MBS LBS GA SP (or MaxText's "
        "DATA FSDP TENSOR EXPERT PIPELINE SEQUENCE after ICI); got '",
        w.name, w.value, "'"));
  }
  return absl::OkStatus();
}

// a * b, or false when it leaves [0, limit].
bool MulWithin(int64_t a, int64_t b, int64_t limit, int64_t& out) {
  if (__builtin_mul_overflow(a, b, &out)) return false;
  return out >= 0 && out <= limit;
}

void DefaultOne(int64_t value, const std::function<void(int64_t)>& set) {
  if (value == 0) set(1);
}

}  // namespace

absl::Status ApplyParallelismString(absl::string_view text, TrainingStepSpec& proto) {
  const size_t paren = text.find('(');
  if (paren != absl::string_view::npos) text = text.substr(0, paren);
  std::vector<std::string> words;
  for (absl::string_view w : absl::StrSplit(text, absl::ByAnyChar(" \t,;"), absl::SkipEmpty())) {
    if (w == "x" || w == "X" || absl::AsciiStrToUpper(w) == "ICI") continue;
    words.emplace_back(w);
  }
  for (size_t i = 0; i < words.size(); ++i) {
    AxisWord w = SplitWord(words[i]);
    if (w.name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parallelism: expected an axis name such as TP4; got '", words[i], "'"));
    }
    // MaxText: "FSDP 32" (the count is the next word).
    if (w.value.empty() && w.name != "SP" && i + 1 < words.size() &&
        !words[i + 1].empty() && std::isdigit(static_cast<unsigned char>(words[i + 1][0]))) {
      w.value = words[++i];
    }
    if (w.value.empty() && w.name != "SP") {
      return absl::InvalidArgumentError(
          absl::StrCat("parallelism: expected a count after ", w.name, "; got nothing"));
    }
    if (absl::Status s = SetAxis(w, proto); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<StepRemat> RematFromMaxTextPolicy(absl::string_view name) {
  struct Policy {
    absl::string_view name;
    RematPolicy policy;
    std::vector<std::string> recompute;
  };
  static const auto* const kPolicies = new std::vector<Policy>{
      {"none", REMAT_NONE, {}},
      {"full", REMAT_FULL, {}},
      {"save_out_proj", REMAT_FULL, {}},
      {"custom", REMAT_FULL, {}},
      {"save_qkv_proj", REMAT_SELECTIVE, {"core_attn", "mlp", "moe", "layernorm"}},
      {"qkv_proj_offloaded", REMAT_SELECTIVE, {"core_attn", "mlp", "moe", "layernorm"}},
      {"save_dot_except_mlp", REMAT_SELECTIVE, {"core_attn", "mlp", "moe"}},
      {"save_dot_except_mlpwi", REMAT_SELECTIVE, {"core_attn", "mlp", "moe"}},
      {"save_dot_with_context_except_mlp", REMAT_SELECTIVE, {"mlp", "moe"}},
      {"minimal", REMAT_SELECTIVE, {"core_attn"}},
      {"minimal_offloaded", REMAT_SELECTIVE, {"core_attn"}},
      {"minimal_with_context", REMAT_SELECTIVE, {"layernorm"}},
  };
  std::vector<absl::string_view> names;
  for (const Policy& p : *kPolicies) {
    if (p.name == name) {
      StepRemat remat;
      remat.set_policy(p.policy);
      for (const std::string& m : p.recompute) remat.add_recompute(m);
      return remat;
    }
    names.push_back(p.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("remat_policy: expected one of MaxText's ",
                                                 absl::StrJoin(names, ", "), "; got '", name,
                                                 "'"));
}

int64_t BatchShardsOf(const TrainingStepSpec& proto) {
  const StepParallelism& p = proto.parallelism();
  auto axis = [](int64_t v) { return v == 0 ? int64_t{1} : v; };
  const int64_t fsdp = axis(p.fsdp());
  if (fsdp < 1 || fsdp > kMaxAxis) return 0;
  if (p.dp() > 0) return p.dp() <= kMaxAxis ? p.dp() * fsdp : 0;
  int64_t model_parallel = 1;
  for (int64_t v : {fsdp, axis(p.cp()), axis(p.tp()), axis(p.pp())}) {
    if (v < 1 || !MulWithin(model_parallel, v, kMaxDevices, model_parallel)) return 0;
  }
  if (proto.devices() <= 0 || proto.devices() % model_parallel != 0) return 0;
  return proto.devices() / model_parallel * fsdp;
}

absl::StatusOr<TrainingStep> TrainingStep::FromProto(TrainingStepSpec proto) {
  absl::StatusOr<ModelConfig> model = ResolveModel(proto.model());
  if (!model.ok()) return model.status();
  return FromProto(std::move(proto), *std::move(model));
}

absl::StatusOr<TrainingStep> TrainingStep::FromProto(TrainingStepSpec proto,
                                                     ModelConfig model) {
  StepParallelism& p = *proto.mutable_parallelism();
  DefaultOne(p.tp(), [&](int64_t v) { p.set_tp(v); });
  DefaultOne(p.pp(), [&](int64_t v) { p.set_pp(v); });
  DefaultOne(p.vp(), [&](int64_t v) { p.set_vp(v); });
  DefaultOne(p.cp(), [&](int64_t v) { p.set_cp(v); });
  DefaultOne(p.ep(), [&](int64_t v) { p.set_ep(v); });
  DefaultOne(p.fsdp(), [&](int64_t v) { p.set_fsdp(v); });
  DefaultOne(proto.micro_batch(), [&](int64_t v) { proto.set_micro_batch(v); });
  StepPrecision& prec = *proto.mutable_precision();
  if (!prec.has_param_bytes()) prec.set_param_bytes(2);
  if (!prec.has_master_weight_bytes()) prec.set_master_weight_bytes(4);
  if (!prec.has_grad_bytes()) prec.set_grad_bytes(4);
  if (!prec.has_optimizer_state_bytes()) prec.set_optimizer_state_bytes(4);
  if (p.schedule() == PIPELINE_SCHEDULE_UNSPECIFIED) {
    p.set_schedule(p.vp() > 1 ? PIPELINE_SCHEDULE_INTERLEAVED_1F1B : PIPELINE_SCHEDULE_1F1B);
  }

  std::vector<std::string> errors;
  auto range = [&](absl::string_view what, int64_t value, int64_t lo, int64_t hi) {
    if (value < lo || value > hi) {
      errors.push_back(absl::StrCat(what, ": expected a value in [", lo, ", ", hi, "]; got ", value));
      return false;
    }
    return true;
  };
  bool ok = range("global_batch", proto.global_batch(), 1, kMaxSequences);
  ok &= range("seq_len", proto.seq_len(), 1, kMaxSeqLen);
  ok &= range("micro_batch", proto.micro_batch(), 1, kMaxSequences);
  ok &= range("devices", proto.devices(), 0, kMaxDevices);
  ok &= range("parallelism.dp", p.dp(), 0, kMaxAxis);
  for (auto [name, value] : std::initializer_list<std::pair<absl::string_view, int64_t>>{
           {"parallelism.fsdp", p.fsdp()}, {"parallelism.tp", p.tp()},
           {"parallelism.pp", p.pp()},     {"parallelism.vp", p.vp()},
           {"parallelism.cp", p.cp()},     {"parallelism.ep", p.ep()}}) {
    ok &= range(name, value, 1, kMaxAxis);
  }
  ok &= range("mtp_layers", proto.mtp_layers(), 0, 16);
  for (auto [name, value] : std::initializer_list<std::pair<absl::string_view, int64_t>>{
           {"precision.param_bytes", prec.param_bytes()},
           {"precision.grad_bytes", prec.grad_bytes()},
           {"precision.optimizer_state_bytes", prec.optimizer_state_bytes()}}) {
    if (value != 1 && value != 2 && value != 4) {
      errors.push_back(absl::StrCat(name, ": expected 1, 2 or 4 bytes; got ", value));
      ok = false;
    }
  }
  if (prec.master_weight_bytes() != 0 && prec.master_weight_bytes() != 2 &&
      prec.master_weight_bytes() != 4) {
    errors.push_back(absl::StrCat("precision.master_weight_bytes: expected 0 (none), 2 or 4; got ",
                                  prec.master_weight_bytes()));
    ok = false;
  }
  if (!ok) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));

  // Devices: dp · fsdp · cp · tp · pp, dp = 0 meaning the rest.
  int64_t model_parallel = 1;
  const bool fits = MulWithin(p.fsdp(), p.cp(), kMaxDevices, model_parallel) &&
                    MulWithin(model_parallel, p.tp(), kMaxDevices, model_parallel) &&
                    MulWithin(model_parallel, p.pp(), kMaxDevices, model_parallel);
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parallelism: fsdp · cp · tp · pp = ", p.fsdp(), " · ", p.cp(), " · ", p.tp(), " · ",
        p.pp(), ": expected at most ", kMaxDevices, " devices"));
  }
  if (p.dp() == 0) {
    if (proto.devices() == 0 || proto.devices() % model_parallel != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parallelism: dp = rest needs devices divisible by fsdp · cp · tp · pp = ",
          model_parallel, "; got devices ", proto.devices()));
    }
    p.set_dp(proto.devices() / model_parallel);
  }
  int64_t total = 0;
  if (!MulWithin(model_parallel, p.dp(), kMaxDevices, total)) {
    return absl::InvalidArgumentError(absl::StrCat("parallelism: dp · fsdp · cp · tp · pp: expected at most ",
                                                   kMaxDevices, " devices; got dp ", p.dp(),
                                                   " times ", model_parallel));
  }
  if (proto.devices() == 0) proto.set_devices(total);
  if (total != proto.devices()) {
    errors.push_back(absl::StrCat("parallelism: devices ", proto.devices(),
                                  " = dp · fsdp · cp · tp · pp: expected ", proto.devices(),
                                  "; got ", p.dp(), " · ", p.fsdp(), " · ", p.cp(), " · ",
                                  p.tp(), " · ", p.pp(), " = ", total));
  }

  // The model's dimensions.
  const ModelSpec& m = model.proto();
  if (model.has_attention()) {
    const int64_t heads = model.attention().num_query_heads();
    const int64_t kv = model.is_mla() ? heads : model.attention().num_kv_heads();
    if (heads % p.tp() != 0) {
      errors.push_back(absl::StrCat("parallelism: tp ", p.tp(), " does not divide the model's ",
                                    heads, " query heads"));
    } else if (kv % p.tp() != 0) {
      errors.push_back(absl::StrCat("parallelism: tp ", p.tp(), " does not divide the model's ",
                                    kv, " key/value heads"));
    }
  }
  if (m.dense_ffn_dim() % p.tp() != 0) {
    errors.push_back(absl::StrCat("parallelism: tp ", p.tp(),
                                  " does not divide the dense FFN width ", m.dense_ffn_dim()));
  }
  if (model.expert_ffn_dim() % p.tp() != 0) {
    errors.push_back(absl::StrCat("parallelism: tp ", p.tp(),
                                  " does not divide the expert FFN width ",
                                  model.expert_ffn_dim()));
  }
  if (model.num_experts() % p.ep() != 0) {
    errors.push_back(absl::StrCat("parallelism: ep ", p.ep(), " does not divide the model's ",
                                  model.num_experts(), " experts"));
  }
  const int64_t ep_pool = p.dp() * p.fsdp() * p.cp();
  if (ep_pool % p.ep() != 0) {
    errors.push_back(absl::StrCat("parallelism: ep ", p.ep(),
                                  " does not divide the data-parallel devices dp · fsdp · cp = ",
                                  p.dp(), " · ", p.fsdp(), " · ", p.cp(), " = ", ep_pool));
  }
  const int64_t chunks = p.pp() * p.vp();
  if (chunks > m.num_layers()) {
    errors.push_back(absl::StrCat("parallelism: pp · vp = ", chunks, " chunks exceed the model's ",
                                  m.num_layers(), " layers"));
  } else if (m.num_layers() % chunks != 0 && !p.uneven_pipeline()) {
    errors.push_back(absl::StrCat("parallelism: pp · vp = ", chunks,
                                  " chunks do not divide the model's ", m.num_layers(),
                                  " layers (", m.num_layers(), " % ", chunks, " = ",
                                  m.num_layers() % chunks, "); set uneven_pipeline to spread them"));
  }
  const int64_t per_step = proto.micro_batch() * p.dp() * p.fsdp();
  if (proto.global_batch() % per_step != 0) {
    errors.push_back(absl::StrCat("global_batch: ", proto.global_batch(),
                                  " sequences do not split into micro_batch ",
                                  proto.micro_batch(), " · dp ", p.dp(), " · fsdp ", p.fsdp(),
                                  " = ", per_step));
  } else if ((proto.global_batch() / per_step) * chunks > kMaxPipelineTasks) {
    // The pipeline schedule is simulated task by task.
    errors.push_back(absl::StrCat("micro-batches · pp · vp = ", proto.global_batch() / per_step,
                                  " · ", chunks, ": expected at most ", kMaxPipelineTasks,
                                  " (a larger micro_batch, or fewer chunks)"));
  }
  if (p.cp() > 1 && proto.seq_len() % (2 * p.cp()) != 0) {
    errors.push_back(absl::StrCat("seq_len: ", proto.seq_len(),
                                  " does not split into 2 · cp = ", 2 * p.cp(),
                                  " load-balanced causal chunks"));
  }
  int64_t tokens = 0;
  if (!MulWithin(proto.global_batch(), proto.seq_len(), kMaxTokens, tokens)) {
    errors.push_back(absl::StrCat("global_batch · seq_len = ", proto.global_batch(), " · ",
                                  proto.seq_len(), ": expected at most ", kMaxTokens, " tokens"));
  }
  const StepRemat& remat = proto.remat();
  for (const std::string& name : remat.recompute()) {
    if (!KnownRecomputeModule(name)) {
      errors.push_back(absl::StrCat(
          "remat.recompute: expected one of core_attn, mlp, moe_act, moe, layernorm, "
          "mla_up_proj, shared_experts; got '",
          name, "'"));
    }
  }
  if (remat.policy() == REMAT_SELECTIVE && remat.recompute().empty()) {
    errors.push_back("remat: REMAT_SELECTIVE expected at least one recompute module; got none");
  }
  if (remat.policy() != REMAT_SELECTIVE && !remat.recompute().empty()) {
    errors.push_back("remat.recompute: expected only with REMAT_SELECTIVE");
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));

  TrainingStep step(std::move(proto), std::move(model));
  if (absl::Status s = step.pipeline().Validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("parallelism: ", s.message()));
  }
  return step;
}

PipelineSpec TrainingStep::pipeline() const {
  PipelineSpec spec;
  spec.stages = pp();
  spec.virtual_stages = vp();
  spec.microbatches = microbatches();
  switch (parallelism().schedule()) {
    case PIPELINE_SCHEDULE_GPIPE:
      spec.kind = PipelineScheduleKind::kGpipe;
      break;
    case PIPELINE_SCHEDULE_INTERLEAVED_1F1B:
      spec.kind = PipelineScheduleKind::kInterleavedOneFOneB;
      break;
    case PIPELINE_SCHEDULE_DUALPIPE:
      spec.kind = PipelineScheduleKind::kDualPipe;
      break;
    case PIPELINE_SCHEDULE_1F1B:
    case PIPELINE_SCHEDULE_UNSPECIFIED:
    default:
      spec.kind = PipelineScheduleKind::kOneFOneB;
      break;
  }
  return spec;
}

int64_t TrainingStep::layers_in_chunk(int64_t chunk) const {
  const int64_t chunks = pp() * vp();
  const int64_t layers = model_.proto().num_layers();
  return layers / chunks + (chunk < layers % chunks ? 1 : 0);
}

std::vector<int64_t> TrainingStep::chunks_of_rank(int64_t rank) const {
  if (pipeline().kind == PipelineScheduleKind::kDualPipe) return {rank, pp() - 1 - rank};
  std::vector<int64_t> chunks;
  for (int64_t v = 0; v < vp(); ++v) chunks.push_back(v * pp() + rank);
  return chunks;
}

int64_t TrainingStep::microbatches_per_chunk() const {
  return pipeline().kind == PipelineScheduleKind::kDualPipe ? microbatches() / 2 : microbatches();
}

int64_t TrainingStep::first_layer_of_chunk(int64_t chunk) const {
  int64_t first = 0;
  for (int64_t c = 0; c < chunk; ++c) first += layers_in_chunk(c);
  return first;
}

}  // namespace perfsim
