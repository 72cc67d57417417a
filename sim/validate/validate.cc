#include "sim/validate/validate.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/fit/module_fit.h"
#include "sim/interp/interpreter.h"
#include "sim/lowering/checks.h"
#include "sim/util/status.h"

namespace perfsim {

absl::string_view RoutingCaseName(RoutingCase routing) {
  switch (routing) {
    case RoutingCase::kRandom: return "random";
    case RoutingCase::kSkewed: return "skewed";
    case RoutingCase::kEmptyExperts: return "empty_experts";
    case RoutingCase::kOneExpert: return "one_expert";
  }
  return "?";
}

std::vector<RoutingCase> AllRoutingCases() {
  return {RoutingCase::kRandom, RoutingCase::kSkewed, RoutingCase::kEmptyExperts,
          RoutingCase::kOneExpert};
}

absl::StatusOr<RoutingCase> ParseRoutingCase(absl::string_view text) {
  std::vector<std::string> names;
  for (RoutingCase r : AllRoutingCases()) {
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
    case RouterFamily::kTopKSoftmax: r->set_kind(ROUTER_KIND_TOPK_SOFTMAX); break;
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
      r->set_has_bias(true);
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

// SplitMix64: a small, well-mixed stream; the same seed gives the same inputs everywhere.
class Stream {
 public:
  explicit Stream(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0; }

 private:
  uint64_t state_;
};

int64_t AxisSize(const Parallelism& p, MeshAxis axis) {
  return axis == MeshAxis::kDp ? p.dp : axis == MeshAxis::kEp ? p.ep : p.tp;
}

int64_t AxisCoord(const Parallelism& p, MeshAxis axis, int64_t device) {
  const int64_t tp = device % p.tp, ep = (device / p.tp) % p.ep, dp = device / (p.tp * p.ep);
  return axis == MeshAxis::kDp ? dp : axis == MeshAxis::kEp ? ep : tp;
}

// Start and size of device's block along each dim.
void Block(const TensorSpec& spec, const Parallelism& p, int64_t device,
           std::vector<int64_t>* start, std::vector<int64_t>* size) {
  start->clear();
  size->clear();
  for (size_t i = 0; i < spec.global_dims.size(); ++i) {
    int64_t index = 0, count = 1;
    for (MeshAxis axis : spec.split[i]) {
      index = index * AxisSize(p, axis) + AxisCoord(p, axis, device);
      count *= AxisSize(p, axis);
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

std::string IndexString(const std::vector<int64_t>& index) {
  return absl::StrCat("[", absl::StrJoin(index, ","), "]");
}

}  // namespace

std::vector<Literal> MakeGlobalInputs(const LoweredStep& step, RoutingCase routing,
                                      uint64_t seed) {
  const int64_t d = step.spec.model.d_model(), f = step.spec.model.expert_ffn_dim();
  std::vector<Literal> inputs;
  for (size_t p = 0; p < step.parameters.size(); ++p) {
    const TensorSpec& t = step.parameters[p];
    Literal lit(Shape::Array(t.type, t.global_dims));
    Stream stream(seed * 1000003 + p);
    double scale = 1;
    if (t.name == "wi_0" || t.name == "wi_1" || t.name == "ws_0" || t.name == "ws_1") {
      scale = 1 / std::sqrt(static_cast<double>(d));
    } else if (t.name == "wo" || t.name == "ws_o") {
      scale = 1 / std::sqrt(static_cast<double>(f));
    } else if (t.name == "router_bias") {
      scale = 0.1;
    }
    for (int64_t i = 0; i < lit.element_count(); ++i) lit.SetFromDouble(i, stream.Uniform() * scale);
    if (t.name == "x") {
      for (int64_t row = 0; row < t.global_dims[0]; ++row) lit.SetFromDouble(row * d, 1.0);
    }
    if (t.name == "router_w") {
      const int64_t e = t.global_dims[1];
      for (int64_t j = 0; j < e; ++j) {
        double offset = 0;
        switch (routing) {
          case RoutingCase::kRandom: break;
          case RoutingCase::kSkewed: offset = 3.0 * j / e; break;
          case RoutingCase::kEmptyExperts: offset = j % 3 == 0 ? -30 : 0; break;
          case RoutingCase::kOneExpert: offset = j == e / 2 ? 30 : 0; break;
        }
        lit.SetFromDouble(j, lit.GetAsDouble(j) + offset);
      }
    }
    inputs.push_back(std::move(lit));
  }
  return inputs;
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

absl::StatusOr<const std::vector<Literal>*> ReferenceCache::Get(
    const StepSpec& spec, const std::vector<Literal>& inputs, const std::string& key) {
  auto it = outputs_.find(key);
  if (it != outputs_.end()) return &it->second;
  StepSpec ref = spec;
  ref.backend = "dense_einsum";
  ref.parallelism = Parallelism{};
  PERFSIM_ASSIGN_OR_RETURN(LoweredStep step, LowerStep(ref));
  InterpreterOptions options;
  PERFSIM_ASSIGN_OR_RETURN(RunResult result, RunModule(*step.module, {inputs}, options));
  return &(outputs_[key] = std::move(result.outputs[0]));
}

ValidationResult ValidateLowered(const LoweredStep& step, const ValidationCase& c,
                                 ReferenceCache& cache) {
  const StepSpec& spec = step.spec;
  ValidationResult r{.backend = spec.backend,
                     .router = std::string(RouterFamilyName(c.router)),
                     .routing = std::string(RoutingCaseName(c.routing)),
                     .phase = std::string(PhaseName(spec.phase)),
                     .devices = spec.num_devices(),
                     .tolerance = ToleranceFor(spec)};
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
  std::vector<Literal> global = MakeGlobalInputs(step, c.routing, c.seed);
  const std::string key = absl::StrCat(ModelKey(spec), "|", RoutingCaseName(c.routing), "|",
                                       c.seed);
  absl::StatusOr<const std::vector<Literal>*> want = cache.Get(spec, global, key);
  if (!want.ok()) return fail(absl::StrCat("reference: ", want.status().message()));
  const int64_t n = spec.num_devices();
  std::vector<std::vector<Literal>> inputs(n);
  for (int64_t device = 0; device < n; ++device) {
    for (size_t p = 0; p < step.parameters.size(); ++p) {
      inputs[device].push_back(ShardOf(global[p], step.parameters[p], spec.parallelism, device));
    }
  }
  InterpreterOptions options;
  options.num_devices = n;
  absl::StatusOr<RunResult> run = RunModule(*step.module, inputs, options);
  if (!run.ok()) return fail(absl::StrCat("run: ", run.status().message()));
  r.pass = true;
  for (size_t o = 0; o < step.outputs.size(); ++o) {
    std::vector<Literal> shards;
    for (int64_t device = 0; device < n; ++device) shards.push_back(run->outputs[device][o]);
    absl::StatusOr<Literal> got = Unshard(shards, step.outputs[o], spec.parallelism);
    if (!got.ok()) return fail(std::string(got.status().message()));
    TensorError e = Compare(step.outputs[o], *got, (**want)[o]);
    if (e.non_finite > 0 && r.pass) {
      r.pass = false;
      r.message = absl::StrCat(spec.backend, ": ", e.tensor, " has ", e.non_finite,
                               " NaN/Inf values where the reference is finite, first at ",
                               IndexString(e.index), " (got ", e.got, ", want ", e.want,
                               "): an uninitialised (poisoned) buffer reached the output");
    } else if (e.max_rel_error > r.tolerance && r.pass) {
      r.pass = false;
      r.message = absl::StrCat(spec.backend, ": ", e.tensor, " differs from dense_einsum at ",
                               IndexString(e.index), ": got ", e.got, ", want ", e.want,
                               " (relative error ", e.max_rel_error, " > ", r.tolerance, ")");
    }
    r.errors.push_back(std::move(e));
  }
  return r;
}

ValidationResult ValidateCase(const ValidationCase& c, ReferenceCache& cache) {
  ValidationResult r{.backend = c.spec.backend,
                     .router = std::string(RouterFamilyName(c.router)),
                     .routing = std::string(RoutingCaseName(c.routing)),
                     .phase = std::string(PhaseName(c.spec.phase)),
                     .devices = c.spec.num_devices(),
                     .tolerance = ToleranceFor(c.spec)};
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

namespace perfsim {

std::vector<ValidationResult> RunSuite(const SuiteOptions& options) {
  std::vector<std::string> backends = options.backends;
  if (backends.empty()) {
    for (const MoeBackend* b : Backends()) backends.emplace_back(b->name());
  }
  std::vector<RouterFamily> routers =
      options.routers.empty() ? AllRouterFamilies() : options.routers;
  std::vector<RoutingCase> routings =
      options.routings.empty() ? AllRoutingCases() : options.routings;
  std::vector<Phase> phases = options.phases.empty()
                                  ? std::vector<Phase>{Phase::kForward, Phase::kForwardBackward}
                                  : options.phases;
  std::vector<int64_t> devices =
      options.devices.empty() ? std::vector<int64_t>{1, 2, 4, 8} : options.devices;
  if (options.parallelism.has_value()) devices = {options.parallelism->num_devices()};
  ReferenceCache cache;
  std::vector<ValidationResult> results;
  for (const std::string& name : backends) {
    absl::StatusOr<const MoeBackend*> backend = FindBackend(name);
    for (int64_t n : devices) {
      for (Phase phase : phases) {
        for (RouterFamily router : routers) {
          for (RoutingCase routing : routings) {
            ValidationCase c{.spec = options.base, .router = router, .routing = routing,
                             .seed = options.seed, .chip = options.chip};
            c.spec.backend = name;
            c.spec.phase = phase;
            if (backend.ok()) {
              c.spec.parallelism = options.parallelism.has_value()
                                       ? *options.parallelism
                                       : (*backend)->DefaultParallelism(n, c.spec);
            }
            if (absl::Status valid = c.spec.Validate(); !valid.ok() && backend.ok()) {
              ValidationResult r{.backend = name,
                                 .router = std::string(RouterFamilyName(router)),
                                 .routing = std::string(RoutingCaseName(routing)),
                                 .phase = std::string(PhaseName(phase)),
                                 .devices = n,
                                 .skipped = true,
                                 .message = std::string(valid.message())};
              results.push_back(std::move(r));
              continue;
            }
            results.push_back(ValidateCase(c, cache));
          }
        }
      }
    }
  }
  return results;
}

ValidationResult ValidateHloModule(std::unique_ptr<Module> module, const StepSpec& spec,
                                   RoutingCase routing, uint64_t seed) {
  ValidationResult r{.backend = "hlo",
                     .router = "model",
                     .routing = std::string(RoutingCaseName(routing)),
                     .phase = "fwd",
                     .devices = spec.num_devices(),
                     .tolerance = ToleranceFor(spec)};
  // The layout of the module's parameters: the reference's, with the user's parallelism.
  StepSpec layout = spec;
  layout.backend = "dense_einsum";
  layout.phase = Phase::kForward;
  layout.parallelism = Parallelism{};
  absl::StatusOr<LoweredStep> ref = LowerStep(layout);
  if (!ref.ok()) {
    r.message = std::string(ref.status().message());
    return r;
  }
  LoweredStep step{.spec = spec, .module = std::move(module)};
  step.spec.phase = Phase::kForward;
  step.spec.backend = "hlo";
  // Order x, router_w, wi_0, wi_1, wo, [router_bias]: the bias moves after the weights.
  std::vector<TensorSpec> params;
  const TensorSpec* bias = nullptr;
  for (const TensorSpec& t : ref->parameters) {
    if (t.name == "router_bias") {
      bias = &t;
      continue;
    }
    if (t.name == "ws_0" || t.name == "ws_1" || t.name == "ws_o") continue;
    params.push_back(t);
  }
  if (bias != nullptr) params.push_back(*bias);
  for (TensorSpec& t : params) {
    const std::vector<MeshAxis> tokens = {MeshAxis::kDp, MeshAxis::kEp};
    if (t.name == "x") t.split = {tokens, {}};
    if (t.name == "wi_0" || t.name == "wi_1" || t.name == "wo") {
      t.split = {{MeshAxis::kEp}, {}, {}};
    }
  }
  step.parameters = params;
  step.outputs = {ref->outputs[0]};
  const Computation* entry = step.module->entry();
  if (entry == nullptr || entry->parameter_count() != static_cast<int64_t>(params.size())) {
    r.message = absl::StrCat("expected an entry computation with ", params.size(),
                             " parameters (x, router_w, wi_0, wi_1, wo",
                             bias != nullptr ? ", router_bias" : "", "); got ",
                             entry == nullptr ? 0 : entry->parameter_count());
    return r;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<int64_t> local = params[i].global_dims;
    for (size_t d = 0; d < local.size(); ++d) {
      for (MeshAxis axis : params[i].split[d]) local[d] /= AxisSize(spec.parallelism, axis);
    }
    const Shape& shape = entry->parameter(i)->shape();
    if (shape.dimensions() != local) {
      r.message = absl::StrCat("parameter ", i, " (", params[i].name, ", ", params[i].dims,
                               "): expected per-device shape [", absl::StrJoin(local, ","),
                               "] for model ", spec.model.name(), " and ",
                               ParallelismToString(spec.parallelism), "; got ",
                               shape.ToString(false));
      return r;
    }
  }
  ReferenceCache cache;
  ValidationCase c{.spec = layout, .router = RouterFamily::kModel, .routing = routing,
                   .seed = seed};
  // The reference is computed from the layout spec's parameter order; map inputs by name.
  std::vector<Literal> global = MakeGlobalInputs(*ref, routing, seed);
  absl::flat_hash_map<std::string, const Literal*> by_name;
  for (size_t i = 0; i < ref->parameters.size(); ++i) by_name[ref->parameters[i].name] = &global[i];
  absl::StatusOr<const std::vector<Literal>*> want =
      cache.Get(layout, global, "hlo");
  if (!want.ok()) {
    r.message = absl::StrCat("reference: ", want.status().message());
    return r;
  }
  const int64_t n = spec.num_devices();
  std::vector<std::vector<Literal>> inputs(n);
  for (int64_t device = 0; device < n; ++device) {
    for (const TensorSpec& t : params) {
      inputs[device].push_back(ShardOf(*by_name[t.name], t, spec.parallelism, device));
    }
  }
  InterpreterOptions options;
  options.num_devices = n;
  absl::StatusOr<RunResult> run = RunModule(*step.module, inputs, options);
  if (!run.ok()) {
    r.message = absl::StrCat("run: ", run.status().message());
    return r;
  }
  std::vector<Literal> shards;
  for (int64_t device = 0; device < n; ++device) shards.push_back(run->outputs[device][0]);
  absl::StatusOr<Literal> got = Unshard(shards, step.outputs[0], spec.parallelism);
  if (!got.ok()) {
    r.message = std::string(got.status().message());
    return r;
  }
  TensorError e = Compare(step.outputs[0], *got, (**want)[0]);
  r.pass = e.non_finite == 0 && e.max_rel_error <= r.tolerance;
  if (!r.pass) {
    r.message = absl::StrCat("y differs from the reference at ", IndexString(e.index), ": got ",
                             e.got, ", want ", e.want, " (relative error ", e.max_rel_error,
                             e.non_finite > 0 ? absl::StrCat(", ", e.non_finite, " NaN/Inf") : "",
                             ")");
  }
  r.errors.push_back(std::move(e));
  return r;
}

}  // namespace perfsim
