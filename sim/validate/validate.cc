#include "sim/validate/validate.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/annotation.pb.h"
#include "sim/fit/module_fit.h"
#include "sim/interp/interpreter.h"
#include "sim/lowering/checks.h"
#include "sim/validate/validate_internal.h"
#include "sim/util/status.h"

namespace perfsim {

absl::string_view RoutingCaseName(RoutingCase routing) {
  switch (routing) {
    case RoutingCase::kRandom: return "random";
    case RoutingCase::kSkewed: return "skewed";
    case RoutingCase::kEmptyExperts: return "empty_experts";
    case RoutingCase::kOneExpert: return "one_expert";
    case RoutingCase::kTinyScores: return "tiny_scores";
    case RoutingCase::kAdversarial: return "adversarial";
  }
  return "?";
}

std::vector<RoutingCase> AllRoutingCases() {
  return {RoutingCase::kRandom, RoutingCase::kSkewed, RoutingCase::kEmptyExperts,
          RoutingCase::kOneExpert};
}

absl::StatusOr<RoutingCase> ParseRoutingCase(absl::string_view text) {
  std::vector<std::string> names;
  std::vector<RoutingCase> cases = AllRoutingCases();
  cases.push_back(RoutingCase::kTinyScores);
  cases.push_back(RoutingCase::kAdversarial);
  for (RoutingCase r : cases) {
    if (RoutingCaseName(r) == text) return r;
    names.emplace_back(RoutingCaseName(r));
  }
  return absl::InvalidArgumentError(absl::StrCat("expected a routing case (",
                                                 absl::StrJoin(names, ", "), "); got '", text,
                                                 "'"));
}

absl::string_view RouterFamilyName(RouterFamily family) {
  switch (family) {
    case RouterFamily::kModel: return "model";
    case RouterFamily::kSoftmaxTopK: return "softmax_topk";
    case RouterFamily::kSoftmaxTopKNorm: return "softmax_topk_norm";
    case RouterFamily::kTopKSoftmax: return "topk_softmax";
    case RouterFamily::kSigmoidGrouped: return "sigmoid_grouped";
    case RouterFamily::kSigmoidPrescale: return "sigmoid_prescale";
  }
  return "?";
}

std::vector<RouterFamily> AllRouterFamilies() {
  return {RouterFamily::kSoftmaxTopK, RouterFamily::kSoftmaxTopKNorm, RouterFamily::kTopKSoftmax,
          RouterFamily::kSigmoidGrouped, RouterFamily::kSigmoidPrescale};
}

absl::StatusOr<RouterFamily> ParseRouterFamily(absl::string_view text) {
  std::vector<std::string> names = {"model"};
  if (text == "model") return RouterFamily::kModel;
  for (RouterFamily r : AllRouterFamilies()) {
    if (RouterFamilyName(r) == text) return r;
    names.emplace_back(RouterFamilyName(r));
  }
  return absl::InvalidArgumentError(absl::StrCat("expected a router family (",
                                                 absl::StrJoin(names, ", "), "); got '", text,
                                                 "'"));
}

absl::StatusOr<ModelConfig> WithRouter(const ModelConfig& model, RouterFamily family) {
  if (family == RouterFamily::kModel) return model;
  ModelSpec proto = model.proto();
  RouterSpec* r = proto.mutable_router();
  const DType dtype = r->dtype();
  r->Clear();
  r->set_dtype(dtype);
  r->set_num_groups(1);
  r->set_topk_groups(1);
  r->set_routed_scaling_factor(1);
  switch (family) {
    case RouterFamily::kSoftmaxTopK: r->set_kind(ROUTER_KIND_SOFTMAX_TOPK); break;
    case RouterFamily::kSoftmaxTopKNorm:
      r->set_kind(ROUTER_KIND_SOFTMAX_TOPK);
      r->set_renormalize(true);
      break;
    case RouterFamily::kTopKSoftmax:
      // Mixtral's and GPT-OSS's shape of routing, with GPT-OSS's router matmul bias, so every
      // backend is checked on the bias and its gradient too.
      r->set_kind(ROUTER_KIND_TOPK_SOFTMAX);
      r->set_has_bias(true);
      break;
    case RouterFamily::kSigmoidGrouped: {
      // DeepSeek-V3's shape of routing: 4 groups (or the largest count up to 4 that divides E and
      // leaves 2 per group), keep half of them, bias, renormalise, scale 2.5.
      int64_t groups = 4;
      const int64_t e = proto.num_experts(), k = proto.experts_per_token();
      while (groups > 1 && (e % groups != 0 || e / groups < 2)) --groups;
      const int64_t keep = std::max<int64_t>(1, groups / 2);
      r->set_kind(ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK);
      r->set_num_groups(groups);
      r->set_topk_groups(keep * (e / groups) >= k ? keep : groups);
      r->set_group_score(GROUP_SCORE_TOP2_SUM);
      r->set_renormalize(true);
      r->set_routed_scaling_factor(2.5);
      r->set_has_score_correction_bias(true);
      break;
    }
    case RouterFamily::kSigmoidPrescale:
      // Llama 4 routes each token to one expert; the model validator insists on K = 1.
      r->set_kind(ROUTER_KIND_SIGMOID_INPUT_PRESCALE);
      proto.set_experts_per_token(1);
      break;
    case RouterFamily::kModel: break;
  }
  return ModelConfig::FromProto(std::move(proto));
}

double ToleranceFor(const StepSpec& spec) {
  return spec.model.proto().activation_dtype() == DTYPE_F32 &&
                 spec.model.proto().param_dtype() == DTYPE_F32
             ? 1e-5
             : 16.0 / 256.0;
}

namespace {

// Start and size of device's block along each dim.
void Block(const TensorSpec& spec, const Parallelism& p, int64_t device,
           std::vector<int64_t>* start, std::vector<int64_t>* size) {
  start->clear();
  size->clear();
  for (size_t i = 0; i < spec.global_dims.size(); ++i) {
    int64_t index = 0, count = 1;
    for (MeshAxis axis : spec.split[i]) {
      index = index * MeshAxisSize(p, axis) + MeshCoord(p, axis, device);
      count *= MeshAxisSize(p, axis);
    }
    const int64_t block = spec.global_dims[i] / count;
    start->push_back(index * block);
    size->push_back(block);
  }
}

// Calls fn(local_linear, global_linear) for every element of the block.
template <typename Fn>
void ForEachInBlock(const std::vector<int64_t>& global_dims, const std::vector<int64_t>& start,
                    const std::vector<int64_t>& size, Fn fn) {
  const int64_t rank = static_cast<int64_t>(size.size());
  int64_t count = 1;
  for (int64_t s : size) count *= s;
  std::vector<int64_t> index(rank, 0);
  for (int64_t local = 0; local < count; ++local) {
    int64_t global = 0;
    for (int64_t d = 0; d < rank; ++d) global = global * global_dims[d] + start[d] + index[d];
    fn(local, global);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < size[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    index[d] = dims[d] == 0 ? 0 : linear % dims[d];
    linear = dims[d] == 0 ? 0 : linear / dims[d];
  }
  return index;
}

}  // namespace

std::string ModelKey(const StepSpec& spec) {
  return absl::StrCat(spec.model.proto().ShortDebugString(), "|", PhaseName(spec.phase), "|",
                      spec.batch, "x", spec.seq);
}

TensorError Compare(const TensorSpec& spec, const Literal& got, const Literal& want) {
  TensorError e{.tensor = spec.name};
  double max_want = 0, max_diff = -1;
  int64_t worst = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    max_want = std::max(max_want, std::fabs(want.GetAsDouble(i)));
  }
  for (int64_t i = 0; i < want.element_count(); ++i) {
    const double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
    if (!std::isfinite(g) && std::isfinite(w)) {
      if (e.non_finite++ == 0) worst = i, max_diff = std::numeric_limits<double>::infinity();
      continue;
    }
    const double diff = std::fabs(g - w);
    if (diff > max_diff) max_diff = diff, worst = i;
  }
  e.index = Unravel(worst, spec.global_dims);
  e.got = want.element_count() > 0 ? got.GetAsDouble(worst) : 0;
  e.want = want.element_count() > 0 ? want.GetAsDouble(worst) : 0;
  e.max_rel_error = max_diff <= 0 ? 0 : max_diff / std::max(max_want, 1e-30);
  return e;
}

std::string Exact(double value) { return absl::StrFormat("%.9g", value); }

std::string IndexString(const std::vector<int64_t>& index) {
  return absl::StrCat("[", absl::StrJoin(index, ","), "]");
}


Literal ShardOf(const Literal& global, const TensorSpec& spec, const Parallelism& p,
                int64_t device) {
  std::vector<int64_t> start, size;
  Block(spec, p, device, &start, &size);
  Literal local(Shape::Array(spec.type, size));
  const int64_t width = static_cast<int64_t>(global.data().size()) /
                        std::max<int64_t>(1, global.element_count());
  ForEachInBlock(spec.global_dims, start, size, [&](int64_t l, int64_t g) {
    std::memcpy(local.mutable_data().data() + l * width, global.data().data() + g * width, width);
  });
  return local;
}

absl::StatusOr<Literal> Unshard(const std::vector<Literal>& shards, const TensorSpec& spec,
                                const Parallelism& p) {
  Literal global(Shape::Array(spec.type, spec.global_dims));
  std::vector<int8_t> written(global.element_count(), 0);
  const int64_t width = static_cast<int64_t>(global.data().size()) /
                        std::max<int64_t>(1, global.element_count());
  absl::Status status;
  for (int64_t device = 0; device < static_cast<int64_t>(shards.size()); ++device) {
    std::vector<int64_t> start, size;
    Block(spec, p, device, &start, &size);
    const Literal& local = shards[device];
    if (local.shape().dimensions() != size) {
      return absl::InvalidArgumentError(absl::StrCat(
          spec.name, " on device ", device, ": expected a shard of shape [",
          absl::StrJoin(size, ","), "]; got ", local.shape().ToString(false)));
    }
    ForEachInBlock(spec.global_dims, start, size, [&](int64_t l, int64_t g) {
      const uint8_t* src = local.data().data() + l * width;
      uint8_t* dst = global.mutable_data().data() + g * width;
      if (written[g] && std::memcmp(src, dst, width) != 0 && status.ok()) {
        status = absl::InternalError(absl::StrCat(
            spec.name, ": expected replicas to agree; got device ", device, " ",
            local.GetAsDouble(l), " vs ", global.GetAsDouble(g), " at ",
            IndexString(Unravel(g, spec.global_dims))));
      }
      std::memcpy(dst, src, width);
      written[g] = 1;
    });
  }
  PERFSIM_RETURN_IF_ERROR(status);
  return global;
}

namespace {

// FNV-1a over every input's shape and bytes: the cache keys on what the reference actually
// runs on, so two callers whose keys forget an input dependency cannot share outputs.
uint64_t InputsFingerprint(const std::vector<Literal>& inputs) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  };
  for (const Literal& lit : inputs) {
    const std::string shape = lit.shape().ToString(false);
    mix(shape.data(), shape.size());
    mix(lit.data().data(), lit.data().size());
  }
  return h;
}

}  // namespace

