// Focused tests of the HLO text parser, one syntax feature each, checking what it builds.
#include "sim/ir/hlo_parser.h"

#include <cmath>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_printer.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::ElementsAre;
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

TEST(HloParser, KeepsHeaderAttributesVerbatim) {
  auto module = Parse(
      R"(HloModule m, entry_computation_layout={(f32[2]{0}, /*index=1*/s32[])->f32[2]{0}}, replica_count=4, num_partitions=2
ENTRY e {
  p = f32[2]{0} parameter(0)
  q = s32[] parameter(1)
  ROOT n = f32[2]{0} negate(p)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->name(), "m");
  EXPECT_THAT(
      module->header_attributes(),
      ElementsAre(Pair("entry_computation_layout", "{(f32[2]{0}, /*index=1*/s32[])->f32[2]{0}}"),
                  Pair("replica_count", "4"), Pair("num_partitions", "2")));
  EXPECT_EQ(module->replica_count(), 4);
  EXPECT_EQ(module->num_partitions(), 2);
}

TEST(HloParser, HeaderlessModuleTakesLastComputationAndInstructionAsEntryAndRoot) {
  auto module = Parse(R"(
add { a = f32[] parameter(0) b = f32[] parameter(1) s = f32[] add(a, b) }
main {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  r = f32[] reduce(x, z), dimensions={0}, to_apply=add
})");
  ASSERT_NE(module, nullptr);
  ASSERT_NE(module->entry(), nullptr);
  EXPECT_EQ(module->entry()->name(), "main");
  EXPECT_TRUE(module->entry()->is_entry());
  EXPECT_EQ(module->entry()->root()->name(), "r");
  EXPECT_EQ(module->FindComputation("add")->root()->name(), "s");
  // Without a header the module is named after its entry.
  EXPECT_EQ(module->name(), "main");
}

TEST(HloParser, EntryKeywordPicksTheEntryWhereverItIs) {
  auto module = Parse(R"(HloModule m
ENTRY first { ROOT p = f32[] parameter(0) }
second { ROOT q = f32[] parameter(0) })");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->entry()->name(), "first");
  EXPECT_FALSE(module->FindComputation("second")->is_entry());
}

TEST(HloParser, ReadsPercentNamesTypedOperandsSignaturesAndComments) {
  auto module = Parse(R"(HloModule m
// a line comment
%body.v3 (prev.1: s32[]) -> s32[] {
  %constant = s32[] constant(1) /* a block comment */
  %prev.1 = s32[] parameter(0)
  ROOT %add-1_x = s32[] add(s32[] %constant, s32[] %prev.1)
}
ENTRY %e () -> s32[] {
  %c = s32[] constant(0)
  ROOT %call = s32[] call(s32[] %c), to_apply=%body.v3
})");
  ASSERT_NE(module, nullptr);
  const Instruction& add = Find(*module, "add-1_x");
  ASSERT_EQ(add.operand_count(), 2);
  EXPECT_EQ(add.operand(0)->name(), "constant");
  EXPECT_EQ(add.operand(1)->name(), "prev.1");
  EXPECT_EQ(Find(*module, "call").to_apply()->name(), "body.v3");
}

TEST(HloParser, SetsLocationsToWhereNamesStart) {
  auto module =
      Parse("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT   %n = f32[] negate(p)\n}");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(Find(*module, "p").location().line, 3);
  EXPECT_EQ(Find(*module, "p").location().column, 3);
  EXPECT_EQ(Find(*module, "n").location().line, 4);
  EXPECT_EQ(Find(*module, "n").location().column, 10);
  EXPECT_EQ(module->entry()->location().line, 2);
  EXPECT_EQ(module->entry()->location().column, 7);
}

TEST(HloParser, AllowsForwardReferencesToInstructionsAndComputations) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  ROOT r = f32[] call(later), to_apply=callee
  later = f32[] constant(2)
}
callee { ROOT x = f32[] parameter(0) })");
  ASSERT_NE(module, nullptr);
  const Instruction& r = Find(*module, "r");
  EXPECT_EQ(r.operand(0)->name(), "later");
  EXPECT_EQ(r.to_apply()->name(), "callee");
  EXPECT_EQ(module->entry()->name(), "e");
}

