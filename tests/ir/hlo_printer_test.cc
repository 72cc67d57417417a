// The printer: XLA's spelling, callees before callers, and the round-trip property
// Print(Parse(Print(Parse(t)))) == Print(Parse(t)).
#include "sim/ir/hlo_printer.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

std::string ParseAndPrint(absl::string_view text) {
  auto module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? PrintModule(**module) : "";
}

// Printing is a fixed point after one parse.
void ExpectRoundTrip(absl::string_view text) {
  const std::string printed = ParseAndPrint(text);
  ASSERT_FALSE(printed.empty());
  EXPECT_EQ(ParseAndPrint(printed), printed);
}

TEST(HloPrinter, PrintsAWholeModuleInXlaForm) {
  // Written by hand the way XLA prints it: header, callee first, ENTRY last, ROOT marked.
  const std::string text = R"(HloModule moe, entry_computation_layout={(f32[4]{0})->f32[]}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[4]{0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add
}
)";
  EXPECT_EQ(ParseAndPrint(text), text);
}

TEST(HloPrinter, DropsPercentAndPrintsCalleesBeforeCallers) {
  const std::string printed = ParseAndPrint(R"(HloModule m
ENTRY %main {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] call(%x), to_apply=%callee
}
%callee { ROOT %p = f32[4] parameter(0) })");
  EXPECT_EQ(printed, R"(HloModule m

callee {
  ROOT p = f32[4] parameter(0)
}

ENTRY main {
  x = f32[4] parameter(0)
  ROOT c = f32[4] call(x), to_apply=callee
}
)");
}

TEST(HloPrinter, KeepsPercentForNamesThatNeedIt) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY e {
  %0 = f32[] parameter(0)
  %ROOT = f32[] negate(%0)
  ROOT %1 = f32[] negate(%ROOT)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(PrintInstruction(*(*module)->entry()->root()), "ROOT %1 = f32[] negate(%ROOT)");
  EXPECT_THAT(PrintModule(**module), HasSubstr("  %0 = f32[] parameter(0)\n"));
  ExpectRoundTrip(PrintModule(**module));
}

TEST(HloPrinter, PrintsInstructionsDefinitionsFirst) {
  // Text may use a name before defining it; the print orders operands first.
  EXPECT_EQ(ParseAndPrint(R"(HloModule m
ENTRY e {
  ROOT r = f32[] negate(later)
  later = f32[] constant(2)
})"),
            R"(HloModule m

ENTRY e {
  later = f32[] constant(2)
  ROOT r = f32[] negate(later)
}
)");
}

TEST(HloPrinter, SpellsAttributesAsXlaDoes) {
  auto module = ParseHloModule(R"(HloModule m
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[8,16] parameter(0)
  z = f32[] constant(0)
  s = f32[4,8] slice(x), slice={[0:4], [0:16:2]}
  p = f32[10,33] pad(x, z), padding=1_1_0x-1_2_2
  q = f32[10,18] pad(x, z), padding=1_1x1_1
  w = f32[8,8] reduce-window(x, z), window={size=1x3 stride=1x2 pad=0_0x1_1}, to_apply=add
  g = f32[8,16] all-reduce(x), channel_id=3, replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true, to_apply=add
  d = f32[8,8] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  c = pred[8,16] compare(x, x), direction=GE, type=TOTALORDER
  ROOT t = (f32[8,16], s32[8,2]) topk(x), k=2
})");
  ASSERT_TRUE(module.ok()) << module.status();
  const Computation& e = *(*module)->entry();
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("s")),
            "s = f32[4,8] slice(x), slice={[0:4], [0:16:2]}");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("p")),
            "p = f32[10,33] pad(x, z), padding=1_1_0x-1_2_2");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("q")), "q = f32[10,18] pad(x, z), padding=1_1x1_1");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("w")),
            "w = f32[8,8] reduce-window(x, z), window={size=1x3 stride=1x2 pad=0_0x1_1}, "
            "to_apply=add");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("g")),
            "g = f32[8,16] all-reduce(x), replica_groups=[2,4]<=[4,2]T(1,0), channel_id=3, "
            "use_global_device_ids=true, to_apply=add");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("d")),
            "d = f32[8,8] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={1}");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("c")),
            "c = pred[8,16] compare(x, x), direction=GE, type=TOTALORDER");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("t")),
            "ROOT t = (f32[8,16], s32[8,2]) topk(x), k=2, largest=true");
}

