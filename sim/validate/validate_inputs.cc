// Validation inputs: the routing cases (validate.h) and the adversarial routing that fills the
// ragged-all-to-all receive buffers.
#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/validate/validate.h"
#include "sim/validate/validate_internal.h"

namespace perfsim {
namespace {

// σ(−18.4) ≈ 1.0e-8: the offset that puts sigmoid scores around 1e-8 (known_bugs.md #28).
constexpr double kTinyScoreOffset = -18.4;
// The adversarial routing's logits: −30 for experts not picked, +30 for the picks.
constexpr double kAdversarialBase = -30;
constexpr double kAdversarialPick = 60;

}  // namespace

std::vector<std::vector<int64_t>> AdversarialPicks(const StepSpec& spec) {
  const int64_t n = spec.tokens_per_device(), k = spec.model.experts_per_token(),
                e = spec.model.num_experts(), ep = spec.parallelism.ep;
  const int64_t e_l = e / ep, align = spec.knobs.align_size;
  // The last shard's experts first, then the others in order.
  std::vector<int64_t> order;
  for (int64_t i = 0; i < e; ++i) order.push_back(((ep - 1) * e_l + i) % e);
  // Counts: the shard's experts take all n·K assignments when they can (each at most n, one per
  // token), each as the largest value ≡ 1 mod A that leaves the rest placeable.
  std::vector<int64_t> sequence;
  int64_t remaining = n * k;
  for (int64_t i = 0; i < e && remaining > 0; ++i) {
    const int64_t after = (i < e_l ? e_l - i - 1 : e - i - 1) * n;
    const int64_t lower = std::max<int64_t>(0, remaining - after);
    const int64_t upper = std::min(n, remaining);
    int64_t count = upper;
    if (align > 1) {
      for (int64_t c = upper; c >= lower && c >= 0; --c) {
        if (c % align == 1) {
          count = c;
          break;
        }
      }
    }
    sequence.insert(sequence.end(), count, order[i]);
    remaining -= count;
  }
  // Column-major into [n, K]: an expert's run of at most n cells never meets a token twice.
  std::vector<std::vector<int64_t>> picks(n);
  for (size_t j = 0; j < sequence.size(); ++j) picks[j % n].push_back(sequence[j]);
  return picks;
}

std::vector<Literal> MakeGlobalInputs(const LoweredStep& step, RoutingCase routing,
                                      uint64_t seed) {
  const int64_t d = step.spec.model.d_model(), f = step.spec.model.expert_ffn_dim();
  const int64_t e = step.spec.model.num_experts();
  const bool adversarial = routing == RoutingCase::kAdversarial && d > e;
  const std::vector<std::vector<int64_t>> picks =
      adversarial ? AdversarialPicks(step.spec) : std::vector<std::vector<int64_t>>{};
  std::vector<Literal> inputs;
  for (size_t p = 0; p < step.parameters.size(); ++p) {
    const TensorSpec& t = step.parameters[p];
    Literal lit(Shape::Array(t.type, t.global_dims));
    SplitMixStream stream(seed * 1000003 + p);
    double scale = 1;
    if (t.name == "wi_0" || t.name == "wi_1" || t.name == "ws_0" || t.name == "ws_1") {
      scale = 1 / std::sqrt(static_cast<double>(d));
    } else if (t.name == "wo" || t.name == "ws_o") {
      scale = 1 / std::sqrt(static_cast<double>(f));
    } else if (t.name == "router_bias") {
      scale = 0.25;  // a fraction of the logits' spread (≈ 2), enough to change choices
    } else if (t.name == "router_score_bias") {
      scale = 0.1;  // comparable to the spread of sigmoid scores in (0, 1)
    }
    for (int64_t i = 0; i < lit.element_count(); ++i) lit.SetFromDouble(i, stream.Uniform() * scale);
    if (t.name == "x") {
      for (int64_t row = 0; row < t.global_dims[0]; ++row) {
        lit.SetFromDouble(row * d, 1.0);
        if (!adversarial) continue;
        // Token `row` is local token row % T_l of its device: features 1..E mark its picks.
        const std::vector<int64_t>& mine = picks[row % static_cast<int64_t>(picks.size())];
        for (int64_t j = 0; j < e; ++j) {
          const bool picked = std::find(mine.begin(), mine.end(), j) != mine.end();
          lit.SetFromDouble(row * d + 1 + j, picked ? 1.0 : 0.0);
        }
      }
    }
    if (t.name == "router_w") {
      for (int64_t j = 0; j < e; ++j) {
        if (adversarial) {
          for (int64_t row = 0; row < d; ++row) {
            const double w = row == 0 ? kAdversarialBase : row == 1 + j ? kAdversarialPick : 0;
            lit.SetFromDouble(row * e + j, w);
          }
          continue;
        }
        double offset = 0;
        switch (routing) {
          case RoutingCase::kRandom:
          case RoutingCase::kAdversarial: break;  // D <= E: no adversarial layout, random
          case RoutingCase::kSkewed: offset = 3.0 * j / e; break;
          case RoutingCase::kEmptyExperts: offset = j % 3 == 0 ? -30 : 0; break;
          case RoutingCase::kOneExpert: offset = j == e / 2 ? 30 : 0; break;
          case RoutingCase::kTinyScores: offset = kTinyScoreOffset; break;
        }
        lit.SetFromDouble(j, lit.GetAsDouble(j) + offset);
      }
    }
    inputs.push_back(std::move(lit));
  }
  return inputs;
}

}  // namespace perfsim
