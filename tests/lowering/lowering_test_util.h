// Step specs and validation-suite checks the lowering and validate tests share.
//
//   StepSpec spec = TestStepSpec("nano", "megablox_gmm", Phase::kForward);  // 4 x 16 tokens
//   StepSpec square = WithSquareExperts(spec);                              // F = D
//   EXPECT_EQ(ExpectAllPass(RunSuite(options)), 160);
#ifndef PERFSIM_TESTS_LOWERING_LOWERING_TEST_UTIL_H_
#define PERFSIM_TESTS_LOWERING_LOWERING_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sim/moe/model_registry.h"
#include "sim/moe/step_spec.h"
#include "sim/validate/validate.h"

namespace perfsim {
namespace testing {

// StepSpec::Defaults of `model` (a built-in name or a textproto path, as ResolveModel takes)
// for `backend` and `phase`, with `batch` sequences of `seq` tokens: by default 4 x 16, the
// size the nano tests run at.
inline StepSpec TestStepSpec(const std::string& model, const std::string& backend, Phase phase,
                             int64_t batch = 4, int64_t seq = 16) {
  absl::StatusOr<ModelConfig> m = ResolveModel(model);
  EXPECT_TRUE(m.ok()) << m.status();
  StepSpec spec = StepSpec::Defaults(*m);
  spec.batch = batch;
  spec.seq = seq;
  spec.phase = phase;
  spec.backend = backend;
  return spec;
}

// `spec` with its model's proto changed by `edit` (and loaded again, so validated).
inline StepSpec WithModel(StepSpec spec, const std::function<void(ModelSpec&)>& edit) {
  ModelSpec proto = spec.model.proto();
  edit(proto);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(proto);
  EXPECT_TRUE(model.ok()) << model.status();
  spec.model = *model;
  return spec;
}

// `spec` with square experts, F = D (40 for nano), in a model named "<name>_square": a weight
// read transposed, or with K and N swapped, keeps every shape, so only names or numbers can
// tell (known_bugs.md #1's silent form).
inline StepSpec WithSquareExperts(StepSpec spec) {
  return WithModel(std::move(spec), [](ModelSpec& m) {
    m.set_name(m.name() + "_square");
    m.set_expert_ffn_dim(m.d_model());
  });
}

// Every case of a validation suite ran (none skipped) and passed, each judged at `tolerance`
// when one is given. Returns how many passed.
inline int ExpectAllPass(const std::vector<ValidationResult>& results,
                         std::optional<double> tolerance = std::nullopt) {
  int passed = 0;
  for (const ValidationResult& r : results) {
    EXPECT_TRUE(r.pass && !r.skipped)
        << r.router << " " << r.routing << " " << r.phase << " " << r.devices << ": " << r.message;
    if (tolerance.has_value()) {
      EXPECT_EQ(r.tolerance, *tolerance);
    }
    passed += r.pass ? 1 : 0;
  }
  return passed;
}

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_LOWERING_LOWERING_TEST_UTIL_H_