absl::StatusOr<const std::vector<Literal>*> ReferenceCache::Get(
    const StepSpec& spec, const std::vector<Literal>& inputs, const std::string& caller_key) {
  const std::string key = absl::StrCat(caller_key, "|inputs=", InputsFingerprint(inputs));
  auto it = outputs_.find(key);
  if (it != outputs_.end()) return &it->second;
  StepSpec ref = spec;
  ref.backend = "dense_einsum";
  ref.parallelism = Parallelism{};
  PERFSIM_ASSIGN_OR_RETURN(LoweredStep step, LowerStep(ref));
  InterpreterOptions options;
  options.memory_budget_bytes = memory_budget_bytes_;
  PERFSIM_ASSIGN_OR_RETURN(RunResult result, RunModule(*step.module, {inputs}, options));
  return &(outputs_[key] = std::move(result.outputs[0]));
}


bool ReferenceCache::FirstAdversarialRun(const std::string& module_key) {
  return adversarial_done_.insert(module_key).second;
}

absl::StatusOr<std::vector<Literal>> RunUnsharded(const LoweredStep& step,
                                                  const std::vector<Literal>& global,
                                                  int64_t memory_budget_bytes) {
  const Parallelism& p = step.spec.parallelism;
  const int64_t n = step.spec.num_devices();
  std::vector<std::vector<Literal>> inputs(n);
  for (int64_t device = 0; device < n; ++device) {
    for (size_t i = 0; i < step.parameters.size(); ++i) {
      inputs[device].push_back(ShardOf(global[i], step.parameters[i], p, device));
    }
  }
  InterpreterOptions options;
  options.num_devices = n;
  options.memory_budget_bytes = memory_budget_bytes;
  PERFSIM_ASSIGN_OR_RETURN(RunResult run, RunModule(*step.module, inputs, options));
  std::vector<Literal> outputs;
  for (size_t o = 0; o < step.outputs.size(); ++o) {
    std::vector<Literal> shards;
    for (int64_t device = 0; device < n; ++device) shards.push_back(run.outputs[device][o]);
    PERFSIM_ASSIGN_OR_RETURN(Literal global_output, Unshard(shards, step.outputs[o], p));
    outputs.push_back(std::move(global_output));
  }
  return outputs;
}

