// Helpers shared by the files of sim/validate (validate.cc, validate_inputs.cc,
// validate_suite.cc, block_validate.cc). Include only from sim/validate.
#ifndef PERFSIM_SIM_VALIDATE_VALIDATE_INTERNAL_H_
#define PERFSIM_SIM_VALIDATE_VALIDATE_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/ir/literal.h"
#include "sim/lowering/lowering.h"
#include "sim/validate/validate.h"

namespace perfsim {

// SplitMix64: a small, well-mixed stream; the same seed gives the same inputs everywhere (the
// MoE cases' inputs, validate_inputs.cc, and the blocks', block_validate.cc).
class SplitMixStream {
 public:
  explicit SplitMixStream(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0; }
  // Uniform in [0, n).
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

// The reference's cache key part for a model, phase and token count.
std::string ModelKey(const StepSpec& spec);

// The ∞-norm relative error of `got` against `want` (validate.h), with the worst index.
TensorError Compare(const TensorSpec& spec, const Literal& got, const Literal& want);

std::string IndexString(const std::vector<int64_t>& index);

// A value with 9 significant digits, enough to tell two f32 values apart ("0.0710572" for both
// of 0.071057193 and 0.071057196 would hide the difference a message reports).
std::string Exact(double value);

}  // namespace perfsim

#endif  // PERFSIM_SIM_VALIDATE_VALIDATE_INTERNAL_H_
