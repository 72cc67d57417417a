// Forgiving readers for the free-text cells of published measurements.
//
//   ParseKeyValues("groups=4; M_per_group=8192; N=4096; K=7168")
//     -> {{"groups","4"}, {"M_per_group","8192"}, {"N","4096"}, {"K","7168"}}, phrases {}
//   ParseKeyValues("rhs (E=64, K x N=4096x2048); touched weight bytes 240 MiB")
//     -> {{"E","64"}, {"K x N","4096x2048"}}, phrases {"rhs", "touched weight bytes 240 MiB"}
//   LeadingInteger("4096 tokens per rank") -> 4096
//   ParseDimsPair("30x3") -> {30, 3};  FindSliceShape("8x4 slice (no wraparound)") -> "8x4"
//   ParseByteSize("33.5 MB") -> 33.5e6;  ParseByteSize("240 MiB") -> 251658240
//   ResolveHardwareName("TPU v7x (one TensorCore)") -> "tpu_v7x"
//   ResolveHardware("SM90 (Hopper; SKU not stated)") -> {"gpu_h100", "the Hopper SKU is ..."}
//   ParseOpShape("fwd FC1: M~32768 (4 groups x ~8192), N=4096, K=7168")
//     -> {{"M","32768"}, {"groups","4"}, {"M_per_group","8192"}, {"N","4096"}, {"K","7168"}},
//        approximate {"M", "groups", "M_per_group"}
//   ParseOpShape("[262144,2560] x [64,2560,1280]")
//     -> {{"m","262144"}, {"K","2560"}, {"groups","64"}, {"N","1280"}}
//   FindDtypeWord("dispatch FP8, combine BF16", "combine") -> kBF16
//
// Each returns nullopt (or empty) when the text does not have the expected form; the caller
// decides whether that is an error or a reason to skip the row.
#ifndef PERFSIM_SIM_ACCURACY_TEXT_FIELDS_H_
#define PERFSIM_SIM_ACCURACY_TEXT_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {

struct KeyValues {
  std::vector<std::pair<std::string, std::string>> pairs;  // trimmed, in order
  std::vector<std::string> phrases;                        // pieces without '=' or '~'
  // Keys whose value was written as approximate ("M~32768", "M ≈ 32768", "x ~8192").
  std::vector<std::string> approximate;

  // The value of the first key equal to one of `keys` (exact match), or nullopt.
  std::optional<std::string> Find(std::initializer_list<absl::string_view> keys) const;
};

// Splits at ';', ',', '(', ')' and ':' (not inside [...]; ':' ends a label such as
// "gmm fwd: m=262144"); pieces with '=' become key/value pairs (split at the first '='), pieces
// "key~value" or "key ≈ value" approximate pairs (listed in `approximate`), other non-empty
// pieces phrases.
KeyValues ParseKeyValues(absl::string_view text);

// ParseKeyValues, plus the pairs of the two ways people write a grouped matmul's shape
// without keys:
//   "G groups x R" (also "G groups x ~R")   -> groups = G, M_per_group = R
//   "[M,K] x [G,K,N]" (lhs times stacked rhs) -> m = M, K = K, groups = G, N = N
// Derived pairs come after the written ones, so a written key wins in KeyValues::Find. A
// product whose contraction sizes differ ("[8,16] x [4,32,8]") derives nothing.
KeyValues ParseOpShape(absl::string_view text);

// The largest integer the readers below return (2^31 - 1): no measured kernel has a bigger
// size, and the products the scenarios form of two such sizes stay inside int64.
inline constexpr int64_t kMaxCellInteger = (int64_t{1} << 31) - 1;

// A whole cell that is an integer in [0, kMaxCellInteger] ("4096", " 8 "), else nullopt.
std::optional<int64_t> ParseInteger(absl::string_view text);
// The integer that starts the text ("4096 tokens per rank" -> 4096, "2+ nodes" -> 2).
std::optional<int64_t> LeadingInteger(absl::string_view text);
// The integer right before `word` ("... 4 nodes" with word "node" -> 4), or nullopt.
std::optional<int64_t> IntegerBefore(absl::string_view text, absl::string_view word);
// "AxB" (also "A x B", "A×B") as two positive integers.
std::optional<std::pair<int64_t, int64_t>> ParseDimsPair(absl::string_view text);
// The first "AxB[xC...]" token of positive integers in the text ("8x4 slice ..." -> "8x4").
std::optional<std::string> FindSliceShape(absl::string_view text);
// "240 MiB", "33.5 MB", "1 GiB", "4096 B", "2 KB" -> bytes (decimal k/M/G/T, binary Ki/Mi/Gi/Ti).
std::optional<double> ParseByteSize(absl::string_view text);
// The first byte size found anywhere in the text ("touched weight bytes 240 MiB" -> 240 MiB).
std::optional<double> FindByteSize(absl::string_view text);

// A built-in chip name for a hardware cell ("H800 SXM5" -> "gpu_h800", "TPU v5e" -> "tpu_v5e",
// "gpu_h100" -> "gpu_h100"): the cell's words, lower-cased, contain the chip's model token
// ("h800", "v5e") and, for TPUs, "tpu". nullopt when no built-in chip matches.
std::optional<std::string> ResolveHardwareName(absl::string_view text);

// A built-in chip for a hardware cell, and the assumption made when the cell names only an
// architecture: "SM90" or "Hopper" without a SKU is simulated as gpu_h100 (the Hopper part
// with full NVLink 4 and 3.35 TB/s HBM3), "SM100" / "Blackwell" as gpu_b200, "SM80" /
// "Ampere" as gpu_a100. A named chip (ResolveHardwareName) wins and has no assumption.
struct HardwareMatch {
  std::string chip;
  std::string assumption;  // empty when the cell names the chip
};
std::optional<HardwareMatch> ResolveHardware(absl::string_view text);

// A dtype word: "bf16", "fp8" / "f8" / "e4m3" (f8e4m3fn), "e5m2", "fp16" / "f16", "fp32" / "f32",
// "int8"; nullopt otherwise. Case-insensitive.
std::optional<PrimitiveType> ParseDtypeWord(absl::string_view word);
// The dtype word that follows `label` in the text ("lhs bf16 (M,4096); rhs fp8" with label
// "rhs" -> f8e4m3fn; "FP8 e4m3 in" with label "" -> the first dtype word). nullopt if none.
std::optional<PrimitiveType> FindDtypeWord(absl::string_view text, absl::string_view label);
// The dtype word that precedes `label` ("FP8 e4m3 in (...), BF16 out" with label "out" -> bf16).
std::optional<PrimitiveType> FindDtypeWordBefore(absl::string_view text, absl::string_view label);

// Lower-cased words of the text: runs of ASCII letters, digits, '_' and '.'.
std::vector<std::string> Words(absl::string_view text);
// Whether the lower-cased text contains `needle` (lower-case).
bool ContainsNoCase(absl::string_view text, absl::string_view needle);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_TEXT_FIELDS_H_