namespace {

// The receive buffer the lowering declared on a ragged-all-to-all (checks.h
// DeclareReceivedRows: the annotation's RaggedBuffer); null for other instructions and for
// undeclared exchanges.
const RaggedBuffer* DeclaredBuffer(const Instruction& instruction) {
  if (instruction.opcode() != Opcode::kRaggedAllToAll) return nullptr;
  const Annotation* annotation = instruction.annotation();
  return annotation != nullptr && annotation->has_buffer() ? &annotation->buffer() : nullptr;
}

// Whether `module` has a ragged-all-to-all whose receive buffer the lowering declared: the
// modules the adversarial routing exercises.
bool HasDeclaredExchange(const Module& module) {
  for (const auto& instruction : module.entry()->instructions()) {
    if (DeclaredBuffer(*instruction) != nullptr) return true;
  }
  return false;
}

// The rows a token-dropping lowering truncates its ragged-all-to-alls to (checks.h
// DeclareTruncatedTo), 0 when none does.
int64_t TruncatedReceiveRows(const Module& module) {
  for (const auto& instruction : module.entry()->instructions()) {
    const RaggedBuffer* buffer = DeclaredBuffer(*instruction);
    if (buffer != nullptr && buffer->truncated_rows() > 0) return buffer->truncated_rows();
  }
  return 0;
}

// Compares every output with the reference; the first failure (a NaN/Inf where the
// reference is finite, or an error over the tolerance) sets r.pass and r.message, prefixed
// with `context`. Errors are appended to `errors` when given.
void CompareAll(const LoweredStep& step, const std::vector<Literal>& got,
                const std::vector<Literal>& want, absl::string_view context,
                ValidationResult& r, std::vector<TensorError>* errors) {
  for (size_t o = 0; o < step.outputs.size(); ++o) {
    TensorError e = Compare(step.outputs[o], got[o], want[o]);
    if (e.non_finite > 0 && r.pass) {
      r.pass = false;
      r.message = absl::StrCat(context, step.spec.backend, ": ", e.tensor, " has ", e.non_finite,
                               " NaN/Inf values where the reference is finite, first at ",
                               IndexString(e.index), " (got ", Exact(e.got), ", want ",
                               Exact(e.want),
                               "): an uninitialised (poisoned) buffer reached the output");
    } else if (e.max_rel_error > r.tolerance && r.pass) {
      r.pass = false;
      r.message = absl::StrCat(context, step.spec.backend, ": ", e.tensor,
                               " differs from dense_einsum at ", IndexString(e.index), ": got ",
                               Exact(e.got), ", want ", Exact(e.want), " (relative error ",
                               e.max_rel_error, " > ", r.tolerance, ")");
    }
    if (errors != nullptr) errors->push_back(std::move(e));
  }
}

// The adversarial routing (validate.h) on `step`, once per module: a receive buffer too small
// for it overflows in the interpreter's ragged-all-to-all, a wrong one shows in the numbers.
void RunAdversarial(const LoweredStep& step, const ValidationCase& c, ReferenceCache& cache,
                    ValidationResult& r) {
  const StepSpec& spec = step.spec;
  if (spec.model.d_model() <= spec.model.num_experts() || !HasDeclaredExchange(*step.module)) {
    return;
  }
  const std::string key =
      absl::StrCat(ModelKey(spec), "|adversarial|", ParallelismToString(spec.parallelism), "|",
                   spec.knobs.align_size, "|", c.seed);
  if (!cache.FirstAdversarialRun(absl::StrCat(spec.backend, "|", key))) return;
  const int64_t ep = spec.parallelism.ep, e_l = spec.experts_per_device();
  const std::string context = absl::StrCat(
      "adversarial routing (every token to ep shard ", ep - 1, ", experts ", (ep - 1) * e_l, "..",
      ep * e_l - 1,
      spec.knobs.align_size > 1
          ? absl::StrCat(", per-expert counts ≡ 1 mod ", spec.knobs.align_size, " where possible")
          : "",
      "): ");
  std::vector<Literal> global = MakeGlobalInputs(step, RoutingCase::kAdversarial, c.seed);
  absl::StatusOr<const std::vector<Literal>*> want = cache.Get(spec, global, key);
  if (!want.ok()) {
    r.pass = false;
    r.message = absl::StrCat(context, "reference: ", want.status().message());
    return;
  }
  absl::StatusOr<std::vector<Literal>> got = RunUnsharded(step, global, c.memory_budget_bytes);
  if (!got.ok()) {
    r.pass = false;
    r.message = absl::StrCat(context, "run: ", got.status().message());
    return;
  }
  CompareAll(step, *got, **want, context, r, nullptr);
}

}  // namespace