TEST(HloPrinter, PrintsConstantsInShortestRoundTripForm) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY e {
  a = f32[3] constant({0.100000001, 1000000, -inf})
  b = bf16[2] constant({0.333984375, nan})
  c = f32[2,2] constant({{1,2},{3,4}})
  ROOT d = f32[1000000] constant({...})
})");
  ASSERT_TRUE(module.ok()) << module.status();
  const Computation& e = *(*module)->entry();
  // 0.100000001 and 0.1 are the same f32; the shortest text is "0.1".
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("a")), "a = f32[3] constant({0.1, 1e+06, -inf})");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("b")), "b = bf16[2] constant({0.334, nan})");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("c")), "c = f32[2,2] constant({ {1, 2}, {3, 4} })");
  EXPECT_EQ(PrintInstruction(*e.FindInstruction("d")), "ROOT d = f32[1000000] constant({...})");
}

TEST(HloPrinter, PrintsAsyncSugarAsXlaDoesWithTheWrappedOpsAttributesOnTheStart) {
  // XLA's sugar: async_execution_thread and backend_config belong to the start when XLA reads
  // this line, custom_call_target to the wrapped custom-call. perfsim keeps them all on the
  // wrapped op, so the start prints sugared again and XLA reads each where it was.
  const std::string text = R"(HloModule m

ENTRY e {
  p = f32[10] parameter(0)
  s = ((f32[10]), f32[20], s32[]) custom-call-start(p), custom_call_target="foo", async_execution_thread="parallel_thread", frontend_attributes={_scheduling_group_id="1"}, backend_config={"k": 1}
  u = ((f32[10]), f32[20], s32[]) custom-call-update(s)
  ROOT d = f32[20] custom-call-done(u)
}
)";
  EXPECT_EQ(ParseAndPrint(text), text);
}

TEST(HloPrinter, PrintsAnExplicitAsyncStartWithItsCalledComputation) {
  // The start carries an attribute of its own: sugar would move it onto the wrapped op.
  ExpectRoundTrip(R"(HloModule m
w {
  p = f32[10] parameter(0)
  ROOT n = f32[10] negate(p), backend_config={"inner": 1}
}
ENTRY e {
  x = f32[10] parameter(0)
  s = ((f32[10]), f32[10], s32[]) async-start(x), calls=w, async_execution_thread="t"
  ROOT d = f32[10] async-done(s)
})");
  const std::string printed = ParseAndPrint(R"(HloModule m
w {
  p = f32[10] parameter(0)
  ROOT n = f32[10] negate(p)
}, execution_thread="t"
ENTRY e {
  x = f32[10] parameter(0)
  s = ((f32[10]), f32[10], s32[]) async-start(x), calls=w, async_execution_thread="t"
  ROOT d = f32[10] async-done(s), calls=w
})");
  EXPECT_THAT(printed, HasSubstr("async-start(x), async_execution_thread=\"t\", calls=w\n"));
  EXPECT_THAT(printed, HasSubstr("async-done(s), calls=w\n"));
  EXPECT_THAT(printed, HasSubstr("ROOT n = f32[10] negate(p)\n}, execution_thread=\"t\""));
}

TEST(HloPrinter, NativeStartOpsAreNotSugar) {
  // all-gather-start is an op of its own; an async-start wrapping an all-gather must not print
  // as `all-gather-start`, which would read back as that op.
  const std::string printed = ParseAndPrint(R"(HloModule m
w {
  p = f32[4] parameter(0)
  ROOT g = f32[8] all-gather(p), dimensions={0}, replica_groups={{0,1}}
}
ENTRY e {
  x = f32[4] parameter(0)
  s = ((f32[4]), f32[8], s32[]) async-start(x), calls=w
  ROOT d = f32[8] async-done(s)
})");
  EXPECT_THAT(printed, HasSubstr("async-start(x), calls=w\n"));
  ExpectRoundTrip(printed);
}