TEST(HloParser, ParsesParameterNumbersConstantsAndTupleIndices) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  p1 = s32[] parameter(1)
  p0 = (f32[2], s32[]) parameter(0)
  g = s32[] get-tuple-element(p0), index=1
  ROOT t = (s32[], s32[]) tuple(g, p1)
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(Find(*module, "p1").attributes().parameter_number, 1);
  EXPECT_EQ(Find(*module, "g").attributes().tuple_index, 1);
  // parameter(1) comes first in the text; parameters() is still ordered by number.
  ASSERT_EQ(module->entry()->parameter_count(), 2);
  EXPECT_EQ(module->entry()->parameter(0)->name(), "p0");
  EXPECT_EQ(module->entry()->parameter(1)->name(), "p1");
}

TEST(HloParser, ParsesConstantsOfEveryKind) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  a = f32[] constant(-inf)
  b = bf16[3] constant({inf, nan, -1.5})
  c = pred[2] constant({true, false})
  d = s32[8,1]{1,0} constant({ {0}, {2}, {5}, {7}, {8}, {10}, {13}, {15} })
  f = f32[1000000,1000000] constant({...})
  g = u64[] constant(18446744073709551615)
  h = f8e4m3fn[2] constant({448, -0.001953125})
  i = c64[] constant((1, -2))
  j = (s32[], f32[2]) constant((3, {1e-05, 2.5e+10}))
  k = s4[2] constant({-8, 7})
  l = f64[] constant(0.1)
  m = f32[0] constant({})
  n = f32[2] constant({nan(0x1), -nan})
  ROOT t = () tuple()
})");
  ASSERT_NE(module, nullptr);
  const Literal& a = *Find(*module, "a").attributes().literal;
  EXPECT_EQ(a.GetAsDouble(0), -INFINITY);
  const Literal& b = *Find(*module, "b").attributes().literal;
  EXPECT_EQ(b.GetAsDouble(0), INFINITY);
  EXPECT_TRUE(std::isnan(b.GetAsDouble(1)));
  EXPECT_EQ(b.GetAsDouble(2), -1.5);
  const Literal& c = *Find(*module, "c").attributes().literal;
  EXPECT_EQ(c.GetAsInt64(0), 1);
  EXPECT_EQ(c.GetAsInt64(1), 0);
  const Literal& d = *Find(*module, "d").attributes().literal;
  EXPECT_EQ(d.element_count(), 8);
  EXPECT_EQ(d.GetAsInt64(7), 15);
  const Literal& f = *Find(*module, "f").attributes().literal;
  EXPECT_TRUE(f.elided());
  EXPECT_TRUE(f.data().empty());
  EXPECT_EQ(Find(*module, "g").attributes().literal->ToString(), "18446744073709551615");
  const Literal& h = *Find(*module, "h").attributes().literal;
  EXPECT_EQ(h.GetBits(0), 0x7eu);  // 448, the f8e4m3fn max
  EXPECT_EQ(h.GetBits(1), 0x81u);  // -2^-9, the smallest subnormal, negated
  EXPECT_EQ(Find(*module, "i").attributes().literal->ToString(), "(1, -2)");
  const Literal& j = *Find(*module, "j").attributes().literal;
  ASSERT_EQ(j.tuple_elements().size(), 2u);
  EXPECT_EQ(j.tuple_elements()[0].GetAsInt64(0), 3);
  EXPECT_FLOAT_EQ(j.tuple_elements()[1].GetAsDouble(1), 2.5e10f);
  EXPECT_EQ(Find(*module, "k").attributes().literal->GetAsInt64(0), -8);
  EXPECT_EQ(Find(*module, "l").attributes().literal->GetAsDouble(0), 0.1);
  EXPECT_EQ(Find(*module, "m").attributes().literal->element_count(), 0);
  EXPECT_EQ(Find(*module, "n").attributes().literal->GetBits(0), 0x7f800001u);
  EXPECT_EQ(Find(*module, "n").attributes().literal->GetBits(1), 0xffc00000u);
}

