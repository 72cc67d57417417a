// HLO text generated for tests of input-controlled limits (call depth, loops, device ids), so
// that no huge file is committed.
//
//   CallChainHlo(5000)   ENTRY main calls c1, which calls c2, ... c4999: 5000 computations
//                        nested, each passing an f32[] on (the last negates it)
//   CallFanOutHlo(100)   f100 calls f99 twice, each calling f98 twice...: 102 computations
//                        that expand to about 5 * 2^100 instructions
#ifndef PERFSIM_TESTS_IR_GENERATED_HLO_H_
#define PERFSIM_TESTS_IR_GENERATED_HLO_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace perfsim {
namespace testing {

// A module `chain` whose longest call chain has `depth` computations (depth >= 1).
inline std::string CallChainHlo(int64_t depth) {
  std::string text = "HloModule chain\n\n";
  // Callees first, so every name is defined before it is used.
  if (depth > 1) {
    absl::StrAppend(&text, "c", depth - 1,
                    " {\n  p = f32[] parameter(0)\n  ROOT r = f32[] negate(p)\n}\n\n");
  }
  for (int64_t i = depth - 2; i >= 1; --i) {
    absl::StrAppend(&text, "c", i, " {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), ",
                    "to_apply=c", i + 1, "\n}\n\n");
  }
  absl::StrAppend(&text, "ENTRY main {\n  x = f32[] parameter(0)\n");
  if (depth > 1) {
    absl::StrAppend(&text, "  ROOT r = f32[] call(x), to_apply=c1\n}\n");
  } else {
    absl::StrAppend(&text, "  ROOT r = f32[] negate(x)\n}\n");
  }
  return text;
}

// A module `fan` of `levels` + 2 computations where each f_i calls f_(i-1) twice: a walk
// that expands every call visits 2 + (5 * 2^levels - 3) instructions.
inline std::string CallFanOutHlo(int64_t levels) {
  std::string text =
      "HloModule fan\n\nf0 {\n  p = f32[] parameter(0)\n  ROOT r = f32[] negate(p)\n}\n\n";
  for (int64_t i = 1; i <= levels; ++i) {
    absl::StrAppend(&text, "f", i, " {\n  p = f32[] parameter(0)\n  a = f32[] call(p), to_apply=f",
                    i - 1, "\n  ROOT b = f32[] call(a), to_apply=f", i - 1, "\n}\n\n");
  }
  absl::StrAppend(&text,
                  "ENTRY main {\n  x = f32[] parameter(0)\n  ROOT r = f32[] call(x), to_apply=f",
                  levels, "\n}\n");
  return text;
}

// A while loop `w` whose condition is always true.
inline constexpr char kNeverEndingWhileHlo[] = R"(HloModule forever

cond {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}

body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(s, one)
}

ENTRY main {
  zero = s32[] constant(0)
  ROOT w = s32[] while(zero), condition=cond, body=body
}
)";

// A collective-permute `r` sending from device 0 to `device` (a permute's pairs need not cover
// every device, so the device id itself is what gets checked).
inline std::string FarDevicePermuteHlo(int64_t device) {
  return absl::StrCat(R"(HloModule far

ENTRY main {
  x = f32[8] parameter(0)
  ROOT r = f32[8] collective-permute(x), channel_id=1, source_target_pairs={{0,)",
                      device, R"(}}
}
)");
}

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_IR_GENERATED_HLO_H_
