// Forms of HLO text that XLA's parser accepts beyond `name = shape opcode(operands)`: result
// shapes left out and inferred, instructions nested in operand lists, one scalar for an array
// constant, the legacy `HloModule name:` header, custom-call `literal=` (tuples included), an
// element type apart from its dimensions, a shape-only operand. Each test checks what
// the parser builds, the shape it infers derived by hand in a comment.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Pair;

std::unique_ptr<Module> Parse(absl::string_view text) {
  auto module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(module).value() : nullptr;
}

const Instruction& Find(const Module& module, absl::string_view name) {
  for (const auto& computation : module.computations()) {
    if (Instruction* i = computation->FindInstruction(name)) return *i;
  }
  ADD_FAILURE() << "no instruction " << name;
  static const Instruction* const kMissing =
      new Instruction(Opcode::kTuple, "missing", Shape::Tuple({}));
  return *kMissing;
}

std::string ShapeOf(const Module& module, absl::string_view name) {
  return Find(module, name).shape().ToString(false);
}

TEST(HloParserInference, InfersShapesLeftOutFromOperandsAndAttributes) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[4,3] parameter(0)
  q = (f32[4,3], s32[]) parameter(1)
  g = get-tuple-element(q), index=1
  n = negate(p)
  t = transpose(p), dimensions={1,0}
  c = compare(p, n), direction=LT
  ROOT r = tuple(g, t, c)
})");
  ASSERT_NE(module, nullptr);
  // get-tuple-element index 1 of (f32[4,3], s32[]) is s32[].
  EXPECT_EQ(ShapeOf(*module, "g"), "s32[]");
  // negate keeps its operand's shape.
  EXPECT_EQ(ShapeOf(*module, "n"), "f32[4,3]");
  // transpose {1,0} of [4,3] is [3,4].
  EXPECT_EQ(ShapeOf(*module, "t"), "f32[3,4]");
  // compare gives pred of the operands' dimensions.
  EXPECT_EQ(ShapeOf(*module, "c"), "pred[4,3]");
  EXPECT_EQ(ShapeOf(*module, "r"), "(s32[], f32[3,4], pred[4,3])");
  PERFSIM_EXPECT_OK(VerifyModule(*module));
}

TEST(HloParserInference, InfersInDependencyOrderWhateverTheTextOrder) {
  // `a` uses `b` before it is written, and `call` needs its callee's root, itself inferred.
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT a = add(b, b)
  b = call(p), to_apply=f
}
f {
  x = f32[2] parameter(0)
  ROOT y = abs(x)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(ShapeOf(*module, "y"), "f32[2]");
  EXPECT_EQ(ShapeOf(*module, "b"), "f32[2]");
  EXPECT_EQ(ShapeOf(*module, "a"), "f32[2]");
}

TEST(HloParserInference, InfersReduceWhileAndAfterAll) {
  auto module = Parse(R"(HloModule m
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT sum = add(a, b) }
cond { s = (s32[], f32[8]) parameter(0) i = get-tuple-element(s), index=0
       ROOT lt = compare(i, s32[] constant(4)), direction=LT }
body { s = (s32[], f32[8]) parameter(0) ROOT next = copy(s) }
ENTRY e {
  p = f32[8,16] parameter(0)
  r = reduce(p, f32[] constant(0)), dimensions={1}, to_apply=add
  w = while((s32[], f32[8]) tuple(s32[] constant(0), r)), condition=cond, body=body
  tok = after-all()
  ROOT t = tuple(w, tok)
})");
  ASSERT_NE(module, nullptr);
  // reduce of [8,16] over dimension 1 is [8].
  EXPECT_EQ(ShapeOf(*module, "r"), "f32[8]");
  EXPECT_EQ(ShapeOf(*module, "sum"), "f32[]");  // the root of `add`
  EXPECT_EQ(ShapeOf(*module, "lt"), "pred[]");
  // while is its init's shape.
  EXPECT_EQ(ShapeOf(*module, "w"), "(s32[], f32[8])");
  EXPECT_EQ(ShapeOf(*module, "tok"), "token[]");
  PERFSIM_EXPECT_OK(VerifyModule(*module));
}

