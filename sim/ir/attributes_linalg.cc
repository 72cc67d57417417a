// Names of the enum attributes of fft and triangular-solve, spelled as XLA prints them
// (xla_data.proto FftType and TriangularSolveOptions::Transpose).
#include "sim/ir/attributes.h"

namespace perfsim {

absl::string_view FftTypeName(FftType type) {
  switch (type) {
    case FftType::kFft:
      return "FFT";
    case FftType::kIfft:
      return "IFFT";
    case FftType::kRfft:
      return "RFFT";
    case FftType::kIrfft:
      return "IRFFT";
  }
  return "FFT";
}

std::optional<FftType> ParseFftType(absl::string_view text) {
  for (FftType type : {FftType::kFft, FftType::kIfft, FftType::kRfft, FftType::kIrfft}) {
    if (text == FftTypeName(type)) return type;
  }
  return std::nullopt;
}

absl::string_view TriangularTransposeName(TriangularTranspose transpose) {
  switch (transpose) {
    case TriangularTranspose::kNoTranspose:
      return "NO_TRANSPOSE";
    case TriangularTranspose::kTranspose:
      return "TRANSPOSE";
    case TriangularTranspose::kAdjoint:
      return "ADJOINT";
  }
  return "NO_TRANSPOSE";
}

std::optional<TriangularTranspose> ParseTriangularTranspose(absl::string_view text) {
  for (TriangularTranspose t : {TriangularTranspose::kNoTranspose, TriangularTranspose::kTranspose,
                                TriangularTranspose::kAdjoint}) {
    if (text == TriangularTransposeName(t)) return t;
  }
  return std::nullopt;
}

}  // namespace perfsim
