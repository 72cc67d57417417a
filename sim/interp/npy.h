// NumPy .npy files (format versions 1, 2 and 3, C order, little-endian) to and from Literals.
//
//   PERFSIM_ASSIGN_OR_RETURN(Literal x, ReadNpyFile("x.npy", PrimitiveType::kBF16));
//   PERFSIM_RETURN_IF_ERROR(WriteNpyFile("out0.npy", result.outputs[0][0]));
//
// dtypes: |b1 pred, |i1 <i2 <i4 <i8 s8..s64, |u1 <u2 <u4 <u8 u8..u64, <f2 f16, <f4 f32,
// <f8 f64, <c8 c64, <c16 c128. Types NumPy has no dtype for (bf16, every f8/f6/f4) are
// written as their bit patterns in the unsigned type of the same width (<u2 for bf16, |u1
// for f8), the convention of tests/testdata/hlo/jax/MANIFEST.json; ml_dtypes' '<V2' for
// bfloat16 is read as bf16.
// Reading with an expected element type reinterprets such bit-pattern files (u16 -> bf16 /
// f16, u8 -> f8) and rejects anything else that differs.
#ifndef PERFSIM_SIM_INTERP_NPY_H_
#define PERFSIM_SIM_INTERP_NPY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/ir/literal.h"

namespace perfsim {

// Parses the bytes of an .npy file. Errors are InvalidArgument "npy: expected X; got Y".
absl::StatusOr<Literal> ParseNpy(absl::string_view bytes);

// The .npy bytes of an array literal (format 1.0, or 2.0 when the header needs it).
absl::StatusOr<std::string> SerializeNpy(const Literal& literal);

// The largest .npy file ReadNpyFile reads: 4 GiB, more than the interpreter's default memory
// budget, so an array it refuses could not have been run anyway.
inline constexpr int64_t kMaxNpyBytes = int64_t{4} << 30;

// File versions; errors are prefixed with the path. With `expected_type`, the result has that
// element type (see the bit-pattern rule above) or the read fails. Only regular files are read
// (a directory or /dev/zero is refused by name); WriteNpyFile replaces its file atomically.
absl::StatusOr<Literal> ReadNpyFile(const std::string& path,
                                    std::optional<PrimitiveType> expected_type = std::nullopt);
absl::Status WriteNpyFile(const std::string& path, const Literal& literal);

}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_NPY_H_
