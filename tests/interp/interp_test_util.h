// Helpers for interpreter tests: build literals, parse and run HLO text, read results.
#ifndef PERFSIM_TESTS_INTERP_INTERP_TEST_UTIL_H_
#define PERFSIM_TESTS_INTERP_INTERP_TEST_UTIL_H_

#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/interp/interpreter.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/literal.h"
#include "sim/util/status.h"

namespace perfsim {
namespace testing {

// An array literal of `type` and `dims` holding `values` (converted as SetFromDouble does).
inline Literal MakeLiteral(PrimitiveType type, std::vector<int64_t> dims,
                           const std::vector<double>& values) {
  Literal literal(Shape::Array(type, dims));
  for (size_t i = 0; i < values.size(); ++i)
    literal.SetFromDouble(static_cast<int64_t>(i), values[i]);
  return literal;
}
inline Literal F32(std::vector<int64_t> dims, const std::vector<double>& values) {
  return MakeLiteral(PrimitiveType::kF32, std::move(dims), values);
}
inline Literal S32(std::vector<int64_t> dims, const std::vector<double>& values) {
  return MakeLiteral(PrimitiveType::kS32, std::move(dims), values);
}
// An s64 array literal holding `values` exactly (SetFromDouble would round values beyond 2^53,
// such as the int64 limit that overflow tests need).
inline Literal S64(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  Literal literal(Shape::Array(PrimitiveType::kS64, std::move(dims)));
  for (size_t i = 0; i < values.size(); ++i) {
    literal.SetFromInt64(static_cast<int64_t>(i), values[i]);
  }
  return literal;
}
inline Literal Bf16(std::vector<int64_t> dims, const std::vector<double>& values) {
  return MakeLiteral(PrimitiveType::kBF16, std::move(dims), values);
}

// A c64 array literal of `dims` holding `values` (each part rounded to f32).
inline Literal C64(std::vector<int64_t> dims, const std::vector<std::complex<double>>& values) {
  Literal literal(Shape::Array(PrimitiveType::kC64, std::move(dims)));
  for (size_t i = 0; i < values.size(); ++i) {
    const float parts[2] = {static_cast<float>(values[i].real()),
                            static_cast<float>(values[i].imag())};
    std::memcpy(literal.mutable_data().data() + i * sizeof(parts), parts, sizeof(parts));
  }
  return literal;
}

// The elements of a c64 or c128 literal.
inline std::vector<std::complex<double>> ComplexValues(const Literal& literal) {
  std::vector<std::complex<double>> out;
  const uint8_t* data = literal.data().data();
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    if (literal.shape().element_type() == PrimitiveType::kC64) {
      float parts[2];
      std::memcpy(parts, data + i * sizeof(parts), sizeof(parts));
      out.emplace_back(parts[0], parts[1]);
    } else {
      double parts[2];
      std::memcpy(parts, data + i * sizeof(parts), sizeof(parts));
      out.emplace_back(parts[0], parts[1]);
    }
  }
  return out;
}

inline std::vector<double> Values(const Literal& literal) {
  std::vector<double> out;
  for (int64_t i = 0; i < literal.element_count(); ++i) out.push_back(literal.GetAsDouble(i));
  return out;
}

// Parses `hlo` and runs it; inputs as RunModule takes them.
inline absl::StatusOr<RunResult> RunHlo(absl::string_view hlo,
                                        const std::vector<std::vector<Literal>>& inputs,
                                        InterpreterOptions options = {}) {
  PERFSIM_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, ParseHloModule(hlo));
  return RunModule(*module, inputs, options);
}

// Single device: the outputs of running `hlo` on `inputs`.
inline absl::StatusOr<std::vector<Literal>> Run1(absl::string_view hlo, std::vector<Literal> inputs,
                                                 InterpreterOptions options = {}) {
  std::vector<std::vector<Literal>> sets;
  sets.push_back(std::move(inputs));
  PERFSIM_ASSIGN_OR_RETURN(RunResult result, RunHlo(hlo, sets, options));
  return std::move(result.outputs[0]);
}

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_INTERP_INTERP_TEST_UTIL_H_