TEST(HloParser, RefusesHugeConstantsUnlessElided) {
  // 2^30 elements written out would need the text to list them all; the parser refuses
  // before reading any, pointing at the literal.
  EXPECT_THAT(ParseHloModule("HloModule m\nENTRY e { ROOT c = f32[1073741824] constant({1}) }"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("2:45: expected a constant of at most 268435456 elements")));
}

TEST(HloParser, ReadsDynamicShapesAndTiledLayouts) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[<=10,?]{1,0} parameter(0)
  q = bf16[50,32]{1,0:T(8,128)(2,1)S(3)} parameter(1)
  r = s32[]{:T(128)} parameter(2)
  ROOT s = s4[4,2]{1,0:E(4)} parameter(3)
})");
  ASSERT_NE(module, nullptr);
  const Shape& p = Find(*module, "p").shape();
  EXPECT_TRUE(p.is_dynamic_dimension(0));
  EXPECT_EQ(p.dimensions(0), 10);
  EXPECT_EQ(p.dimensions(1), Shape::kUnboundedSize);
  const Layout& q = *Find(*module, "q").shape().layout();
  ASSERT_EQ(q.tiles.size(), 2u);
  EXPECT_THAT(q.tiles[0].dimensions, ElementsAre(8, 128));
  EXPECT_THAT(q.tiles[1].dimensions, ElementsAre(2, 1));
  EXPECT_EQ(q.memory_space, 3);
  EXPECT_TRUE(Find(*module, "r").shape().layout()->minor_to_major.empty());
  EXPECT_EQ(Find(*module, "s").shape().layout()->element_size_bits, 4);
}

TEST(HloParser, KeepsMetadataShardingBackendConfigAndFrontendAttributes) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0), sharding={{replicated}, {devices=[4,1]<=[4]}}
  ROOT c = f32[4] custom-call(p), custom_call_target="kernel$1",
    metadata={op_type="a" op_name="b" source_file="c" source_line=1 profile_type={1}},
    frontend_attributes={_xla_stream_annotation="1"},
    backend_config={
      "tiling": {"tm": "512", // block rows
                 "tn": "128"}
    }
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(Find(*module, "p").attributes().sharding, "{{replicated}, {devices=[4,1]<=[4]}}");
  const InstructionAttributes& c = Find(*module, "c").attributes();
  EXPECT_EQ(c.custom_call_target, "kernel$1");
  EXPECT_EQ(c.metadata,
            R"({op_type="a" op_name="b" source_file="c" source_line=1 profile_type={1}})");
  EXPECT_EQ(c.frontend_attributes, R"({_xla_stream_annotation="1"})");
  // A JSON config spanning lines keeps its text, each line break (and // comment) one space.
  EXPECT_EQ(c.backend_config, R"({ "tiling": {"tm": "512", "tn": "128"} })");
}

TEST(HloParser, RawValuesKeepBlockCommentsWhoseBracketsDoNotCount) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  ROOT p = f32[] parameter(0), metadata={op_name="a" /* } " */ source_line=1}
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(Find(*module, "p").attributes().metadata, R"({op_name="a" /* } " */ source_line=1})");
}

TEST(HloParser, KeepsStringBackendConfigAndUnknownAttributesInOrder) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,10] parameter(0)
  b = f32[10,2] parameter(1)
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={default,highest}, algorithm=dot_tf32_tf32_f32, backend_config="tm=512"
})");
  ASSERT_NE(module, nullptr);
  const InstructionAttributes& d = Find(*module, "d").attributes();
  EXPECT_THAT(d.other, ElementsAre(Pair("operand_precision", "{default,highest}"),
                                   Pair("algorithm", "dot_tf32_tf32_f32")));
  EXPECT_EQ(d.backend_config, "\"tm=512\"");
}

