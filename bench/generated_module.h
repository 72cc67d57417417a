// The benchmarks' modules, made or read in one place.
//
// MakeGeneratedModuleText: a chain of dot, exponential, reduce, broadcast, divide, transpose,
// reshape, compare and select blocks over f32[64,128], as many as give `instruction_count`
// instructions, each chain instruction followed by `metadata` (e.g. `, metadata={...}`, as XLA
// dumps have; parse_verify_bench times parsing it). cost_bench, parse_verify_bench and
// simulator_bench all use it.
// ParseCommittedModule: a module committed under the source tree, parsed; null if it cannot be
// read or parsed (the benchmark then reports the error).
#ifndef PERFSIM_BENCH_GENERATED_MODULE_H_
#define PERFSIM_BENCH_GENERATED_MODULE_H_

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "sim/ir/hlo_parser.h"

namespace perfsim {

inline std::string MakeGeneratedModuleText(int64_t instruction_count,
                                           absl::string_view md = "") {
  std::string text = "HloModule bench\n\n";
  absl::StrAppend(&text,
                  "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                  "  ROOT s = f32[] add(a, b)\n}\n\n");
  absl::StrAppend(&text, "ENTRY main {\n");
  absl::StrAppend(&text, "  x = f32[64,128]{1,0} parameter(0)\n");
  absl::StrAppend(&text, "  w = f32[128,128]{1,0} parameter(1)\n");
  absl::StrAppend(&text, "  zero = f32[] constant(0)\n");
  int64_t emitted = 3;
  std::string prev = "x";
  int64_t i = 0;
  while (emitted + 9 < instruction_count) {
    const std::string n = absl::StrCat(i++);
    absl::StrAppend(&text, "  d", n, " = f32[64,128]{1,0} dot(", prev,
                    ", w), lhs_contracting_dims={1}, rhs_contracting_dims={0}", md, "\n");
    absl::StrAppend(&text, "  e", n, " = f32[64,128]{1,0} exponential(d", n, ")", md, "\n");
    absl::StrAppend(&text, "  r", n, " = f32[64]{0} reduce(e", n,
                    ", zero), dimensions={1}, to_apply=add_f32", md, "\n");
    absl::StrAppend(&text, "  b", n, " = f32[64,128]{1,0} broadcast(r", n, "), dimensions={0}", md,
                    "\n");
    absl::StrAppend(&text, "  q", n, " = f32[64,128]{1,0} divide(e", n, ", b", n, ")", md, "\n");
    absl::StrAppend(&text, "  t", n, " = f32[128,64]{1,0} transpose(q", n, "), dimensions={1,0}", md,
                    "\n");
    absl::StrAppend(&text, "  s", n, " = f32[64,128]{1,0} reshape(t", n, ")", md, "\n");
    absl::StrAppend(&text, "  c", n, " = pred[64,128]{1,0} compare(s", n, ", d", n,
                    "), direction=GT", md, "\n");
    absl::StrAppend(&text, "  m", n, " = f32[64,128]{1,0} select(c", n, ", s", n, ", d", n, ")", md,
                    "\n");
    prev = absl::StrCat("m", n);
    emitted += 9;
  }
  absl::StrAppend(&text, "  ROOT out = f32[64,128]{1,0} add(", prev, ", x)\n}\n");
  return text;
}

// `relative_path` is relative to the source tree (PERFSIM_SOURCE_DIR).
inline const Module* ParseCommittedModule(const std::string& relative_path) {
  std::ifstream in(std::string(PERFSIM_SOURCE_DIR) + "/" + relative_path);
  if (!in) return nullptr;
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text.str(), relative_path);
  return m.ok() ? m->release() : nullptr;
}

}  // namespace perfsim

#endif  // PERFSIM_BENCH_GENERATED_MODULE_H_