TEST(HloParserInference, BroadcastOfAScalarWithoutAShapeIsThatScalar) {
  // XLA prepends `dimensions` (as sizes) to the operand's: none to f32[] gives f32[].
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[] parameter(0)
  ROOT b = broadcast(p), dimensions={}
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(ShapeOf(*module, "b"), "f32[]");
}

TEST(HloParserInference, PrintsInferredShapesSoThatTheTextReparsesTheSame) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[4,3] parameter(0)
  ROOT n = negate(add(p, f32[4,3] constant(2)))
})");
  ASSERT_NE(module, nullptr);
  const std::string printed = PrintModule(*module);
  EXPECT_THAT(printed, HasSubstr("f32[4,3] negate("));
  auto reparsed = Parse(printed);
  ASSERT_NE(reparsed, nullptr);
  EXPECT_EQ(PrintModule(*reparsed), printed);
}

TEST(HloParserInference, RefusesOpsWhoseShapeIsNeverInferredAtTheOpcode) {
  // reshape's result is an input: XLA's parser requires it too.
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = reshape(p)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "3:12: expected a result shape before 'reshape', whose shape is never "
                       "inferred; got none"));
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  ROOT p = parameter(0)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2:12: expected a result "
                                                                     "shape before 'parameter'")));
  // opt-barrier is on XLA's CanInferShape list, yet jaxlib 0.10.2 refuses it ("Unknown
  // operation for unary shape inference"), so perfsim asks for its shape too.
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT b = opt-barrier(p)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("3:12: expected a result shape before 'opt-barrier'")));
}

TEST(HloParserInference, InferenceErrorsPointAtTheOpcode) {
  // add of f32[2] and f32[3]: no shape to infer.
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  p = f32[2] parameter(0)\n  q = f32[3] parameter(1)\n"
                             "  ROOT a = add(p, q)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("4:12: a: expected operands of equal shape; got f32[2] and "
                                 "f32[3]")));
}

TEST(HloParserInference, RefusesShapesThatDependOnThemselves) {
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  a = negate(b)\n  ROOT b = negate(a)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected a result shape that does not depend on itself; got a "
                                 "cycle through")));
}

// --- the layouts of inferred shapes: those XLA's ShapeInference gives (a shape without a
// layout stands for the default one, as in XLA's parser) ---

std::string WithLayout(const Module& module, absl::string_view name) {
  return Find(module, name).shape().ToString();
}

TEST(HloParserInferredLayouts, ElementwiseResultsKeepTheOperandLayout) {
  // XLA's InferUnaryOpShape returns the operand's shape, InferElementwiseBinaryOpShape the
  // lhs's, InferClampShape the operand's, each through ShapeUtil::ChangeElementType, which
  // keeps the element size E(n) only for a sub-byte result.
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = s4[2,3]{0,1:T(2,128)(4,1)E(4)S(1)} parameter(0)
  q = s4[2,3]{1,0} parameter(1)
  f = f32[2,3]{0,1:T(8,128)} parameter(2)
  n = negate(p)
  a = add(q, p)
  c = compare(p, q), direction=LT
  k = clamp(q, p, q)
  i = is-finite(f)
  d = f32[2,3]{1,0} negate(f)
  ROOT r = tuple(n, a, c, k, i, d)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(WithLayout(*module, "n"), "s4[2,3]{0,1:T(2,128)(4,1)E(4)S(1)}");
  EXPECT_EQ(WithLayout(*module, "a"), "s4[2,3]{1,0}");                      // the lhs's
  EXPECT_EQ(WithLayout(*module, "c"), "pred[2,3]{0,1:T(2,128)(4,1)S(1)}");  // E(4) dropped
  EXPECT_EQ(WithLayout(*module, "k"), "s4[2,3]{0,1:T(2,128)(4,1)E(4)S(1)}");
  EXPECT_EQ(WithLayout(*module, "i"), "pred[2,3]{0,1:T(8,128)}");
  EXPECT_EQ(WithLayout(*module, "d"), "f32[2,3]{1,0}");  // written: kept as written
  // The tuple is MakeTupleShape of its operands, layouts included.
  EXPECT_EQ(WithLayout(*module, "r"),
            "(s4[2,3]{0,1:T(2,128)(4,1)E(4)S(1)}, s4[2,3]{1,0}, pred[2,3]{0,1:T(2,128)(4,1)S(1)}, "
            "s4[2,3]{0,1:T(2,128)(4,1)E(4)S(1)}, pred[2,3]{0,1:T(8,128)}, f32[2,3]{1,0})");
  PERFSIM_EXPECT_OK(VerifyModule(*module));
}