TEST(HloParser, ParsesDotAndRaggedDotDimensionNumbers) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  a = f32[4,2,10] parameter(0)
  b = f32[4,10,3] parameter(1)
  d = f32[4,2,3] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  x = f32[6,4] parameter(2)
  w = f32[3,4,5] parameter(3)
  g = s64[3] parameter(4)
  ROOT r = f32[6,5] ragged-dot(x, w, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
})");
  ASSERT_NE(module, nullptr);
  const DotDimensionNumbers& d = *Find(*module, "d").attributes().dot_dimension_numbers;
  EXPECT_THAT(d.lhs_batch_dimensions, ElementsAre(0));
  EXPECT_THAT(d.lhs_contracting_dimensions, ElementsAre(2));
  EXPECT_THAT(d.rhs_batch_dimensions, ElementsAre(0));
  EXPECT_THAT(d.rhs_contracting_dimensions, ElementsAre(1));
  const InstructionAttributes& r = Find(*module, "r").attributes();
  EXPECT_FALSE(r.dot_dimension_numbers.has_value());
  ASSERT_TRUE(r.ragged_dot_dimension_numbers.has_value());
  EXPECT_THAT(r.ragged_dot_dimension_numbers->dot.lhs_contracting_dimensions, ElementsAre(1));
  EXPECT_THAT(r.ragged_dot_dimension_numbers->lhs_ragged_dimensions, ElementsAre(0));
  EXPECT_THAT(r.ragged_dot_dimension_numbers->rhs_group_dimensions, ElementsAre(0));
}

TEST(HloParser, ParsesGatherAndScatterDimensionNumbers) {
  auto module = Parse(R"(HloModule m
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT sum = f32[] add(a, b) }
ENTRY e {
  x = bf16[1024,512] parameter(0)
  i = s32[1024,512,1] parameter(1)
  g = bf16[1024,512] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}, indices_are_sorted=true
  o = f32[16,16] parameter(2)
  j = s32[8,2] parameter(3)
  u = f32[8] parameter(4)
  ROOT s = f32[16,16] scatter(o, j, u), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, unique_indices=true, to_apply=add
})");
  ASSERT_NE(module, nullptr);
  const InstructionAttributes& g = Find(*module, "g").attributes();
  ASSERT_TRUE(g.gather_dimension_numbers.has_value());
  EXPECT_THAT(g.gather_dimension_numbers->collapsed_slice_dims, ElementsAre(1));
  EXPECT_THAT(g.gather_dimension_numbers->operand_batching_dims, ElementsAre(0));
  EXPECT_EQ(g.gather_dimension_numbers->index_vector_dim, 2);
  EXPECT_THAT(g.gather_slice_sizes, ElementsAre(1, 1));
  EXPECT_EQ(g.indices_are_sorted, true);
  const Instruction& s = Find(*module, "s");
  ASSERT_TRUE(s.attributes().scatter_dimension_numbers.has_value());
  EXPECT_THAT(s.attributes().scatter_dimension_numbers->inserted_window_dims, ElementsAre(0, 1));
  EXPECT_EQ(s.attributes().scatter_dimension_numbers->index_vector_dim, 1);
  EXPECT_FALSE(s.attributes().gather_dimension_numbers.has_value());
  EXPECT_EQ(s.attributes().unique_indices, true);
  EXPECT_EQ(s.to_apply()->name(), "add");
}

