#include "sim/validate/block_validate.h"

#include "sim/validate/validate_internal.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sim/interp/interpreter.h"
#include "sim/lowering/attention.h"
#include "sim/lowering/dense_layers.h"
#include "sim/util/status.h"

namespace perfsim {

absl::string_view BlockName(Block block) {
  switch (block) {
    case Block::kAttention:
      return "attention";
    case Block::kDenseFfn:
      return "dense_ffn";
    case Block::kEmbedding:
      return "embedding";
    case Block::kLmHead:
      return "lm_head";
  }
  return "?";
}

namespace {

std::vector<Block> AllBlocks() {
  return {Block::kAttention, Block::kDenseFfn, Block::kEmbedding, Block::kLmHead};
}

// The caps of SmallSizesOf (block_validate.h): small enough that the interpreter runs a case
// in milliseconds, large enough that every dimension is split by tp = 8 (F = 64, V = 96) and
// D, F, V and H·Dh differ, so a swapped axis fails a shape check.
constexpr int64_t kMaxDModel = 64;
constexpr int64_t kMaxHeadDim = 8;
constexpr int64_t kMaxLoraRank = 16;
constexpr int64_t kMaxMlaNope = 8;
constexpr int64_t kMaxMlaRope = 4;
constexpr int64_t kMaxMlaV = 8;
constexpr int64_t kMaxFfnDim = 64;
constexpr int64_t kMaxVocab = 96;

// Caps `value` at `cap`, noting "name old -> new" when it changes.
int64_t Cap(int64_t value, int64_t cap, absl::string_view name, std::vector<std::string>* notes) {
  if (value <= cap) return value;
  notes->push_back(absl::StrCat(name, " ", value, " -> ", cap));
  return cap;
}

// The inputs of `layer` (its global shapes), header comment's distributions. Token ids and
// labels are drawn below V, the size of the "VD" table's first dimension.
std::vector<Literal> MakeBlockInputs(const LoweredLayer& layer, uint64_t seed) {
  int64_t vocab = 1;
  for (const TensorSpec& t : layer.parameters) {
    if (t.dims == "VD") vocab = t.global_dims[0];
  }
  SplitMixStream stream(seed);
  std::vector<Literal> inputs;
  for (const TensorSpec& t : layer.parameters) {
    Literal lit(Shape::Array(t.type, t.global_dims));
    const int64_t n = lit.element_count();
    if (IsInteger(t.type)) {
      for (int64_t i = 0; i < n; ++i)
        lit.SetFromDouble(i, static_cast<double>(stream.Below(vocab)));
    } else if (t.role != Annotation::ROLE_TRAINED_WEIGHT) {
      for (int64_t i = 0; i < n; ++i) lit.SetFromDouble(i, stream.Uniform());
    } else if (t.global_dims.size() == 1) {
      for (int64_t i = 0; i < n; ++i) lit.SetFromDouble(i, 1.0 + 0.25 * stream.Uniform());
    } else {
      const double scale = 1.0 / std::sqrt(static_cast<double>(t.global_dims[0]));
      for (int64_t i = 0; i < n; ++i) lit.SetFromDouble(i, scale * stream.Uniform());
    }
    inputs.push_back(std::move(lit));
  }
  return inputs;
}

// Device `device`'s block of a tensor laid out as `t` on `tp` devices, in the reference's
// global shape `dims`: per dimension its start and size. A dimension split over tp but smaller
// than tp (K/V heads fewer than tp) holds one element per device, element i on the tp/n
// consecutive devices from i·tp/n (attention.h; the lowering declares that dimension tp wide).
void TpBlock(const TensorSpec& t, const std::vector<int64_t>& dims, int64_t tp, int64_t device,
             std::vector<int64_t>* start, std::vector<int64_t>* size) {
  start->assign(dims.size(), 0);
  *size = dims;
  for (size_t i = 0; i < dims.size() && i < t.split.size(); ++i) {
    if (t.split[i].empty()) continue;
    const int64_t n = dims[i];
    if (n < tp) {
      (*start)[i] = device / (tp / n);
      (*size)[i] = 1;
    } else {
      (*size)[i] = n / tp;
      (*start)[i] = device * (n / tp);
    }
  }
}

// Whether the sharded lowering's global shape of `t` is the reference's `dims`, but for a
// replicated dimension declared tp wide (TpBlock).
bool SameGlobalShape(const TensorSpec& t, const std::vector<int64_t>& dims, int64_t tp) {
  if (t.global_dims.size() != dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i) {
    const bool split = i < t.split.size() && !t.split[i].empty();
    const bool replicated = split && dims[i] < tp && tp % dims[i] == 0 && t.global_dims[i] == tp;
    if (t.global_dims[i] != dims[i] && !replicated) return false;
  }
  return true;
}

// Calls fn(local_linear, global_linear) for every element of the block (row major).
template <typename Fn>
void ForEachInBlock(const std::vector<int64_t>& global_dims, const std::vector<int64_t>& start,
                    const std::vector<int64_t>& size, Fn fn) {
  int64_t count = 1;
  for (int64_t s : size) count *= s;
  std::vector<int64_t> index(size.size(), 0);
  for (int64_t local = 0; local < count; ++local) {
    int64_t global = 0;
    for (size_t d = 0; d < size.size(); ++d) global = global * global_dims[d] + start[d] + index[d];
    fn(local, global);
    for (int64_t d = static_cast<int64_t>(size.size()) - 1; d >= 0; --d) {
      if (++index[d] < size[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    index[d] = linear % dims[d];
    linear /= dims[d];
  }
  return index;
}

Literal ShardFor(const Literal& global, const TensorSpec& t, int64_t tp, int64_t device) {
  std::vector<int64_t> start, size;
  TpBlock(t, global.shape().dimensions(), tp, device, &start, &size);
  Literal local(Shape::Array(t.type, size));
  ForEachInBlock(global.shape().dimensions(), start, size,
                 [&](int64_t l, int64_t g) { local.SetFromDouble(l, global.GetAsDouble(g)); });
  return local;
}

int FindByName(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

BlockValidationResult Failed(std::string message) {
  BlockValidationResult r;
  r.message = std::move(message);
  return r;
}

// `sharded` on tp devices against the reference's outputs `want` (on `global` inputs).
BlockValidationResult CompareWithReference(const LoweredLayer& reference,
                                           const std::vector<Literal>& global,
                                           const std::vector<Literal>& want,
                                           const LoweredLayer& sharded, int64_t tp,
                                           double tolerance, int64_t memory_budget_bytes) {
  std::vector<std::vector<Literal>> inputs(tp);
  for (const TensorSpec& p : sharded.parameters) {
    const int i = FindByName(reference.parameters, p.name);
    if (i < 0 || !SameGlobalShape(p, reference.parameters[i].global_dims, tp)) {
      return Failed(
          absl::StrCat("parameter ", p.name, ": expected the reference's global shape [",
                       i < 0 ? "absent" : absl::StrJoin(reference.parameters[i].global_dims, ","),
                       "]; got [", absl::StrJoin(p.global_dims, ","), "]"));
    }
    for (int64_t d = 0; d < tp; ++d) inputs[d].push_back(ShardFor(global[i], p, tp, d));
  }
  InterpreterOptions options;
  options.num_devices = tp;
  options.memory_budget_bytes = memory_budget_bytes;
  absl::StatusOr<RunResult> run = RunModule(*sharded.module, std::move(inputs), options);
  if (!run.ok())
    return Failed(absl::StrCat("the tp = ", tp, " run failed: ", run.status().message()));

  BlockValidationResult r;
  r.tp = tp;
  r.tolerance = tolerance;
  r.pass = true;
  for (const TensorSpec& want_spec : reference.outputs) {
    if (FindByName(sharded.outputs, want_spec.name) < 0) {
      r.pass = false;
      r.message = absl::StrCat("output ", want_spec.name, ": expected it from the tp = ", tp,
                               " lowering; got none");
      return r;
    }
  }
  for (size_t o = 0; o < sharded.outputs.size(); ++o) {
    const TensorSpec& t = sharded.outputs[o];
    const int ref = FindByName(reference.outputs, t.name);
    if (ref < 0 || !SameGlobalShape(t, reference.outputs[ref].global_dims, tp)) {
      r.pass = false;
      r.message = absl::StrCat("output ", t.name,
                               ": expected one of the reference's outputs, "
                               "shaped alike; got [",
                               absl::StrJoin(t.global_dims, ","), "]");
      return r;
    }
    const Literal& full = want[ref];
    double max_want = 0;
    for (int64_t i = 0; i < full.element_count(); ++i) {
      max_want = std::max(max_want, std::fabs(full.GetAsDouble(i)));
    }
    TensorError e{.tensor = t.name};
    double max_diff = -1;
    int64_t worst = 0, worst_device = 0;
    for (int64_t d = 0; d < tp; ++d) {
      std::vector<int64_t> start, size;
      TpBlock(t, reference.outputs[ref].global_dims, tp, d, &start, &size);
      const Literal& got = run->outputs[d][o];
      if (got.shape().dimensions() != size) {
        r.pass = false;
        r.message = absl::StrCat(t.name, " on device ", d, ": expected a shard of shape [",
                                 absl::StrJoin(size, ","), "]; got ", got.shape().ToString(false));
        return r;
      }
      ForEachInBlock(reference.outputs[ref].global_dims, start, size, [&](int64_t l, int64_t g) {
        const double gv = got.GetAsDouble(l), wv = full.GetAsDouble(g);
        double diff = std::fabs(gv - wv);
        if (!std::isfinite(gv) && std::isfinite(wv)) {
          diff = std::numeric_limits<double>::infinity();
          ++e.non_finite;
        }
        if (diff > max_diff) {
          max_diff = diff, worst = g, worst_device = d;
          e.got = gv, e.want = wv;
        }
      });
    }
    e.index = Unravel(worst, reference.outputs[ref].global_dims);
    e.max_rel_error = max_diff <= 0 ? 0 : max_diff / std::max(max_want, 1e-30);
    if ((e.non_finite > 0 || !(e.max_rel_error <= tolerance)) && r.pass) {
      r.pass = false;
      r.message = absl::StrFormat(
          "%s: relative error %.2e > %.0e at [%s] on device %d of %d: got %.9g, want %.9g "
          "(max |want| %.4g)%s",
          t.name, e.max_rel_error, tolerance, absl::StrJoin(e.index, ","), worst_device, tp, e.got,
          e.want, max_want,
          e.non_finite > 0 ? absl::StrCat("; ", e.non_finite, " non-finite") : "");
    }
    r.errors.push_back(std::move(e));
  }
  return r;
}

// The reference's run on one device.
absl::StatusOr<std::vector<Literal>> RunReference(const LoweredLayer& reference,
                                                  const std::vector<Literal>& global,
                                                  int64_t memory_budget_bytes) {
  InterpreterOptions options;
  options.memory_budget_bytes = memory_budget_bytes;
  PERFSIM_ASSIGN_OR_RETURN(RunResult run, RunModule(*reference.module, {global}, options));
  return std::move(run.outputs[0]);
}

// One block (or attention layer kind) to validate: how to lower it, and why a tp cannot be
// used ("" when it can).
struct BlockUnderTest {
  Block block;
  std::string layer_kind;
  std::function<absl::StatusOr<LoweredLayer>(int64_t tp, bool sp, Phase phase)> lower;
  std::function<std::string(int64_t tp, bool sp)> refusal;
  bool sequence_parallel = false;  // the block has a sequence-parallel form
  std::string note;                // f32 and the scaling, for passing cases
  std::string absent;              // --block all: why the model has no such block
};

std::string ScopeName(AttentionScope scope) {
  switch (scope) {
    case ATTENTION_SCOPE_SLIDING_WINDOW:
      return "sliding_window";
    case ATTENTION_SCOPE_CHUNKED:
      return "chunked";
    case ATTENTION_SCOPE_GLOBAL:
    case ATTENTION_SCOPE_UNSPECIFIED:
    case AttentionScope_INT_MIN_SENTINEL_DO_NOT_USE_:
    case AttentionScope_INT_MAX_SENTINEL_DO_NOT_USE_:
      return "global";
  }
  return "global";
}

std::string NotDividing(absl::string_view what, int64_t n, int64_t tp) {
  return n % tp == 0 ? ""
                     : absl::StrCat("tp: expected a divisor of ", what, " = ", n, "; got ", tp);
}

// The blocks of `options` the model has, or InvalidArgument naming one it lacks.
absl::StatusOr<std::vector<BlockUnderTest>> BlocksOf(const BlockValidationOptions& options,
                                                     const std::vector<Block>& blocks) {
  const ModelConfig& model = options.model;
  const SmallBlockSizes small = SmallSizesOf(model, options.seq);
  // "f32", and what was scaled down for this block.
  auto note = [&small](const std::vector<std::string>& block_notes, absl::string_view kept) {
    std::vector<std::string> all = small.d_model_notes;
    all.insert(all.end(), block_notes.begin(), block_notes.end());
    return all.empty() ? std::string("f32")
                       : absl::StrCat("f32, scaled down: ", absl::StrJoin(all, ", "), kept);
  };
  // A global layer has no window: its note leaves the window's cap out.
  auto attention_notes = [&small](AttentionScope scope) {
    std::vector<std::string> notes;
    for (const std::string& n : small.attention_notes) {
      const bool window = absl::StartsWith(n, "window ");
      if (!window || scope == ATTENTION_SCOPE_SLIDING_WINDOW || scope == ATTENTION_SCOPE_CHUNKED) {
        notes.push_back(n);
      }
    }
    return notes;
  };
  const bool one = blocks.size() == 1;
  std::vector<BlockUnderTest> out;
  auto lacks = [&](Block b, absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--block ", BlockName(b), ": ", model.name(), " has no ", why));
  };
  for (Block b : blocks) {
    switch (b) {
      case Block::kAttention: {
        if (!model.has_attention()) return lacks(b, "attention");
        const bool mla = model.attention().kind() == ATTENTION_KIND_MLA;
        std::set<std::string> seen;
        const int64_t layers = std::max<int64_t>(1, model.proto().num_layers());
        for (int64_t l = 0; l < layers; ++l) {
          const std::string kind =
              absl::StrCat(mla ? "mla " : "", ScopeName(model.LayerAttentionScope(l)),
                           model.LayerHasRope(l) ? "+rope" : "+nope");
          if (!seen.insert(kind).second) continue;
          auto spec_of = [&model, small, batch = options.batch, seq = options.seq, l](
                             int64_t tp, bool sp, Phase phase) {
            AttentionLoweringSpec spec = AttentionLoweringSpec::FromModel(model, l, batch, seq);
            spec.attention = small.attention;
            spec.d_model = small.d_model;
            spec.dtype = PrimitiveType::kF32;
            spec.tp = tp;
            spec.sequence_parallel = sp;
            spec.phase = phase;
            return spec;
          };
          out.push_back(BlockUnderTest{
              .block = b,
              .layer_kind = kind,
              .lower = [spec_of](int64_t tp, bool sp,
                                 Phase phase) { return LowerAttention(spec_of(tp, sp, phase)); },
              .refusal = [spec_of](int64_t tp, bool sp) -> std::string {
                absl::Status s = spec_of(tp, sp, Phase::kForward).Validate();
                return s.ok() ? "" : std::string(s.message());
              },
              .sequence_parallel = true,
              .note = note(attention_notes(model.LayerAttentionScope(l)),
                           "; heads, masks and rope kept")});
        }
        break;
      }
      case Block::kDenseFfn: {
        if (small.ffn_dim == 0) {
          if (one) return lacks(b, "dense FFN (dense_ffn_dim 0)");
          out.push_back({.block = b, .absent = "the model has no dense FFN (dense_ffn_dim 0)"});
          continue;
        }
        out.push_back(BlockUnderTest{
            .block = b,
            .lower =
                [&model, small, batch = options.batch, seq = options.seq](int64_t tp, bool,
                                                                          Phase phase) {
                  DenseFfnSpec spec = DenseFfnSpec::FromModel(model, batch, seq, tp, phase);
                  spec.d_model = small.d_model;
                  spec.ffn_dim = small.ffn_dim;
                  spec.activation_type = spec.param_type = PrimitiveType::kF32;
                  return LowerDenseFfn(spec);
                },
            .refusal = [small](int64_t tp, bool) { return NotDividing("F", small.ffn_dim, tp); },
            .note = note(small.ffn_notes, "")});
        break;
      }
      case Block::kEmbedding:
      case Block::kLmHead: {
        if (small.vocab_size == 0) {
          if (one) {
            return lacks(
                b, b == Block::kEmbedding ? "embedding (vocab_size 0)" : "LM head (vocab_size 0)");
          }
          out.push_back({.block = b, .absent = "the model has no vocabulary (vocab_size 0)"});
          continue;
        }
        out.push_back(BlockUnderTest{
            .block = b,
            .lower = [&model, small, batch = options.batch, seq = options.seq, b](
                         int64_t tp, bool, Phase phase) -> absl::StatusOr<LoweredLayer> {
              if (b == Block::kEmbedding) {
                EmbeddingSpec spec = EmbeddingSpec::FromModel(model, batch, seq, tp, phase);
                spec.d_model = small.d_model;
                spec.vocab_size = small.vocab_size;
                spec.activation_type = spec.param_type = PrimitiveType::kF32;
                return LowerEmbedding(spec);
              }
              LmHeadSpec spec = LmHeadSpec::FromModel(model, batch, seq, tp, phase);
              spec.d_model = small.d_model;
              spec.vocab_size = small.vocab_size;
              spec.activation_type = spec.param_type = PrimitiveType::kF32;
              return LowerLmHead(spec);
            },
            .refusal = [small](int64_t tp, bool) { return NotDividing("V", small.vocab_size, tp); },
            .note = note(small.vocab_notes, "")});
        break;
      }
    }
  }
  if (std::all_of(out.begin(), out.end(),
                  [](const BlockUnderTest& b) { return !b.absent.empty(); })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--block: expected a block that ", model.name(), " has; got none of ",
        absl::StrJoin(blocks, ", ",
                      [](std::string* s, Block b) { absl::StrAppend(s, BlockName(b)); })));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Block>> ParseBlocks(absl::string_view text) {
  if (text == "all") return AllBlocks();
  std::vector<std::string> names;
  for (Block b : AllBlocks()) {
    if (BlockName(b) == text) return std::vector<Block>{b};
    names.emplace_back(BlockName(b));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--block: expected ", absl::StrJoin(names, ", "), " or all; got '", text, "'"));
}

SmallBlockSizes SmallSizesOf(const ModelConfig& model, int64_t seq) {
  const ModelSpec& m = model.proto();
  SmallBlockSizes s;
  s.d_model = Cap(m.d_model(), kMaxDModel, "D", &s.d_model_notes);
  s.ffn_dim = Cap(m.dense_ffn_dim(), kMaxFfnDim, "F", &s.ffn_notes);
  s.vocab_size = Cap(m.vocab_size(), kMaxVocab, "V", &s.vocab_notes);
  if (!model.has_attention()) return s;
  std::vector<std::string>* notes = &s.attention_notes;
  AttentionSpec& a = s.attention = model.attention();
  if (a.kind() == ATTENTION_KIND_MLA) {
    MlaSpec* mla = a.mutable_mla();
    mla->set_q_lora_rank(Cap(mla->q_lora_rank(), kMaxLoraRank, "q_lora_rank", notes));
    mla->set_kv_lora_rank(Cap(mla->kv_lora_rank(), kMaxLoraRank, "kv_lora_rank", notes));
    mla->set_qk_nope_head_dim(Cap(mla->qk_nope_head_dim(), kMaxMlaNope, "qk_nope", notes));
    mla->set_qk_rope_head_dim(Cap(mla->qk_rope_head_dim(), kMaxMlaRope, "qk_rope", notes));
    mla->set_v_head_dim(Cap(mla->v_head_dim(), kMaxMlaV, "v_head_dim", notes));
  } else {
    a.set_head_dim(Cap(a.head_dim(), kMaxHeadDim, "head_dim", notes));
  }
  // A window at least S would make the local mask the causal one: keep it a quarter of S.
  if (a.local_window_tokens() > 0) {
    a.set_local_window_tokens(
        Cap(a.local_window_tokens(), std::max<int64_t>(1, seq / 4), "window", notes));
  }
  return s;
}

BlockValidationResult CompareBlockLowerings(const LoweredLayer& reference,
                                            const LoweredLayer& sharded, int64_t tp, uint64_t seed,
                                            double tolerance, int64_t memory_budget_bytes) {
  const std::vector<Literal> global = MakeBlockInputs(reference, seed);
  absl::StatusOr<std::vector<Literal>> want = RunReference(reference, global, memory_budget_bytes);
  if (!want.ok()) {
    return Failed(absl::StrCat("the one-device reference failed: ", want.status().message()));
  }
  return CompareWithReference(reference, global, *want, sharded, tp, tolerance,
                              memory_budget_bytes);
}

absl::StatusOr<std::vector<BlockValidationResult>> ValidateBlocks(
    const BlockValidationOptions& options) {
  if (options.max_devices < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--devices: expected at least 2 (tp = 2, 4, ... up to it); got ", options.max_devices));
  }
  if (!(options.tolerance >= 0) || !std::isfinite(options.tolerance)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tolerance: expected a positive number; got ", options.tolerance));
  }
  const double tolerance = options.tolerance > 0 ? options.tolerance : kBlockTolerance;
  const std::vector<Phase> phases =
      options.phases.empty() ? std::vector<Phase>{Phase::kForward, Phase::kForwardBackward}
                             : options.phases;
  PERFSIM_ASSIGN_OR_RETURN(
      std::vector<BlockUnderTest> blocks,
      BlocksOf(options, options.blocks.empty() ? AllBlocks() : options.blocks));
  std::vector<BlockValidationResult> results;
  for (const BlockUnderTest& b : blocks) {
    if (!b.absent.empty()) {
      results.push_back(
          {.block = std::string(BlockName(b.block)), .skipped = true, .message = b.absent});
      continue;
    }
    for (Phase phase : phases) {
      BlockValidationResult base{.block = std::string(BlockName(b.block)),
                                 .layer_kind = b.layer_kind,
                                 .phase = std::string(PhaseName(phase)),
                                 .tolerance = tolerance};
      absl::StatusOr<LoweredLayer> reference = b.lower(1, false, phase);
      absl::StatusOr<std::vector<Literal>> want;
      std::vector<Literal> global;
      if (reference.ok()) {
        global = MakeBlockInputs(*reference, options.seed);
        want = RunReference(*reference, global, options.memory_budget_bytes);
      }
      if (!reference.ok() || !want.ok()) {
        // Nothing to compare with: the lowering refuses the model's block (GPT-OSS's attention
        // sinks), or the reference does not run.
        BlockValidationResult r = base;
        r.skipped = !reference.ok();
        r.message =
            reference.ok()
                ? absl::StrCat("the one-device reference failed: ", want.status().message())
                : absl::StrCat("the lowering refuses the block: ", reference.status().message());
        results.push_back(std::move(r));
        continue;
      }
      for (int64_t tp = 2; tp <= options.max_devices; tp *= 2) {
        for (bool sp :
             b.sequence_parallel ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
          BlockValidationResult r = base;
          r.tp = tp;
          r.sequence_parallel = sp;
          if (std::string why = b.refusal(tp, sp); !why.empty()) {
            r.skipped = true;
            r.message = std::move(why);
            results.push_back(std::move(r));
            continue;
          }
          absl::StatusOr<LoweredLayer> sharded = b.lower(tp, sp, phase);
          if (!sharded.ok()) {
            r.message =
                absl::StrCat("the tp = ", tp, " lowering failed: ", sharded.status().message());
            results.push_back(std::move(r));
            continue;
          }
          BlockValidationResult c = CompareWithReference(*reference, global, *want, *sharded, tp,
                                                         tolerance, options.memory_budget_bytes);
          r.pass = c.pass;
          r.errors = std::move(c.errors);
          r.message = c.pass ? b.note : std::move(c.message);
          results.push_back(std::move(r));
        }
      }
    }
  }
  return results;
}

namespace {

std::string KindOf(const BlockValidationResult& r) {
  return r.layer_kind.empty() ? "-" : r.layer_kind;
}

std::string CaseName(const BlockValidationResult& r) {
  return r.layer_kind.empty() ? r.block : absl::StrCat(r.block, " ", r.layer_kind);
}

}  // namespace

void PrintBlockTable(const std::vector<BlockValidationResult>& results, std::ostream& out) {
  out << absl::StrFormat("%-10s %-22s %-7s %3s %-3s %-14s %9s  %s\n", "block", "layer kind",
                         "phase", "tp", "sp", "worst tensor", "rel err", "status");
  int pass = 0, fail = 0, skip = 0;
  double worst = 0;
  for (const BlockValidationResult& r : results) {
    (r.skipped ? skip : r.pass ? pass : fail)++;
    if (r.skipped) continue;
    const TensorError* w = nullptr;
    for (const TensorError& e : r.errors) {
      worst = std::max(worst, e.max_rel_error);
      if (w == nullptr || e.max_rel_error > w->max_rel_error || e.non_finite > 0) w = &e;
    }
    out << absl::StrFormat(
        "%-10s %-22s %-7s %3d %-3s %-14s %9s  %s\n", r.block, KindOf(r), r.phase, r.tp,
        r.sequence_parallel ? "on" : "off", w == nullptr ? "-" : w->tensor,
        w == nullptr ? "-"
                     : (w->non_finite > 0 ? "NaN" : absl::StrFormat("%.1e", w->max_rel_error)),
        r.pass ? "pass" : "FAIL");
    if (!r.pass) out << "    " << r.message << "\n";
  }
  out << absl::StrFormat("%d passed, %d failed, %d skipped; largest relative error %.2e\n", pass,
                         fail, skip, worst);
  // One line per distinct note and skip reason.
  std::vector<std::string> lines;
  for (const BlockValidationResult& r : results) {
    if ((!r.pass && !r.skipped) || r.message.empty()) continue;
    std::string line =
        absl::StrCat(r.skipped ? "  skipped " : "  note ", CaseName(r), ": ", r.message);
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }
  for (const std::string& line : lines) out << line << "\n";
}

report::ValidateReport BlockValidationReport(const std::vector<BlockValidationResult>& results) {
  report::ValidateReport out;
  for (const BlockValidationResult& r : results) {
    report::ValidateResult* v = out.add_results();
    v->set_block(r.block);
    v->set_layer_kind(r.layer_kind);
    v->set_sequence_parallel(r.sequence_parallel);
    v->set_phase(r.phase);
    v->set_devices(static_cast<int32_t>(r.tp));
    v->mutable_parallelism()->set_dp(1);
    v->mutable_parallelism()->set_fsdp(1);
    v->mutable_parallelism()->set_ep(1);
    v->mutable_parallelism()->set_tp(static_cast<int32_t>(r.tp));
    v->set_status(r.skipped ? "skip" : r.pass ? "pass" : "fail");
    v->set_tolerance(r.tolerance);
    AddTensorErrors(r.errors, *v);
    v->set_message(r.message);
  }
  return out;
}

void AddTensorErrors(const std::vector<TensorError>& errors, report::ValidateResult& result) {
  for (const TensorError& e : errors) {
    report::ValidateTensorError* t = result.add_errors();
    t->set_tensor(e.tensor);
    t->set_max_rel_error(e.max_rel_error);
    for (int64_t i : e.index) t->add_index(static_cast<double>(i));
    t->set_got(e.got);
    t->set_want(e.want);
    t->set_non_finite(static_cast<double>(e.non_finite));
  }
}

}  // namespace perfsim