TEST(HloParserInferredLayouts, TransposePermutesTheOperandLayout) {
  // XLA's InferTransposeShape is ShapeUtil::PermuteDimensions: result dimension j is operand
  // dimension dimensions[j] and keeps its place in minor_to_major; tiles stay. Of a default
  // {2,1,0} with dimensions={1,2,0}: operand dims 2, 1, 0 are result dims 1, 0, 2.
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[2,3,4] parameter(0)
  q = f32[2,3]{0,1:T(8,128)} parameter(1)
  t = transpose(p), dimensions={1,2,0}
  u = transpose(q), dimensions={1,0}
  v = transpose(p), dimensions={0,1,2}
  ROOT r = tuple(t, u, v)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(WithLayout(*module, "t"), "f32[3,4,2]{1,0,2}");
  EXPECT_EQ(WithLayout(*module, "u"), "f32[3,2]{1,0:T(8,128)}");
  EXPECT_EQ(WithLayout(*module, "v"), "f32[2,3,4]");  // the default, left implicit
}

TEST(HloParserInferredLayouts, SelectTakesThePredicateLayoutAndOnTrueElementSize) {
  // XLA's InferSelectShape: ChangeElementType of the predicate's shape (on_true's for a
  // scalar predicate), then on_true's element_size_in_bits (hlo_verifier_test__056).
  auto module = Parse(R"(HloModule m
ENTRY e {
  a = s4[10]{0:E(4)} parameter(0)
  b = s4[10]{0:E(4)} parameter(1)
  pr = pred[10] parameter(2)
  f = f32[2,3]{0,1} parameter(3)
  pt = pred[2,3]{1,0:T(8,128)} parameter(4)
  s = select(pr, a, b)
  t = select(pt, f, f)
  u = select(pred[] constant(true), f, f)
  ROOT r = tuple(s, t, u)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(WithLayout(*module, "s"), "s4[10]{0:E(4)}");
  EXPECT_EQ(WithLayout(*module, "t"), "f32[2,3]{1,0:T(8,128)}");
  EXPECT_EQ(WithLayout(*module, "u"), "f32[2,3]{0,1}");
}

TEST(HloParserInferredLayouts, CallConditionalWhileAndGetTupleElementPassLayoutsThrough) {
  // XLA: a call is its callee's result, a conditional its first branch's, a while its init
  // value's (not the body's root), a get-tuple-element the element (while_loop_unroller_test
  // __009: `call(while)` of a root `s32[]{:T(128)}`).
  auto module = Parse(R"(HloModule m
b0 { x = f32[2,3]{0,1} parameter(0) ROOT n = f32[2,3]{0,1:T(8,128)} negate(x) }
b1 { x = f32[2,3]{0,1} parameter(0) ROOT n = f32[2,3]{1,0} negate(x) }
cond { x = f32[2,3]{1,0} parameter(0) ROOT c = pred[] constant(false) }
body { x = f32[2,3]{1,0} parameter(0) ROOT n = f32[2,3]{1,0:T(2,128)} negate(x) }
ENTRY e {
  p = f32[2,3]{0,1:T(8,128)S(2)} parameter(0)
  i = s32[] parameter(1)
  cl = call(p), to_apply=b0
  k = conditional(i, p, p), branch_computations={b1, b0}
  w = while(p), condition=cond, body=body
  t = tuple(p, i)
  g = get-tuple-element(t), index=0
  ROOT r = tuple(cl, k, w, g)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(WithLayout(*module, "cl"), "f32[2,3]{0,1:T(8,128)}");
  EXPECT_EQ(WithLayout(*module, "k"), "f32[2,3]{1,0}");
  EXPECT_EQ(WithLayout(*module, "w"), "f32[2,3]{0,1:T(8,128)S(2)}");
  EXPECT_EQ(WithLayout(*module, "g"), "f32[2,3]{0,1:T(8,128)S(2)}");
}

TEST(HloParserInferredLayouts, NewShapesTakeTheDefaultLayout) {
  // reduce, reduce-window, pad, concatenate, dot, ... build their result with
  // ShapeUtil::MakeShape: the default layout, whatever the operands'.
  auto module = Parse(R"(HloModule m
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = add(a, b) }
ENTRY e {
  p = f32[2,3]{0,1:T(8,128)} parameter(0)
  z = f32[] parameter(1)
  r = reduce(p, z), dimensions={0}, to_apply=add
  w = reduce-window(p, z), window={size=1x1}, to_apply=add
  c = concatenate(p, p), dimensions={0}
  d = dot(p, p), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = tuple(r, w, c, d)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(WithLayout(*module, "r"), "f32[3]");
  EXPECT_EQ(WithLayout(*module, "w"), "f32[2,3]");
  EXPECT_EQ(WithLayout(*module, "c"), "f32[4,3]");
  EXPECT_EQ(WithLayout(*module, "d"), "f32[3,3]");
}

TEST(HloParserInferredShapes, ReduceWindowTakesTheInitValueElementType) {
  // XLA's InferReduceWindowShape: the init value's element type, bf16 here, though the
  // reducer is f32 (algebraic_simplifier_test__059).
  auto module = Parse(R"(HloModule m
fn { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[4,6] parameter(0)
  z = bf16[] constant(5)
  ROOT r = reduce-window(x, z), window={size=2x2}, to_apply=fn
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(ShapeOf(*module, "r"), "bf16[3,5]");
  PERFSIM_EXPECT_OK(VerifyModule(*module));
}

TEST(HloParserInferredShapes, SendShapeIsBuiltFromItsFirstOperandAsXlaDoes) {
  // XLA's parser ignores a send's written shape: HloInstruction::CreateSend makes it
  // (operand 0's shape, u32[], token[]). With the operands swapped (collective_ops_utils_test
  // __002) that is (token[], u32[], token[]), and a tuple of the send sees it. A written shape
  // that means the same stays as written.
  auto module = Parse(R"(HloModule m
ENTRY e {
  data = f32[64] parameter(0)
  tok = token[] after-all()
  swapped = (f32[64], u32[], token[]) send(tok, data), channel_id=2
  right = (f32[64]{0}, u32[], token[]) send(data, tok), channel_id=3
  ROOT r = tuple(swapped, right)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(WithLayout(*module, "swapped"), "(token[], u32[], token[])");
  EXPECT_EQ(WithLayout(*module, "right"), "(f32[64]{0}, u32[], token[])");
  EXPECT_EQ(WithLayout(*module, "r"), "((token[], u32[], token[]), (f32[64]{0}, u32[], token[]))");
}

TEST(HloParserNested, AddsNestedInstructionsBeforeTheirUserWithAnonNames) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT a = f32[4] add(f32[4] negate(p), f32[4] negate(f32[4] abs(p)))
})");
  ASSERT_NE(module, nullptr);
  const Computation& entry = *module->entry();
  // p, the first negate, abs, the second negate, then add: operands before users.
  ASSERT_EQ(entry.instruction_count(), 5);
  EXPECT_EQ(entry.instructions()[1]->name(), "negate.anon");
  EXPECT_EQ(entry.instructions()[2]->name(), "abs.anon");
  EXPECT_EQ(entry.instructions()[3]->name(), "negate.anon.1");
  const Instruction& add = *entry.root();
  ASSERT_EQ(add.operand_count(), 2);
  EXPECT_EQ(add.operand(0)->name(), "negate.anon");
  EXPECT_EQ(add.operand(1)->name(), "negate.anon.1");
  EXPECT_EQ(add.operand(1)->operand(0)->name(), "abs.anon");
  EXPECT_EQ(add.operand(1)->operand(0)->operand(0)->name(), "p");
  PERFSIM_EXPECT_OK(VerifyModule(*module));
}

TEST(HloParserNested, NestedConstantsKeepTheirShapeAndLiteral) {
  auto module = Parse(R"(HloModule m
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[] reduce(p, f32[] constant(1.5)), dimensions={0}, to_apply=add
})");
  ASSERT_NE(module, nullptr);
  const Instruction& init = *module->entry()->root()->operand(1);
  EXPECT_EQ(init.name(), "constant.anon");
  EXPECT_EQ(init.opcode(), Opcode::kConstant);
  EXPECT_EQ(init.attributes().literal->GetAsDouble(0), 1.5);
  // The attributes after the nested operand belong to the reduce.
  EXPECT_EQ(module->entry()->root()->attributes().dimensions, std::vector<int64_t>{0});
}

TEST(HloParserNested, AnonNamesSkipNamesAlreadyTaken) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  negate.anon = f32[] parameter(0)
  ROOT a = f32[] add(f32[] negate(negate.anon), negate.anon)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "negate.anon.1");
}

TEST(HloParserNested, BoundsNestingDepthWithALocatedError) {
  // 64 nested negates parse; 65 do not. `  ROOT r = f32[] copy(` is 22 columns and each
  // `negate(` 7, so the 65th negate starts at column 23 + 7 * 64.
  auto nest = [](int depth) {
    std::string text = "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] copy(";
    for (int i = 0; i < depth; ++i) text += "negate(";
    text += "p";
    for (int i = 0; i < depth; ++i) text += ")";
    return text + ")\n}";
  };
  PERFSIM_EXPECT_OK(ParseHloModule(nest(64)).status());
  EXPECT_THAT(ParseHloModule(nest(65)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("3:", 23 + 7 * 64,
                                    ": expected instructions nested at most 64 deep in operand "
                                    "lists; got deeper")));
  // Far deeper input fails the same way, without exhausting the stack.
  EXPECT_THAT(ParseHloModule(nest(100000)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nested at most 64 deep")));
}

TEST(HloParserConstants, OneScalarForAnArraySetsElementZeroAndZeroFillsTheRest) {
  // What XLA's parser does (checked with jaxlib 0.10.2): { {1.5, 0, 0}, {0, 0, 0} }.
  auto module = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,3] constant(1.5)
  b = s32[2,2]{0,1} constant(7)
  ROOT t = (f32[2,3], s32[2,2]{0,1}) tuple(a, b)
})");
  ASSERT_NE(module, nullptr);
  const Literal& a = *Find(*module, "a").attributes().literal;
  ASSERT_EQ(a.element_count(), 6);
  EXPECT_EQ(a.GetAsDouble(0), 1.5);
  for (int64_t i = 1; i < 6; ++i) EXPECT_EQ(a.GetAsDouble(i), 0) << i;
  EXPECT_EQ(a.ToString(), "{ {1.5, 0, 0}, {0, 0, 0} }");
  // Element 0 is logical [0,0] whatever the layout.
  const Literal& b = *Find(*module, "b").attributes().literal;
  EXPECT_EQ(b.GetAsInt64(0), 7);
  EXPECT_EQ(b.GetAsInt64(1) + b.GetAsInt64(2) + b.GetAsInt64(3), 0);
}

TEST(HloParserConstants, OneScalarNeedsAnElementToSetAndABoundedSize) {
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  ROOT c = f32[0] constant(1)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("2:28: expected '{' to start a f32[0] literal (one scalar fills "
                                 "1 to 16777216 elements); got '1'")));
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  ROOT c = f32[4096,4097] constant(0)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("16777216 elements")));
  // Complex values stay in braces, as XLA requires.
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  ROOT c = c64[2] constant((1, 2))\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected '{'")));
}