TEST(HloParser, ParsesSlicePaddingWindowAndConvolutionAttributes) {
  auto module = Parse(R"(HloModule m
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT sum = f32[] add(a, b) }
ENTRY e {
  x = f32[8,16] parameter(0)
  s = f32[4,8] slice(x), slice={[0:4], [0:16:2]}
  z = f32[] constant(0)
  p = f32[10,33] pad(x, z), padding=1_1x-1_2_2
  w = f32[8,16] reduce-window(x, z), window={size=1x3 stride=1x2 pad=0_0x1_1 lhs_dilate=1x2 rhs_dilate=1x3 rhs_reversal=0x1}, to_apply=add
  k = f32[3,3,16,4] parameter(1)
  i = f32[1,8,8,16] parameter(2)
  ROOT c = f32[1,8,8,4] convolution(i, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1
})");
  ASSERT_NE(module, nullptr);
  EXPECT_THAT(*Find(*module, "s").attributes().slice,
              ElementsAre(SliceDimension{0, 4, 1}, SliceDimension{0, 16, 2}));
  EXPECT_THAT(*Find(*module, "p").attributes().padding,
              ElementsAre(PaddingDimension{1, 1, 0}, PaddingDimension{-1, 2, 2}));
  const std::vector<WindowDimension>& w = *Find(*module, "w").attributes().window;
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].size, 3);
  EXPECT_EQ(w[1].stride, 2);
  EXPECT_EQ(w[1].padding_low, 1);
  EXPECT_EQ(w[1].padding_high, 1);
  EXPECT_EQ(w[1].base_dilation, 2);
  EXPECT_EQ(w[1].window_dilation, 3);
  EXPECT_TRUE(w[1].window_reversal);
  EXPECT_FALSE(w[0].window_reversal);
  EXPECT_EQ(Find(*module, "c").attributes().dim_labels, "b01f_01io->b01f");
  EXPECT_EQ(Find(*module, "c").attributes().window->size(), 2u);
}

TEST(HloParser, ParsesScalarAttributes) {
  auto module = Parse(R"(HloModule m
cmp { a = f32[] parameter(0) b = f32[] parameter(1) ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER }
ENTRY e {
  x = f32[10,10] parameter(0)
  io = s32[10] iota(), iota_dimension=0
  t = (f32[10,2], s32[10,2]) topk(x), k=2, largest=false
  s = f32[10,10] sort(x), dimensions={1}, is_stable=true, to_apply=cmp
  r = f32[10,10] reduce-precision(x), exponent_bits=5, mantissa_bits=10
  ROOT bc = f32[10,10,3] broadcast(x), dimensions={0,1}
})");
  ASSERT_NE(module, nullptr);
  const InstructionAttributes& lt = Find(*module, "lt").attributes();
  EXPECT_EQ(lt.comparison_direction, ComparisonDirection::kLt);
  EXPECT_EQ(lt.comparison_type, "TOTALORDER");
  EXPECT_EQ(Find(*module, "io").attributes().iota_dimension, 0);
  EXPECT_EQ(Find(*module, "t").attributes().k, 2);
  EXPECT_FALSE(Find(*module, "t").attributes().largest);
  EXPECT_TRUE(Find(*module, "s").attributes().is_stable);
  EXPECT_EQ(Find(*module, "r").attributes().exponent_bits, 5);
  EXPECT_EQ(Find(*module, "r").attributes().mantissa_bits, 10);
  EXPECT_THAT(*Find(*module, "bc").attributes().dimensions, ElementsAre(0, 1));
}

