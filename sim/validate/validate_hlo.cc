// `perfsim validate --hlo`: a user's module against the reference MoE (validate.h), with the
// static checks of user_module_checks.h first and, when the numbers differ, the first diverging
// output and what the numbers say about why.
#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/interpreter.h"
#include "sim/util/status.h"
#include "sim/validate/user_module_checks.h"
#include "sim/validate/validate.h"
#include "sim/validate/validate_internal.h"

namespace perfsim {
namespace {

// The user module's parameters (validate.h): the reference's parameters, which LowerStep
// orders as the contract does, sharded as a user's shard_map would.
std::vector<TensorSpec> UserParameters(const LoweredStep& ref) {
  const std::vector<MeshAxis> tokens = {MeshAxis::kDp, MeshAxis::kFsdp, MeshAxis::kEp};
  const std::vector<MeshAxis> fsdp = {MeshAxis::kFsdp}, ep = {MeshAxis::kEp};
  std::vector<TensorSpec> params = ref.parameters;
  for (TensorSpec& t : params) {
    if (t.name == "x" || t.name == "dy") t.split = {tokens, {}};
    if (t.name == "router_w") t.split = {fsdp, {}};
    if (t.name == "wi_0" || t.name == "wi_1") t.split = {ep, fsdp, {}};
    if (t.name == "wo") t.split = {ep, {}, fsdp};
    if (t.name == "ws_0" || t.name == "ws_1") t.split = {fsdp, {}};
    if (t.name == "ws_o") t.split = {{}, fsdp};
  }
  return params;
}

// Gradients are sharded as their parameters.
std::vector<TensorSpec> UserOutputs(const LoweredStep& ref, const std::vector<TensorSpec>& params) {
  std::vector<TensorSpec> outputs = ref.outputs;
  for (TensorSpec& o : outputs) {
    for (const TensorSpec& p : params) {
      if (o.name == "dx" ? p.name == "x" : o.name == absl::StrCat("d_", p.name)) o.split = p.split;
    }
  }
  return outputs;
}

PrimitiveType RouterType(const ModelConfig& model) {
  return model.proto().router().dtype() == DTYPE_BF16 ? PrimitiveType::kBF16 : PrimitiveType::kF32;
}

int64_t OutputCount(const Module& module) {
  const Shape& root = module.entry()->root()->shape();
  return root.IsTuple() ? static_cast<int64_t>(root.tuple_shapes().size()) : 1;
}

// Tokens whose output row is all zero where the reference's is not: dropped tokens.
struct ZeroRows {
  int64_t count = 0;
  int64_t first = -1;
};
ZeroRows ZeroTokenRows(const Literal& got, const Literal& want) {
  ZeroRows z;
  const std::vector<int64_t>& dims = want.shape().dimensions();
  if (dims.size() != 2 || got.element_count() != want.element_count()) return z;
  for (int64_t t = 0; t < dims[0]; ++t) {
    bool got_zero = true, want_zero = true;
    for (int64_t d = 0; d < dims[1]; ++d) {
      got_zero = got_zero && got.GetAsDouble(t * dims[1] + d) == 0;
      want_zero = want_zero && want.GetAsDouble(t * dims[1] + d) == 0;
    }
    if (got_zero && !want_zero && z.count++ == 0) z.first = t;
  }
  return z;
}

// Token rows of y within the tolerance of the reference's (relative to max |want| overall), for
// a failure no cause explains: a fault confined to some tokens (their routing, a dropped
// assignment) leaves the other rows exact.
int64_t MatchingTokenRows(const Literal& got, const Literal& want, double tolerance) {
  const std::vector<int64_t>& dims = want.shape().dimensions();
  if (dims.size() != 2 || got.element_count() != want.element_count()) return 0;
  double max_want = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    max_want = std::max(max_want, std::fabs(want.GetAsDouble(i)));
  }
  int64_t matching = 0;
  for (int64_t t = 0; t < dims[0]; ++t) {
    bool match = true;
    for (int64_t d = 0; d < dims[1] && match; ++d) {
      const double diff =
          std::fabs(got.GetAsDouble(t * dims[1] + d) - want.GetAsDouble(t * dims[1] + d));
      match = diff <= tolerance * std::max(max_want, 1e-30);
    }
    matching += match;
  }
  return matching;
}

// y of the reference with the router's top-k renormalisation flipped, on the same inputs: when
// the module matches it, the module renormalises where the model does not, or the reverse.
absl::StatusOr<TensorError> CompareWithFlippedRenormalisation(const StepSpec& layout,
                                                              const std::vector<Literal>& global,
                                                              const TensorSpec& y,
                                                              const Literal& got,
                                                              int64_t memory_budget_bytes) {
  ModelSpec proto = layout.model.proto();
  proto.mutable_router()->set_renormalize(!proto.router().renormalize());
  PERFSIM_ASSIGN_OR_RETURN(ModelConfig flipped, ModelConfig::FromProto(std::move(proto)));
  StepSpec spec = layout;
  spec.model = std::move(flipped);
  ReferenceCache cache(memory_budget_bytes);
  PERFSIM_ASSIGN_OR_RETURN(const std::vector<Literal>* want,
                           cache.Get(spec, global, "hlo|renormalisation"));
  return Compare(y, got, (*want)[0]);
}

}  // namespace

