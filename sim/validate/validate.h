// Cross-backend numerics: runs a backend's lowered step in the reference interpreter and
// compares its output and every gradient with the dense_einsum reference on one device.
//
//   ValidationCase c{.spec = spec, .routing = RoutingCase::kEmptyExperts};
//   ValidationResult r = ValidateCase(c, cache);
//   r.pass, r.errors[i].max_rel_error, r.message
//
// Inputs (global, then sharded as each backend's TensorSpecs say), from a SplitMix64 stream of
// the seed: x uniform in [-1, 1) with feature 0 fixed to 1 (so router column 0 acts as a
// per-expert logit offset the routing cases steer); router_w uniform in [-1, 1); router_bias
// uniform in [-0.25, 0.25), router_score_bias in [-0.1, 0.1); wi_* uniform in [-1, 1)/√D, wo and
// ws_o uniform in [-1, 1)/√F; dy uniform.
// Routing cases add to router_w[0, e] (the first four are the default sweep, AllRoutingCases):
//   random        nothing
//   skewed        +3·e/E                 (uneven group sizes)
//   empty_experts −30 for every third e  (those experts get no tokens)
//   one_expert    +30 for e = E/2        (every token picks it; the other K−1 picks are random)
//   tiny_scores   −18.4 for every e      (sigmoid scores around 1e-8, known_bugs.md #28)
//   adversarial   every token picks K experts of the last ep shard, and each sender's count per
//                 expert is ≡ 1 mod align_size where the counts allow it (AdversarialPicks):
//                 the receive buffers' worst case (known_bugs.md #10). x's features 1..E carry
//                 the picks (1 or 0) and router_w is −30 on row 0 and +60 at [1 + e, e], so
//                 every router family picks exactly them (needs D > E).
// ValidateLowered runs `adversarial` itself, once per module, on every module with a declared
// ragged-all-to-all (after the case's own routing passes).
//
// Error metric, per tensor: max_i |got_i − want_i| / max_i |want_i| (the ∞-norm relative
// error), with the index of the largest |got − want|. A NaN or Inf where the reference is finite
// fails the case whatever the tolerance (a poisoned row reached the output).
#ifndef PERFSIM_SIM_VALIDATE_VALIDATE_H_
#define PERFSIM_SIM_VALIDATE_VALIDATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/hw/chip.h"
#include "sim/ir/literal.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

// The default of `perfsim validate --memory-budget`, and the budget each interpreter run of a
// validation is held to (the interpreter's own default).
inline constexpr int64_t kDefaultValidationMemoryBudgetBytes = int64_t{4} << 30;

enum class RoutingCase { kRandom, kSkewed, kEmptyExperts, kOneExpert, kTinyScores, kAdversarial };
absl::string_view RoutingCaseName(RoutingCase routing);
// Any of the six names.
absl::StatusOr<RoutingCase> ParseRoutingCase(absl::string_view text);
// The default sweep: random, skewed, empty_experts, one_expert.
std::vector<RoutingCase> AllRoutingCases();

// The K experts each of a device's T_l tokens picks under the adversarial routing: all on the
// last ep shard's E_l experts (and, when K > E_l, the next experts after them), each expert's
// count c ≤ T_l the largest c ≡ 1 mod A that still lets the later experts take the rest;
// filled column-major into the [T_l, K] grid so that no token picks an expert twice.
std::vector<std::vector<int64_t>> AdversarialPicks(const StepSpec& spec);

// A router family to validate with: the model's router replaced by one of each kind.
//   softmax_topk       softmax over E, top-k (HF Mixtral without renormalisation)
//   softmax_topk_norm  the same, renormalised over K (Qwen3's norm_topk_prob)
//   topk_softmax       top-k of the logits, softmax over K, with GPT-OSS's router bias
//                      (l = x·W + b, b trained)
//   sigmoid_grouped    DeepSeek-V3: sigmoid, score-correction bias for the choice, group
//                      limit, renormalised, ×2.5
//   sigmoid_prescale   Llama 4: top-1, x·σ(l) into the expert, combine weight 1
enum class RouterFamily { kModel, kSoftmaxTopK, kSoftmaxTopKNorm, kTopKSoftmax, kSigmoidGrouped,
                          kSigmoidPrescale };
absl::string_view RouterFamilyName(RouterFamily family);
absl::StatusOr<RouterFamily> ParseRouterFamily(absl::string_view text);
std::vector<RouterFamily> AllRouterFamilies();
// The model with its router replaced by `family` (kModel: unchanged).
absl::StatusOr<ModelConfig> WithRouter(const ModelConfig& model, RouterFamily family);

struct TensorError {
  std::string tensor;
  double max_rel_error = 0;
  std::vector<int64_t> index;  // of the largest |got − want|
  double got = 0;
  double want = 0;
  int64_t non_finite = 0;      // NaN/Inf count where the reference is finite
};