TEST(HloParser, ExpandsIotaReplicaGroups) {
  auto module = Parse(R"(HloModule m, replica_count=20
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT sum = f32[] add(a, b) }
ENTRY e {
  x = f32[8] parameter(0)
  t = f32[8] all-reduce(x), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=add
  u = f32[8] all-reduce(x), replica_groups=[2,10]<=[20], to_apply=add
  v = f32[8] all-reduce(x), replica_groups={{0,1},{3,2}}, to_apply=add
  ROOT w = f32[8] all-reduce(x), replica_groups={}, to_apply=add
})");
  ASSERT_NE(module, nullptr);
  // [2,4]<=[4,2]T(1,0): iota(8) reshaped to [4,2] is {{0,1},{2,3},{4,5},{6,7}}; transposed by
  // (1,0) it is {{0,2,4,6},{1,3,5,7}}; read row-major in 2 groups of 4.
  const ReplicaGroups& t = *Find(*module, "t").attributes().replica_groups;
  EXPECT_THAT(t.groups, ElementsAre(ElementsAre(0, 2, 4, 6), ElementsAre(1, 3, 5, 7)));
  ASSERT_TRUE(t.iota.has_value());
  EXPECT_THAT(t.iota->transpose_permutation, ElementsAre(1, 0));
  // [2,10]<=[20]: iota(20) cut into 2 rows of 10.
  const ReplicaGroups& u = *Find(*module, "u").attributes().replica_groups;
  ASSERT_EQ(u.groups.size(), 2u);
  EXPECT_THAT(u.groups[1], ElementsAre(10, 11, 12, 13, 14, 15, 16, 17, 18, 19));
  EXPECT_THAT(Find(*module, "v").attributes().replica_groups->groups,
              ElementsAre(ElementsAre(0, 1), ElementsAre(3, 2)));
  EXPECT_FALSE(Find(*module, "v").attributes().replica_groups->iota.has_value());
  EXPECT_TRUE(Find(*module, "w").attributes().replica_groups->groups.empty());
}

TEST(HloParser, RejectsIotaReplicaGroupsThatDoNotMultiplyOut) {
  const char* kText = R"(HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  ROOT t = f32[8] all-gather(x), replica_groups=%s, dimensions={0}
})";
  for (const char* groups : {"[3,4]<=[8]", "[2,4]<=[4,2]T(0,0)", "[2,4]<=[4,2]T(2,0)",
                             "[1000000000,1000000000]<=[1000000000,1000000000]", "[0,4]<=[4]"}) {
    std::string text = kText;
    text.replace(text.find("%s"), 2, groups);
    EXPECT_THAT(ParseHloModule(text),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4:49: expected")))
        << groups;
  }
}

TEST(HloParser, ParsesCollectiveAttributesAndAsyncPairs) {
  auto module = Parse(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[1024] parameter(0)
  ag = (f32[1024], f32[4096]) all-gather-start(p), replica_groups={{0,1,2,3}}, channel_id=1, use_global_device_ids=true, dimensions={0}
  agd = f32[4096] all-gather-done(ag)
  cp = (f32[1024], f32[1024]) collective-permute-start(p), channel_id=2, source_target_pairs={{0,3},{1,0},{2,1},{3,2}}
  ROOT cpd = f32[1024] collective-permute-done(cp)
})");
  ASSERT_NE(module, nullptr);
  const Instruction& ag = Find(*module, "ag");
  EXPECT_EQ(ag.opcode(), Opcode::kAllGatherStart);
  EXPECT_EQ(ag.attributes().channel_id, 1);
  EXPECT_TRUE(ag.attributes().use_global_device_ids);
  EXPECT_EQ(Find(*module, "agd").operand(0), &ag);
  EXPECT_THAT(*Find(*module, "cp").attributes().source_target_pairs,
              ElementsAre(Pair(0, 3), Pair(1, 0), Pair(2, 1), Pair(3, 2)));
}

TEST(HloParser, ParsesGenericAsyncStartWithCalls) {
  auto module = Parse(R"(HloModule m
add { a = bf16[] parameter(0) b = bf16[] parameter(1) ROOT t = bf16[] add(a, b) }
async_comp {
  x = bf16[8192,128] parameter(0)
  ROOT r = bf16[64,128] reduce-scatter(x), dimensions={0}, to_apply=add, replica_groups=[1,128]<=[128]
}
ENTRY e {
  p = bf16[8192,128] parameter(0)
  s = ((bf16[8192,128]), bf16[64,128]) async-start(p), calls=async_comp
  ROOT d = bf16[64,128] async-done(s)
})");
  ASSERT_NE(module, nullptr);
  const Instruction& s = Find(*module, "s");
  EXPECT_EQ(s.opcode(), Opcode::kAsyncStart);
  ASSERT_EQ(s.calls().size(), 1u);
  EXPECT_EQ(s.calls()[0]->name(), "async_comp");
  EXPECT_EQ(Find(*module, "d").opcode(), Opcode::kAsyncDone);
}