TEST(HloParserConstants, U64TakesNegativeIntegersModulo2To64) {
  auto module = Parse("ENTRY e {\n  a = u64[] constant(-1)\n  ROOT b = u64[2] constant({-2, 3})\n}");
  ASSERT_NE(module, nullptr);
  // 2^64 - 1 and 2^64 - 2.
  EXPECT_EQ(Find(*module, "a").attributes().literal->ToString(), "18446744073709551615");
  EXPECT_EQ(Find(*module, "b").attributes().literal->ToString(), "{18446744073709551614, 3}");
  // Narrower unsigned types still refuse negatives, as XLA does.
  EXPECT_THAT(ParseHloModule("ENTRY e {\n  ROOT c = u32[] constant(-1)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a u32 value")));
}

TEST(HloParserHeader, ReadsTheLegacyColonAfterTheModuleName) {
  auto module = Parse("HloModule legacy:\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->name(), "legacy");
  // Attributes may follow it.
  module = Parse("HloModule legacy:, replica_count=2\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->replica_count(), 2);
  // XLA lexes `name:` as one token: a colon after a space is not part of the header.
  EXPECT_THAT(ParseHloModule("HloModule legacy :\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "1:18: expected a computation; got ':'"));
}

TEST(HloParserAttributes, ReadsCustomCallLiteralAsShapeAndValue) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  ROOT c = f32[] custom-call(), custom_call_target="foo", literal=s32[2]{0} {1,
    2}
})");
  ASSERT_NE(module, nullptr);
  EXPECT_THAT(Find(*module, "c").attributes().other,
              ::testing::ElementsAre(Pair("literal", "s32[2]{0} {1, 2}")));
  const std::string printed = PrintModule(*module);
  EXPECT_THAT(printed, HasSubstr("literal=s32[2]{0} {1, 2}"));
  auto reparsed = Parse(printed);
  ASSERT_NE(reparsed, nullptr);
  EXPECT_EQ(PrintModule(*reparsed), printed);
}

TEST(HloParserAttributes, ReadsCustomCallTupleLiteralWithAShapePerElement) {
  // XLA's ParseLiteral(Literal*) reads `(` as a tuple whose elements carry their own shapes
  // (hlo_parser_test's custom-call module) and prints it on one line as `( a, b )`.
  auto module = Parse(R"(HloModule m
ENTRY e {
  ROOT c = f32[] custom-call(), custom_call_target="foo",
    literal=( s32[2]{0} {4, 128}, (pred[] true,), )
})");
  ASSERT_NE(module, nullptr);
  EXPECT_THAT(Find(*module, "c").attributes().other,
              ::testing::ElementsAre(Pair("literal", "( s32[2]{0} {4, 128}, ( pred[] true ) )")));
  const std::string printed = PrintModule(*module);
  auto reparsed = Parse(printed);
  ASSERT_NE(reparsed, nullptr);
  EXPECT_EQ(PrintModule(*reparsed), printed);
  // The empty tuple prints as XLA prints it, "( " then " )".
  module = Parse(R"(HloModule m
ENTRY e {
  ROOT c = f32[] custom-call(), custom_call_target="foo", literal=()
})");
  ASSERT_NE(module, nullptr);
  EXPECT_THAT(Find(*module, "c").attributes().other,
              ::testing::ElementsAre(Pair("literal", "(  )")));
  // A tuple shape before the values is not XLA's form: the element `s32[2]` lacks its value.
  EXPECT_THAT(ParseHloModule(R"(HloModule m
ENTRY e {
  ROOT c = f32[] custom-call(), custom_call_target="foo", literal=(s32[2], pred[]) ({1, 2}, true)
})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3:74:")));
}

TEST(HloParserShapes, ElementTypeAndDimensionsMayStandApart) {
  // XLA's lexer makes an element type a token of its own, so `s32 [2,3]` is `s32[2,3]`
  // (coalescing_analysis_test's fusion parameters), in a result and in a typed operand.
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = s32 [2,3] parameter(0)
  ROOT n = s32 [2,3] {1,0} negate(s32 [2,3] p)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(ShapeOf(*module, "p"), "s32[2,3]");
  EXPECT_EQ(Find(*module, "n").shape().ToString(), "s32[2,3]{1,0}");
}

TEST(HloParserOperands, DropsAShapeWithoutANameAsXlaDoes) {
  // XLA's module parser fails to read `f32[]` as a named or a nested operand, records the error
  // and goes on after the ',' (hlo_module_splitting_test): add keeps the two named operands.
  auto module = Parse(R"(HloModule m
ENTRY e {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT a = f32[] add(f32[] x, f32[], y)
  s = f32[] subtract(x, y, f32[2])
})");
  ASSERT_NE(module, nullptr);
  const Instruction& add = Find(*module, "a");
  ASSERT_EQ(add.operand_count(), 2);
  EXPECT_EQ(add.operand(0)->name(), "x");
  EXPECT_EQ(add.operand(1)->name(), "y");
  EXPECT_EQ(Find(*module, "s").operand_count(), 2);
  // Dropped, it leaves add one operand short, which is refused as XLA refuses it.
  EXPECT_FALSE(ParseHloModule(R"(HloModule m
ENTRY e {
  x = f32[] parameter(0)
  ROOT a = f32[] add(x, f32[])
})")
                   .ok());
}

}  // namespace
}  // namespace perfsim