TEST(HloPrinter, PrefixesNamesXlasLexerReadsAsKeywords) {
  // `ENTRY replicated {` is a syntax error for XLA: replicated is a sharding keyword.
  const std::string printed = ParseAndPrint(R"(HloModule m
ENTRY %replicated {
  %manual = f32[] parameter(0)
  %nan = f32[] negate(%manual)
  ROOT %maximal = f32[] negate(%nan)
})");
  EXPECT_EQ(printed, R"(HloModule m

ENTRY %replicated {
  %manual = f32[] parameter(0)
  %nan = f32[] negate(%manual)
  ROOT %maximal = f32[] negate(%nan)
}
)");
}

TEST(HloPrinter, KeepsAnEmptyCustomCallTarget) {
  // XLA requires custom_call_target on a custom-call; "" is a valid target.
  ExpectRoundTrip(R"(HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(x), custom_call_target=""
})");
  EXPECT_THAT(ParseAndPrint(R"(HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(x), custom_call_target=""
})"),
              HasSubstr("custom-call(x), custom_call_target=\"\"\n"));
}

TEST(HloPrinter, OpcodeSpecificAttributesOnOtherOpcodesPrintOnce) {
  // Found by the fuzzer: gather and scatter numbers both print index_vector_dim, and ragged-dot
  // numbers print the dot dims again. On an opcode they do not belong to, such keys are kept
  // verbatim, and each prints once.
  ExpectRoundTrip(R"(HloModule m
ENTRY e {
  p = s32[4096,2] parameter(0), offset_dims={}, update_window_dims={}, index_vector_dim=1, lhs_contracting_dims={1}, lhs_ragged_dims={0}
  ROOT q = s32[4096,2] negate(p), scatter_dims_to_operand_dims={0,1}, start_index_map={}, index_vector_dim=0
})");
  const std::string printed = ParseAndPrint(R"(HloModule m
ENTRY e { ROOT p = s32[2] parameter(0), offset_dims={}, update_window_dims={}, index_vector_dim=1 })");
  EXPECT_THAT(printed, HasSubstr("index_vector_dim=1"));
  EXPECT_EQ(printed.find("index_vector_dim"), printed.rfind("index_vector_dim"));
}

TEST(HloPrinter, RoundTripsEveryAttributeKind) {
  ExpectRoundTrip(
      R"(HloModule m, is_scheduled=true, entry_computation_layout={(f32[8,16]{1,0})->f32[8,16]{1,0}}

FileNames
1 "a.py"

cmp { a = f32[] parameter(0) b = f32[] parameter(1) ROOT lt = pred[] compare(a, b), direction=LT }
c { p = s32[] parameter(0) k = s32[] constant(5) ROOT lt = pred[] compare(p, k), direction=LT }
b { p = s32[] parameter(0) one = s32[] constant(1) ROOT n = s32[] add(p, one) }
ENTRY e {
  x = f32[8,16]{1,0:T(8,128)} parameter(0), sharding={devices=[1,8]<=[8]}, metadata={op_name="x" stack_frame_id=1}
  i = s32[8,1] parameter(1)
  s = f32[8,16] sort(x), dimensions={1}, is_stable=true, to_apply=cmp
  g = f32[8,4] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  h = f32[8,16] custom-call(x), custom_call_target="k\"q", backend_config={"a": [1, 2]}, api_version=API_VERSION_TYPED_FFI, called_computations={cmp}
  z = s32[] constant(0)
  w = s32[] while(z), condition=c, body=b
  t = s32[] conditional(z, z, z), branch_computations={b, b}
  f = s32[] conditional(z, z, z), true_computation=b, false_computation=b, control-predecessors={w}
  ROOT r = f32[8,16] add(s, h), frontend_attributes={k="v"}
}, execution_thread="main")");
}

}  // namespace
}  // namespace perfsim