TEST(HloParser, DesugarsCustomCallStartIntoAWrappedComputation) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  %p0 = f32[10]{0} parameter(0)
  %s = ((f32[10]{0}), f32[20]{0}, s32[]) custom-call-start(f32[10]{0} %p0), custom_call_target="foo"
  %u = ((f32[10]{0}), f32[20]{0}, s32[]) custom-call-update(%s)
  ROOT %d = f32[20]{0} custom-call-done(%u)
})");
  ASSERT_NE(module, nullptr);
  const Instruction& s = Find(*module, "s");
  EXPECT_EQ(s.opcode(), Opcode::kAsyncStart);
  ASSERT_EQ(s.calls().size(), 1u);
  const Computation& wrapped = *s.calls()[0];
  EXPECT_EQ(wrapped.root()->opcode(), Opcode::kCustomCall);
  EXPECT_EQ(wrapped.root()->attributes().custom_call_target, "foo");
  EXPECT_EQ(wrapped.root()->shape().ToString(), "f32[20]{0}");
  ASSERT_EQ(wrapped.parameter_count(), 1);
  EXPECT_EQ(wrapped.parameter(0)->shape().ToString(), "f32[10]{0}");
  EXPECT_EQ(Find(*module, "u").opcode(), Opcode::kAsyncUpdate);
  EXPECT_EQ(Find(*module, "d").opcode(), Opcode::kAsyncDone);
}

TEST(HloParser, NamesInlineComputationsUniquely) {
  auto module = Parse(R"(HloModule m
f.calls { ROOT q = f32[] parameter(0) }
ENTRY e {
  x = f32[4] parameter(0)
  f = f32[4] fusion(x), kind=kLoop, calls=
  {
    a = f32[4] parameter(0)
    ROOT n = f32[4] negate(a)
  }
  z = f32[] constant(0)
  ROOT r = f32[] reduce(f, z), dimensions={0}, to_apply={
    a = f32[] parameter(0)
    b = f32[] parameter(1)
    ROOT s = f32[] add(a, b)
  }
})");
  ASSERT_NE(module, nullptr);
  const Instruction& f = Find(*module, "f");
  EXPECT_EQ(f.attributes().fusion_kind, FusionKind::kLoop);
  ASSERT_EQ(f.calls().size(), 1u);
  // "f.calls" is taken by a named computation, so the inline one gets a suffix.
  EXPECT_EQ(f.calls()[0]->name(), "f.calls.1");
  EXPECT_EQ(f.calls()[0]->root()->opcode(), Opcode::kNegate);
  EXPECT_EQ(Find(*module, "r").to_apply()->name(), "r.to_apply");
  EXPECT_EQ(module->computations().size(), 4u);
}

TEST(HloParser, ParsesWhileAndBothConditionalForms) {
  auto module = Parse(R"(HloModule m
c { p = s32[] parameter(0) k = s32[] constant(5) ROOT lt = pred[] compare(p, k), direction=LT }
b { p = s32[] parameter(0) one = s32[] constant(1) ROOT n = s32[] add(p, one) }
ENTRY e {
  z = s32[] constant(0)
  w = s32[] while(z), condition=c, body=b, backend_config={"known_trip_count":{"n":"5"}}
  pr = pred[] constant(true)
  t = s32[] conditional(pr, z, z), true_computation=b, false_computation=b
  ROOT x = s32[] conditional(w, z, z), branch_computations={b, b}
})");
  ASSERT_NE(module, nullptr);
  const Instruction& w = Find(*module, "w");
  EXPECT_EQ(w.condition()->name(), "c");
  EXPECT_EQ(w.body()->name(), "b");
  const Instruction& t = Find(*module, "t");
  EXPECT_TRUE(t.branches_are_true_false());
  EXPECT_EQ(t.branch_computations().size(), 2u);
  const Instruction& x = Find(*module, "x");
  EXPECT_FALSE(x.branches_are_true_false());
  EXPECT_EQ(x.branch_computations().size(), 2u);
}