ValidationResult ValidateHloModule(std::unique_ptr<Module> module, const StepSpec& spec,
                                   const HloValidationOptions& options) {
  ValidationResult r{.backend = "hlo",
                     .router = "model",
                     .routing = std::string(RoutingCaseName(options.routing)),
                     .phase = std::string(PhaseName(options.phase)),
                     .devices = spec.num_devices(),
                     .parallelism = spec.parallelism,
                     .tolerance = options.tolerance > 0 ? options.tolerance : ToleranceFor(spec)};
  auto refuse = [&](std::string message, absl::string_view cause = "parameters") {
    r.cause = std::string(cause);
    r.message = std::move(message);
    return r;
  };
  // The reference: dense_einsum on one device.
  StepSpec layout = spec;
  layout.backend = "dense_einsum";
  layout.phase = options.phase;
  layout.parallelism = Parallelism{};
  absl::StatusOr<LoweredStep> ref = LowerStep(layout);
  if (!ref.ok()) return refuse(std::string(ref.status().message()));
  LoweredStep step{.spec = spec, .module = std::move(module)};
  step.spec.phase = options.phase;
  step.spec.backend = "hlo";
  step.parameters = UserParameters(*ref);
  std::vector<std::string> names;
  for (const TensorSpec& t : step.parameters) names.push_back(t.name);
  const Computation* entry = step.module->entry();
  if (entry == nullptr || entry->root() == nullptr) return refuse("expected an entry computation");
  const int64_t given = entry->parameter_count();
  const int64_t expected = static_cast<int64_t>(step.parameters.size());
  // Shapes first (a module for another model says so at parameter 0), then the count.
  std::string shape_error;
  for (int64_t i = 0; i < given && i < expected; ++i) {
    const TensorSpec& t = step.parameters[i];
    std::vector<int64_t> local = t.global_dims;
    for (size_t d = 0; d < local.size(); ++d) {
      for (MeshAxis axis : t.split[d]) local[d] /= MeshAxisSize(spec.parallelism, axis);
    }
    const Shape& shape = entry->parameter(i)->shape();
    if (shape.dimensions() != local) {
      shape_error = absl::StrCat(
          "parameter ", i, " (", t.name, ", ", t.dims, "): expected per-device shape [",
          absl::StrJoin(local, ","), "] for model ", spec.model.name(), " and ",
          ParallelismToString(spec.parallelism), "; got ", shape.ToString(false));
      if (i == 0 || given == expected) return refuse(shape_error);
      break;
    }
  }
  if (given != expected) {
    return refuse(absl::StrCat(
        "expected an entry computation with ", expected, " parameters (",
        absl::StrJoin(names, ", "), ") for model ", spec.model.name(), " (",
        PhaseName(options.phase), "); got ", given,
        given < expected
            ? ": a module jitted with JAX's default keep_unused=False drops the parameters it "
              "does not read; jit with keep_unused=True to keep every parameter in order"
            : "",
        options.phase == Phase::kForward && given == expected + 1
            ? ": one more than the forward's, as a gradient module has (its cotangent dy last); "
              "validate it with --phase fwd_bwd"
            : "",
        shape_error.empty() ? "" : absl::StrCat(" (", shape_error, ")")));
  }
  // Outputs: y and every gradient, or (fwd_bwd) the gradients alone, as jax.grad returns them.
  std::vector<TensorSpec> outputs = UserOutputs(*ref, step.parameters);
  const int64_t output_count = OutputCount(*step.module);
  int64_t first_output = 0;
  if (options.phase == Phase::kForwardBackward &&
      output_count == static_cast<int64_t>(outputs.size()) - 1) {
    first_output = 1;
  }
  if (options.phase == Phase::kForward) {
    outputs.resize(1);
  } else if (output_count != static_cast<int64_t>(outputs.size()) - first_output) {
    std::vector<std::string> output_names;
    for (const TensorSpec& o : outputs) output_names.push_back(o.name);
    return refuse(absl::StrCat("expected ", outputs.size(), " outputs (",
                               absl::StrJoin(output_names, ", "), ") or the ", outputs.size() - 1,
                               " gradients alone for --phase fwd_bwd; got ", output_count));
  }
  step.outputs.assign(outputs.begin() + first_output, outputs.end());

  // The static checks: roles from the parameter order, dimension names from the model.
  std::string check;
  absl::Status checks =
      CheckUserModule(*step.module, step.parameters, RouterType(spec.model), &check);

  ReferenceCache cache(options.memory_budget_bytes);
  std::vector<Literal> global = MakeGlobalInputs(*ref, options.routing, options.seed);
  absl::StatusOr<const std::vector<Literal>*> want = cache.Get(layout, global, "hlo");
  if (!want.ok()) return refuse(absl::StrCat("reference: ", want.status().message()), "reference");
  absl::StatusOr<std::vector<Literal>> got =
      RunUnsharded(step, global, options.memory_budget_bytes);
  if (!got.ok()) return refuse(absl::StrCat("run: ", got.status().message()), "run");

  r.pass = true;
  const TensorError* worst = nullptr;
  for (size_t o = 0; o < step.outputs.size(); ++o) {
    r.errors.push_back(Compare(step.outputs[o], (*got)[o], (**want)[first_output + o]));
  }
  for (const TensorError& e : r.errors) {
    if (e.non_finite > 0 || e.max_rel_error > r.tolerance) {
      worst = &e;
      break;
    }
  }
  if (worst != nullptr) {
    r.pass = false;
    r.diverging_output = worst->tensor;
    r.cause = worst->non_finite > 0 ? "non_finite" : "mismatch";
    r.message = absl::StrCat(
        worst->tensor, " differs from the reference at ", IndexString(worst->index), ": got ",
        Exact(worst->got), ", want ", Exact(worst->want), " (relative error ", worst->max_rel_error,
        " > ", r.tolerance,
        worst->non_finite > 0 ? absl::StrCat(", ", worst->non_finite, " NaN/Inf") : "", ")");
    if (worst != &r.errors.front()) {
      std::vector<std::string> matching;
      for (const TensorError* e = &r.errors.front(); e != worst; ++e) matching.push_back(e->tensor);
      absl::StrAppend(&r.message, "; ", absl::StrJoin(matching, ", "), " match");
    }
    // What the numbers say about why (y only: the forward is where these causes show).
    if (worst->tensor == "y") {
      const Literal& y_got = (*got)[0];
      const Literal& y_want = (**want)[0];
      const ZeroRows zero = ZeroTokenRows(y_got, y_want);
      absl::StatusOr<TensorError> flipped = CompareWithFlippedRenormalisation(
          layout, global, step.outputs[0], y_got, options.memory_budget_bytes);
      if (zero.count > 0) {
        r.cause = "dropped_tokens";
        absl::StrAppend(&r.message, ": tokens dropped: ", zero.count, " of ",
                        y_want.shape().dimensions(0),
                        " tokens' output rows are all zero where the reference's are not (first: "
                        "token ",
                        zero.first,
                        "), in a layer the model declares dropless (a capacity limit or a "
                        "receive buffer too small for the routing)");
      } else if (flipped.ok() && flipped->non_finite == 0 &&
                 flipped->max_rel_error <= r.tolerance) {
        const bool model_renormalises = spec.model.proto().router().renormalize();
        r.cause = "renormalisation";
        absl::StrAppend(
            &r.message, ": y matches the reference with the top-k weights ",
            model_renormalises ? "not renormalised" : "renormalised", " (relative error ",
            flipped->max_rel_error, "): ",
            model_renormalises
                ? "missing renormalisation: the model renormalises the k combine weights to "
                  "sum 1 (router renormalize: true) and the module does not"
                : "the module renormalises the k combine weights and the model does not "
                  "(router renormalize: false)");
      } else if (const int64_t matching = MatchingTokenRows(y_got, y_want, r.tolerance);
                 matching > 0) {
        const int64_t tokens = y_want.shape().dimensions(0);
        absl::StrAppend(&r.message, ": ", tokens - matching, " of ", tokens,
                        " tokens' rows differ and the other ", matching,
                        " match: a fault confined to some tokens (their routing, or expert "
                        "assignments dropped)");
      }
    }
  }
  if (!checks.ok()) {
    // A static finding is the cause whatever the numbers say (with D == F a transposed weight
    // still runs); the numbers follow it.
    r.pass = false;
    r.cause = check;
    r.message = absl::StrCat("static check: ", checks.message(),
                             r.message.empty() ? "" : absl::StrCat("; the numbers: ", r.message));
  }
  return r;
}

}  // namespace perfsim