ValidationResult ValidateLowered(const LoweredStep& step, const ValidationCase& c,
                                 ReferenceCache& cache) {
  const StepSpec& spec = step.spec;
  ValidationResult r{.backend = spec.backend,
                     .router = std::string(RouterFamilyName(c.router)),
                     .routing = std::string(RoutingCaseName(c.routing)),
                     .phase = std::string(PhaseName(spec.phase)),
                     .devices = spec.num_devices(),
                     .parallelism = spec.parallelism,
                     .tolerance = c.tolerance > 0 ? c.tolerance : ToleranceFor(spec)};
  auto fail = [&](std::string message) {
    r.pass = false;
    r.message = std::move(message);
    return r;
  };
  if (absl::Status checks = CheckLoweredStep(step); !checks.ok()) {
    return fail(absl::StrCat("static check: ", checks.message()));
  }
  if (c.chip != nullptr) {
    if (absl::Status fit = CheckModuleFits(*step.module, *c.chip, std::nullopt); !fit.ok()) {
      return fail(absl::StrCat("fit on ", c.chip->name(), ": ", fit.message()));
    }
  }
  // After the static and fit checks, which allocate nothing, and before the inputs are made.
  if (absl::Status fits = CheckCaseMemory(step, c.memory_budget_bytes); !fits.ok()) {
    r.over_budget = true;
    return fail(std::string(fits.message()));
  }
  std::vector<Literal> global = MakeGlobalInputs(step, c.routing, c.seed);
  // Everything the inputs depend on: the adversarial routing's picks also depend on the mesh
  // and the alignment (AdversarialPicks). The cache adds a fingerprint of the inputs themselves.
  std::string key = absl::StrCat(ModelKey(spec), "|", RoutingCaseName(c.routing), "|", c.seed);
  if (c.routing == RoutingCase::kAdversarial) {
    absl::StrAppend(&key, "|", ParallelismToString(spec.parallelism), "|", spec.knobs.align_size);
  }
  absl::StatusOr<const std::vector<Literal>*> want = cache.Get(spec, global, key);
  if (!want.ok()) return fail(absl::StrCat("reference: ", want.status().message()));
  absl::StatusOr<std::vector<Literal>> got = RunUnsharded(step, global, c.memory_budget_bytes);
  if (!got.ok()) {
    // An unsharding error (replicas that disagree) is a wrong result, not a failed run.
    const bool replicas = got.status().code() == absl::StatusCode::kInternal;
    return fail(replicas ? std::string(got.status().message())
                         : absl::StrCat("run: ", got.status().message()));
  }
  r.pass = true;
  CompareAll(step, *got, **want, "", r, &r.errors);
  if (const int64_t rows = TruncatedReceiveRows(*step.module); !r.pass && rows > 0) {
    absl::StrAppend(&r.message, " (ragged_buffer_factor ", spec.knobs.ragged_buffer_factor,
                    ": receive buffers of ", rows,
                    " rows drop what the dropless reference keeps)");
  }
  if (r.pass && c.routing != RoutingCase::kAdversarial) RunAdversarial(step, c, cache, r);
  return r;
}