struct ValidationResult {
  std::string backend;
  std::string router;
  std::string routing;
  std::string phase;
  int64_t devices = 1;
  Parallelism parallelism;     // how the devices were used
  bool pass = false;
  bool skipped = false;        // the backend does not support the combination
  // The case needs more memory than ValidationCase::memory_budget_bytes (known before anything
  // is allocated): bad input, not a failed check. `message` says need vs budget.
  bool over_budget = false;
  double tolerance = 0;
  std::vector<TensorError> errors;
  std::string message;         // why it failed or was skipped
  // validate --hlo: what the failure was traced to, one of "parameters" (the entry does not
  // fit the contract), "reference" or "run" (either did not run), "contracting_dimensions",
  // "router_precision", "combine_order" (static checks), "dropped_tokens", "renormalisation",
  // "non_finite", "mismatch" (the numbers, no cause found); "" when it passed.
  // `diverging_output`: the first output over the tolerance.
  std::string cause;
  std::string diverging_output;
};

struct ValidationCase {
  StepSpec spec;
  RouterFamily router = RouterFamily::kModel;
  RoutingCase routing = RoutingCase::kRandom;
  uint64_t seed = 1;
  // When set, every kernel custom-call is fit-checked against this chip's VMEM first
  // (sim/fit/module_fit.h); a misfit fails the case with the numbers.
  const Chip* chip = nullptr;
  // The tolerance on the ∞-norm relative error; 0 = ToleranceFor(spec).
  double tolerance = 0;
  // Each interpreter run of the case is refused beyond it (before it allocates).
  int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes;
};

// Tolerance on the ∞-norm relative error. f32 models: 1e-5 (f32's unit roundoff is 6e-8; the
// backends and the reference sum the same products in different orders).
// bf16 weights or activations: 16·u with u = 2^-8, bf16's unit roundoff (8 significant bits;
// half an ulp at 1). Every op's result is stored rounded to bf16, so a backend and the dense
// reference differ where they round at different points: on the forward path x -> y there are
// 8 roundings a backend may place differently (h0, h1, σ(h0), h0·σ, ·h1, the wo product, the
// combine weight's cast, the weighted sum), each at most u relative to a value no larger than
// max |want|; both sides rounding the opposite way is 2·8·u = 16u. The backward paths are a
// few roundings longer, where errors of independent sign add like a random walk (√20·u ≈ 4.5u).
// Measured on nano_bf16, 320 cases (validate_test.cc Bf16BackendsStayWithinTheStatedBound):
// worst 1.41e-2 = 3.6u (d_wi_0), y 1.08e-2 = 2.75u: the bound has 4.4x headroom, while the bugs
// validate exists for (a transposed weight, a dropped token, a wrong renormalisation) give
// errors of order 1.
double ToleranceFor(const StepSpec& spec);

// Reference outputs, cached by the caller's key (model, phase, tokens, routing, seed, and for
// the adversarial routing the parallelism and align_size its picks depend on) together with a
// fingerprint of the inputs, so a key that forgets a dependency cannot return another case's
// outputs. Also remembers which modules have had their adversarial run (once per module).
class ReferenceCache {
 public:
  // Reference runs are refused beyond `memory_budget_bytes` (before they allocate).
  explicit ReferenceCache(int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes)
      : memory_budget_bytes_(memory_budget_bytes) {}

  absl::StatusOr<const std::vector<Literal>*> Get(const StepSpec& spec,
                                                  const std::vector<Literal>& inputs,
                                                  const std::string& key);
  // True the first time `module_key` is asked for.
  bool FirstAdversarialRun(const std::string& module_key);

 private:
  int64_t memory_budget_bytes_;
  std::map<std::string, std::vector<Literal>> outputs_;
  std::set<std::string> adversarial_done_;
};

// Global inputs for `step`'s parameters.
std::vector<Literal> MakeGlobalInputs(const LoweredStep& step, RoutingCase routing,
                                      uint64_t seed);
// Device `device`'s shard of a global tensor.
Literal ShardOf(const Literal& global, const TensorSpec& spec, const Parallelism& p,
                int64_t device);
// The global tensor from every device's shard; replicas must agree bit for bit, else an error
// naming the tensor, the index and both values.
absl::StatusOr<Literal> Unshard(const std::vector<Literal>& shards, const TensorSpec& spec,
                                const Parallelism& p);
// Runs `step` on every device's shard of the `global` inputs (one per step.parameters) and
// returns every output unsharded (one per step.outputs).
absl::StatusOr<std::vector<Literal>> RunUnsharded(
    const LoweredStep& step, const std::vector<Literal>& global,
    int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes);

// Runs an already-lowered step (possibly mutated by a test) against the reference.
ValidationResult ValidateLowered(const LoweredStep& step, const ValidationCase& c,
                                 ReferenceCache& cache);
// Lowers c.spec (with c.router) and validates it.
ValidationResult ValidateCase(const ValidationCase& c, ReferenceCache& cache);

}  // namespace perfsim


