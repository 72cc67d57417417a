// Helpers shared by the files of sim/validate (validate.cc, validate_inputs.cc,
// validate_suite.cc). Include only from sim/validate.
#ifndef PERFSIM_SIM_VALIDATE_VALIDATE_INTERNAL_H_
#define PERFSIM_SIM_VALIDATE_VALIDATE_INTERNAL_H_

#include <string>
#include <vector>

#include "sim/ir/literal.h"
#include "sim/lowering/lowering.h"
#include "sim/validate/validate.h"

namespace perfsim {

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