ValidationResult ValidateCase(const ValidationCase& c, ReferenceCache& cache) {
  ValidationResult r{.backend = c.spec.backend,
                     .router = std::string(RouterFamilyName(c.router)),
                     .routing = std::string(RoutingCaseName(c.routing)),
                     .phase = std::string(PhaseName(c.spec.phase)),
                     .devices = c.spec.num_devices(),
                     .parallelism = c.spec.parallelism,
                     .tolerance = c.tolerance > 0 ? c.tolerance : ToleranceFor(c.spec)};
  absl::StatusOr<ModelConfig> model = WithRouter(c.spec.model, c.router);
  if (!model.ok()) {
    r.message = std::string(model.status().message());
    return r;
  }
  StepSpec spec = c.spec;
  spec.model = *std::move(model);
  absl::StatusOr<const MoeBackend*> backend = FindBackend(spec.backend);
  if (!backend.ok()) {
    r.message = std::string(backend.status().message());
    return r;
  }
  const std::string note = (*backend)->PrepareForValidation(spec);
  if (absl::Status supported = (*backend)->Supports(spec); !supported.ok()) {
    r.skipped = true;
    r.message = std::string(supported.message());
    return r;
  }
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  if (!step.ok()) {
    r.message = absl::StrCat("lowering: ", step.status().message());
    return r;
  }
  ValidationResult result = ValidateLowered(*step, c, cache);
  if (!note.empty()) {
    result.message = result.message.empty() ? note : absl::StrCat(result.message, " (", note, ")");
  }
  return result;
}

}  // namespace perfsim