namespace perfsim {

// The cross product `perfsim validate` runs. Empty lists mean "all".
struct SuiteOptions {
  StepSpec base;                          // model, tokens, knobs
  std::vector<std::string> backends;      // names
  std::vector<RouterFamily> routers;
  std::vector<RoutingCase> routings;
  std::vector<Phase> phases;
  std::vector<int64_t> devices;           // 1, 2, 4, 8 by default
  // When set, every backend runs with exactly this parallelism instead of its default for each
  // device count.
  std::optional<Parallelism> parallelism;
  uint64_t seed = 1;
  const Chip* chip = nullptr;  // fit-check kernels against it (ValidationCase::chip)
  double tolerance = 0;        // ValidationCase::tolerance
  int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes;  // every interpreter run
};

std::vector<ValidationResult> RunSuite(const SuiteOptions& options);

// `perfsim validate --hlo`: a user's module compared with the reference MoE of `spec.model`.
// Entry parameters in the order: x [T_l, D], router_w [D, E], wi_0 [E_l, D, F],
// wi_1 [E_l, D, F], wo [E_l, F, D], then the optional extras the model implies: the router
// matmul bias router_bias [E] (router.has_bias), DeepSeek-V3's score-correction bias
// router_score_bias [E] (router.has_score_correction_bias), and the shared expert
// ws_0 [D, H], ws_1 [D, H], ws_o [H, D] when the model has one — the order LowerStep uses, so
// `perfsim lower --phase fwd` output validates as is — and for fwd_bwd the cotangent dy [T_l, D]
// last. Outputs: fwd y [tokens, D] (the first element of a tuple root); fwd_bwd y and then one
// gradient per parameter (dx, d_router_w, d_wi_0, ...: the order `perfsim lower --phase
// fwd_bwd` writes), or the gradients alone (what jax.grad returns), each compared.
// `spec.parallelism` says how the inputs are sharded: x over dp·fsdp·ep, experts over ep, every
// weight's D over fsdp (F is never split). Dims taken from the module must match the model's.
//
// Before any numbers, the static checks of user_module_checks.h run on the module (roles from
// the parameter order, dimension names from the model); a failure is the case's cause. When the
// numbers differ, the message names the first output that diverges and, where the numbers tell,
// why: rows of tokens that come out zero (tokens dropped in a dropless layer), or outputs that
// match the reference with the top-k weights renormalised the other way.
struct HloValidationOptions {
  Phase phase = Phase::kForward;
  RoutingCase routing = RoutingCase::kRandom;
  uint64_t seed = 1;
  double tolerance = 0;  // 0 = ToleranceFor(spec)
  int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes;
};
ValidationResult ValidateHloModule(std::unique_ptr<Module> module, const StepSpec& spec,
                                   const HloValidationOptions& options);
// The forward, as above.
inline ValidationResult ValidateHloModule(
    std::unique_ptr<Module> module, const StepSpec& spec, RoutingCase routing, uint64_t seed,
    int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes) {
  return ValidateHloModule(std::move(module), spec,
                           HloValidationOptions{.routing = routing,
                                                .seed = seed,
                                                .memory_budget_bytes = memory_budget_bytes});
}

// What validating `spec`'s model and tokens holds at least, known before anything is
// allocated: the global inputs every case makes (MakeGlobalInputs) plus the run of the dense
// reference on one device (its interpreter MemoryNeed), for the dense_einsum lowering of
// `phase`. Each case's own sharded run adds to it; it is refused on its own if beyond the
// budget. InvalidArgument when a byte count overflows int64.
struct ValidationMemory {
  int64_t total_bytes = 0;
  int64_t input_bytes = 0;      // global inputs
  int64_t reference_bytes = 0;  // the reference run's MemoryNeed::total_bytes
};
absl::StatusOr<ValidationMemory> EstimateValidationMemory(const StepSpec& spec, Phase phase);

// OK when EstimateValidationMemory(spec, phase) is within `budget_bytes`; else
// ResourceExhausted with need vs budget:
//   "validate: the dense reference of batch 10000 x seq 10000 tokens (fwd_bwd) needs
//    2697200702900 bytes (global inputs 32000351408 + reference run 2665200351492); budget
//    4294967296 bytes (--memory-budget): expected a need within the budget"
absl::Status CheckValidationMemory(const StepSpec& spec, Phase phase, int64_t budget_bytes);

// What one case of `step` holds at its peak, before anything is allocated: the global inputs
// plus the larger of the reference run and the step's own run on its devices. OK within
// `budget_bytes`, else ResourceExhausted with need vs budget (ValidateLowered marks the case
// over_budget). Run after the static and fit checks, so a misfit is still reported as such.
absl::Status CheckCaseMemory(const LoweredStep& step, int64_t budget_bytes);

}  // namespace perfsim
#endif  // PERFSIM_SIM_VALIDATE_VALIDATE_H_