TEST(HloParser, ParsesSelectAndScatterComputations) {
  auto module = Parse(R"(HloModule m
ge { a = f32[] parameter(0) b = f32[] parameter(1) ROOT c = pred[] compare(a, b), direction=GE }
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT sum = f32[] add(a, b) }
ENTRY e {
  x = f32[4,4] parameter(0)
  g = f32[2,2] parameter(1)
  z = f32[] constant(0)
  ROOT s = f32[4,4] select-and-scatter(x, g, z), window={size=2x2 stride=2x2}, select=ge, scatter=add
})");
  ASSERT_NE(module, nullptr);
  const Instruction& s = Find(*module, "s");
  EXPECT_EQ(s.select()->name(), "ge");
  EXPECT_EQ(s.scatter()->name(), "add");
  EXPECT_EQ(s.attributes().window->at(0).stride, 2);
}

TEST(HloParser, ResolvesControlPredecessorsIncludingForwardOnes) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  a = f32[] constant(1), control-predecessors={b}
  b = f32[] constant(2)
  ROOT c = f32[] add(a, b), control-predecessors={a, b}
})");
  ASSERT_NE(module, nullptr);
  const Instruction& a = Find(*module, "a");
  ASSERT_EQ(a.control_predecessors().size(), 1u);
  EXPECT_EQ(a.control_predecessors()[0]->name(), "b");
  EXPECT_EQ(Find(*module, "c").control_predecessors().size(), 2u);
}

TEST(HloParser, KeepsExecutionThreadAndStackFrameIndex) {
  auto module = Parse(R"(HloModule m

FileNames
1 "model.py"

FileLocations
1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=9}

ENTRY e {
  ROOT p = f32[] parameter(0), metadata={op_name="x" stack_frame_id=1}
}, execution_thread="main")");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->entry()->execution_thread(), "main");
  EXPECT_EQ(module->stack_frame_index(),
            "FileNames\n1 \"model.py\"\n\nFileLocations\n1 {file_name_id=1 function_name_id=1 "
            "line=3 end_line=3 column=1 end_column=9}");
}

TEST(HloParser, ErrorsCarryFileLineAndColumn) {
  EXPECT_THAT(
      ParseHloModule("HloModule m\nENTRY e {\n  ROOT x = f32[] foo()\n}", "bad.hlo"),
      StatusIs(absl::StatusCode::kInvalidArgument, "bad.hlo:3:18: expected an opcode; got 'foo'"));
  // Without a filename the message starts at the line.
  EXPECT_THAT(ParseHloModule("HloModule m\nENTRY e {\n  ROOT x = f32[] foo()\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "3:18: expected an opcode; got 'foo'"));
}

TEST(HloParser, RejectsAbsurdNestingWithoutCrashing) {
  std::string shape;
  for (int i = 0; i < 100000; ++i) shape += "(";
  EXPECT_THAT(ParseHloModule("ENTRY e { ROOT p = " + shape + " parameter(0) }"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting at most 256")));
  std::string braces = "HloModule m\nENTRY e { ROOT p = f32[] parameter(0), metadata=";
  for (int i = 0; i < 100000; ++i) braces += "{";
  EXPECT_THAT(ParseHloModule(braces),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting at most 256")));
}

TEST(HloParser, ParseShapeIsExposed) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(Shape shape, ParseShape("(f32[2]{0}, s32[])"));
  EXPECT_TRUE(shape.IsTuple());
  EXPECT_EQ(shape.tuple_size(), 2);
}

}  // namespace
}  // namespace perfsim
