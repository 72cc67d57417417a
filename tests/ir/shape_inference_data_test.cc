// Shape inference for slicing, concatenate, pad, reductions, sort, topk, gather, scatter and
// the dynamic-shape ops.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/shape_inference.h"
#include "sim/util/status_matchers.h"
#include "tests/ir/test_builder.h"

namespace perfsim {
namespace {

using ::perfsim::testing::HloBuilder;
using ::perfsim::testing::InfersShape;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::TestModule;
using ::testing::HasSubstr;

MATCHER_P(FailsWith, substring, "") {
  return ::testing::ExplainMatchResult(
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(substring)), arg, result_listener);
}

// ------------------------------------------------------------------------------- slicing

TEST(ShapeInference, SliceWithStrideRoundsUp) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[10,4]");
  Instruction* s = b.Add(Opcode::kSlice, "f32[3,4]", {x});
  // [1:10:3] takes 1, 4, 7: ceil((10-1)/3) = 3.
  s->mutable_attributes()->slice = std::vector<SliceDimension>{{1, 10, 3}, {0, 4, 1}};
  EXPECT_THAT(InferShape(*s), InfersShape("f32[3,4]"));
  s->mutable_attributes()->slice = std::vector<SliceDimension>{{1, 11, 1}, {0, 4, 1}};
  EXPECT_THAT(InferShape(*s),
              FailsWith("expected slice dimension 0 with 0 <= start <= limit <= 10 and stride >= "
                        "1; got [1:11:1]"));
}

TEST(ShapeInference, DynamicSliceUsesSliceSizes) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[50,32,256]");
  Instruction* i = b.Parameter(1, "s32[]");
  Instruction* ds = b.Add(Opcode::kDynamicSlice, "bf16[1,32,256]", {x, i, i, i});
  ds->mutable_attributes()->dynamic_slice_sizes = std::vector<int64_t>{1, 32, 256};
  EXPECT_THAT(InferShape(*ds), InfersShape("bf16[1,32,256]"));
  ds->mutable_attributes()->dynamic_slice_sizes = std::vector<int64_t>{1, 33, 256};
  EXPECT_THAT(InferShape(*ds), FailsWith("expected slice size 1 in [0, 32]; got 33"));
  Instruction* short_indices = b.Add(Opcode::kDynamicSlice, "bf16[1,32,256]", {x, i, i});
  short_indices->mutable_attributes()->dynamic_slice_sizes = std::vector<int64_t>{1, 32, 256};
  EXPECT_THAT(InferShape(*short_indices),
              FailsWith("expected 3 start indices (the rank of bf16[50,32,256]); got 2"));
}

TEST(ShapeInference, DynamicSliceTakesXlasOlderOneArrayForm) {
  // XLA's ShapeInference takes one rank-1 integer array of `rank` start indices whenever the
  // first index has rank 1 -- on a rank-1 operand s32[1] too (change_op_data_type_test).
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f16[10]");
  Instruction* one = b.Parameter(1, "s32[1]");
  Instruction* f = b.Parameter(2, "f32[1]");
  Instruction* y = b.Parameter(3, "f32[6,4]");
  Instruction* two = b.Parameter(4, "s64[2]");
  Instruction* ds = b.Add(Opcode::kDynamicSlice, "f16[1]", {x, one});
  ds->mutable_attributes()->dynamic_slice_sizes = std::vector<int64_t>{1};
  EXPECT_THAT(InferShape(*ds), InfersShape("f16[1]"));
  Instruction* ds2 = b.Add(Opcode::kDynamicSlice, "f32[2,4]", {y, two});
  ds2->mutable_attributes()->dynamic_slice_sizes = std::vector<int64_t>{2, 4};
  EXPECT_THAT(InferShape(*ds2), InfersShape("f32[2,4]"));
  // XLA: "Dynamic slice start indices must be of integral type" (buffer_assignment_test's
  // f32[1] start indices), and the array holds one index per dimension.
  EXPECT_THAT(InferShape(*b.Add(Opcode::kDynamicUpdateSlice, "f16[10]", {x, x, f})),
              FailsWith("expected start indices as one integer array of 1 elements (the rank of "
                        "f16[10]); got f32[1]"));
  Instruction* wrong = b.Add(Opcode::kDynamicSlice, "f32[2,4]", {y, one});
  wrong->mutable_attributes()->dynamic_slice_sizes = std::vector<int64_t>{2, 4};
  EXPECT_THAT(InferShape(*wrong), FailsWith("of 2 elements (the rank of f32[6,4]); got s32[1]"));
}

TEST(ShapeInference, DynamicUpdateSliceKeepsOperandShape) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[50,32]");
  Instruction* u = b.Parameter(1, "bf16[1,32]");
  Instruction* big = b.Parameter(2, "bf16[1,33]");
  Instruction* i = b.Parameter(3, "s32[]");
  Instruction* f = b.Parameter(4, "f32[]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kDynamicUpdateSlice, "bf16[50,32]", {x, u, i, i})),
              InfersShape("bf16[50,32]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kDynamicUpdateSlice, "bf16[50,32]", {x, big, i, i})),
              FailsWith("expected update dimension 1 <= operand dimension (32); got 33"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kDynamicUpdateSlice, "bf16[50,32]", {x, u, i, f})),
              FailsWith("expected an integer scalar start index as operand 3; got f32[]"));
}

TEST(ShapeInference, ConcatenateSumsTheDimension) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "s32[8,1]");
  Instruction* y = b.Parameter(1, "s32[8,3]");
  Instruction* z = b.Parameter(2, "s32[7,1]");
  Instruction* c = b.Add(Opcode::kConcatenate, "s32[8,4]", {x, y});
  c->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  EXPECT_THAT(InferShape(*c), InfersShape("s32[8,4]"));
  Instruction* bad = b.Add(Opcode::kConcatenate, "s32[8,2]", {x, z});
  bad->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  EXPECT_THAT(InferShape(*bad),
              FailsWith("expected operands like s32[8,1] except in dimension 1; got s32[7,1] as "
                        "operand 1"));
}

TEST(ShapeInference, PadWithInteriorAndNegativeEdges) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4,3]");
  Instruction* zero = b.Parameter(1, "f32[]");
  Instruction* pad = b.Add(Opcode::kPad, "f32[10,5]", {x, zero});
  // dim 0: 4 + 1 - 1 + 3*2 = 10; dim 1: 3 + 1 + 1 = 5.
  pad->mutable_attributes()->padding = std::vector<PaddingDimension>{{1, -1, 2}, {1, 1, 0}};
  EXPECT_THAT(InferShape(*pad), InfersShape("f32[10,5]"));
  Instruction* int_value = b.Parameter(2, "s32[]");
  Instruction* bad = b.Add(Opcode::kPad, "f32[10,5]", {x, int_value});
  bad->mutable_attributes()->padding = std::vector<PaddingDimension>{{1, -1, 2}, {1, 1, 0}};
  EXPECT_THAT(InferShape(*bad), FailsWith("expected a f32[] padding value; got s32[]"));
}

// ---------------------------------------------------------------------------- reductions

TEST(ShapeInference, ReduceRemovesReducedDimensions) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[32,40,8]");
  Instruction* zero = b.Parameter(1, "f32[]");
  Instruction* r = b.Add(Opcode::kReduce, "f32[40]", {x, zero});
  r->mutable_attributes()->dimensions = std::vector<int64_t>{0, 2};
  r->set_to_apply(add);
  EXPECT_THAT(InferShape(*r), InfersShape("f32[40]"));
}

TEST(ShapeInference, ReduceVariadicReturnsTuple) {
  TestModule m;
  // (acc0, acc1, x0, x1) -> (acc0 max x0, acc1 + x1): an argmax-like pair reduction.
  HloBuilder red = m.NewComputation("pair");
  Instruction* a0 = red.Parameter(0, "f32[]");
  Instruction* a1 = red.Parameter(1, "s32[]");
  Instruction* x0 = red.Parameter(2, "f32[]");
  Instruction* x1 = red.Parameter(3, "s32[]");
  Instruction* m0 = red.Add(Opcode::kMaximum, "f32[]", {a0, x0});
  Instruction* m1 = red.Add(Opcode::kAdd, "s32[]", {a1, x1});
  red.Add(Opcode::kTuple, "(f32[], s32[])", {m0, m1});
  HloBuilder b = m.Entry();
  Instruction* v = b.Parameter(0, "f32[32,40]");
  Instruction* i = b.Parameter(1, "s32[32,40]");
  Instruction* fz = b.Parameter(2, "f32[]");
  Instruction* iz = b.Parameter(3, "s32[]");
  Instruction* r = b.Add(Opcode::kReduce, "(f32[32], s32[32])", {v, i, fz, iz});
  r->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  r->set_to_apply(red.computation());
  EXPECT_THAT(InferShape(*r), InfersShape("(f32[32], s32[32])"));
  // Swapping the init values breaks the accumulator types.
  Instruction* swapped = b.Add(Opcode::kReduce, "(f32[32], s32[32])", {v, i, iz, fz});
  swapped->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  swapped->set_to_apply(red.computation());
  EXPECT_THAT(InferShape(*swapped),
              FailsWith("expected to_apply computation pair taking (s32[], f32[], f32[], s32[]); "
                        "got parameter 0 of shape f32[]"));
}

TEST(ShapeInference, ReduceRejectsReducerWithWrongParameterCount) {
  TestModule m;
  HloBuilder neg = m.NewComputation("neg");
  neg.Add(Opcode::kNegate, "f32[]", {neg.Parameter(0, "f32[]")});
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4]");
  Instruction* zero = b.Parameter(1, "f32[]");
  Instruction* r = b.Add(Opcode::kReduce, "f32[]", {x, zero});
  r->mutable_attributes()->dimensions = std::vector<int64_t>{0};
  r->set_to_apply(neg.computation());
  EXPECT_THAT(InferShape(*r),
              FailsWith("expected to_apply computation neg taking (f32[], f32[]) (2 scalar "
                        "parameters); got 1 parameters"));
}

TEST(ShapeInference, ReduceRequiresToApplyAndEvenOperandCount) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4]");
  Instruction* zero = b.Parameter(1, "f32[]");
  Instruction* r = b.Add(Opcode::kReduce, "f32[]", {x, zero}, "r");
  r->mutable_attributes()->dimensions = std::vector<int64_t>{0};
  EXPECT_THAT(InferShape(*r), FailsWith("r: expected a to_apply computation; got none"));
  Instruction* odd = b.Add(Opcode::kReduce, "f32[]", {x, zero, zero});
  EXPECT_THAT(InferShape(*odd),
              FailsWith("expected an even number (>= 2) of operands: inputs then init values; "
                        "got 3"));
}

TEST(ShapeInference, ReduceAcceptsMixedFloatPrecision) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[4,8]");
  Instruction* zero = b.Parameter(1, "f32[]");
  Instruction* r = b.Add(Opcode::kReduce, "f32[4]", {x, zero});
  r->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  r->set_to_apply(add);
  EXPECT_THAT(InferShape(*r), InfersShape("f32[4]"));
}

TEST(ShapeInference, ReduceWindowCumsumKeepsShape) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "bf16");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[4,512]");
  Instruction* zero = b.Parameter(1, "bf16[]");
  Instruction* rw = b.Add(Opcode::kReduceWindow, "bf16[4,512]", {x, zero});
  WindowDimension row;
  WindowDimension cols;
  cols.size = 1023;
  cols.padding_low = 511;
  cols.padding_high = 511;
  // 512 + 511 + 511 - 1023 + 1 = 512.
  rw->mutable_attributes()->window = std::vector<WindowDimension>{row, cols};
  rw->set_to_apply(add);
  EXPECT_THAT(InferShape(*rw), InfersShape("bf16[4,512]"));
  rw->mutable_attributes()->window = std::vector<WindowDimension>{cols};
  EXPECT_THAT(InferShape(*rw),
              FailsWith("expected a window of 2 dimensions (the rank of bf16[4,512]); got 1 "
                        "dimension"));
  rw->mutable_attributes()->window.reset();
  EXPECT_THAT(InferShape(*rw), FailsWith("expected a window of 2 dimensions (the rank of "
                                         "bf16[4,512]); got no window"));
}

TEST(ShapeInference, ReduceWindowTakesItsElementTypeFromTheInitValue) {
  // XLA's InferReduceWindowShape: InferWindowOutputShape(operand, window,
  // init_value_shape.element_type()). An f32 reducer over f32 data with a bf16 init (fp
  // precision may differ) gives bf16, not the reducer's f32 as reduce would
  // (algebraic_simplifier_test__059 in XLA's suite).
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[32,8]");
  Instruction* init = b.Parameter(1, "bf16[]");
  Instruction* rw = b.Add(Opcode::kReduceWindow, "bf16[32,8]", {x, init});
  WindowDimension unit;
  rw->mutable_attributes()->window = std::vector<WindowDimension>{unit, unit};
  rw->set_to_apply(add);
  EXPECT_THAT(InferShape(*rw), InfersShape("bf16[32,8]"));
}

TEST(ShapeInference, WindowedOpsOnAScalarTakeNoWindow) {
  // XLA's hlo_parser_test R4UnitWindowScalar / SelectAndScatterScalar: no `window=` is the
  // empty window, which is a rank-0 window, so a scalar input gives a scalar result.
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  Computation* ge = m.ScalarBinary("ge", "f32", Opcode::kCompare);
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[]");
  Instruction* init = b.Parameter(1, "f32[]");
  Instruction* rw = b.Add(Opcode::kReduceWindow, "f32[]", {x, init});
  rw->set_to_apply(add);
  EXPECT_THAT(InferShape(*rw), InfersShape("f32[]"));
  Instruction* sas = b.Add(Opcode::kSelectAndScatter, "f32[]", {x, init, init});
  sas->set_select(ge);
  sas->set_scatter(add);
  EXPECT_THAT(InferShape(*sas), InfersShape("f32[]"));
}

TEST(ShapeInference, SelectAndScatterSourceMatchesWindowedOperand) {
  TestModule m;
  Computation* ge = m.ScalarBinary("ge", "f32", Opcode::kCompare);
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4,4]");
  Instruction* source = b.Parameter(1, "f32[2,2]");
  Instruction* zero = b.Parameter(2, "f32[]");
  Instruction* sas = b.Add(Opcode::kSelectAndScatter, "f32[4,4]", {x, source, zero});
  WindowDimension w;
  w.size = 2;
  w.stride = 2;
  sas->mutable_attributes()->window = std::vector<WindowDimension>{w, w};
  sas->set_select(ge);
  sas->set_scatter(add);
  EXPECT_THAT(InferShape(*sas), InfersShape("f32[4,4]"));
  w.stride = 1;  // (4-2)/1+1 = 3: the source no longer fits the windows.
  sas->mutable_attributes()->window = std::vector<WindowDimension>{w, w};
  EXPECT_THAT(InferShape(*sas),
              FailsWith("expected a source of the windowed operand's dimensions {3,3}; got "
                        "f32[2,2]"));
}

// ---------------------------------------------------------------------------------- sort

Computation* KeyValueComparator(TestModule& m, std::vector<absl::string_view> types,
                                absl::string_view root_type = "pred[]") {
  HloBuilder cmp = m.NewComputation("compare");
  std::vector<Instruction*> params;
  for (size_t i = 0; i < 2 * types.size(); ++i) {
    params.push_back(cmp.Parameter(i, absl::StrCat(types[i / 2], "[]")));
  }
  Instruction* lt = cmp.Add(Opcode::kCompare, root_type, {params[0], params[1]});
  lt->mutable_attributes()->comparison_direction = ComparisonDirection::kLt;
  return cmp.computation();
}

TEST(ShapeInference, SortMultiOperandReturnsTuple) {
  TestModule m;
  Computation* cmp = KeyValueComparator(m, {"f32", "s32"});
  HloBuilder b = m.Entry();
  Instruction* keys = b.Parameter(0, "f32[1024,16]");
  Instruction* values = b.Parameter(1, "s32[1024,16]");
  Instruction* sort = b.Add(Opcode::kSort, "(f32[1024,16], s32[1024,16])", {keys, values});
  sort->mutable_attributes()->dimensions = std::vector<int64_t>{0};
  sort->set_to_apply(cmp);
  EXPECT_THAT(InferShape(*sort), InfersShape("(f32[1024,16], s32[1024,16])"));
  Instruction* one = b.Add(Opcode::kSort, "f32[1024,16]", {keys}, "sort.one");
  one->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  one->set_to_apply(cmp);
  EXPECT_THAT(InferShape(*one),
              FailsWith("sort.one: expected comparator compare taking 2 scalar parameters (2 per "
                        "operand); got 4"));
}

TEST(ShapeInference, SortRejectsComparatorNotReturningPred) {
  TestModule m;
  Computation* cmp = KeyValueComparator(m, {"f32"}, "s32[]");
  HloBuilder b = m.Entry();
  Instruction* keys = b.Parameter(0, "f32[16]");
  Instruction* sort = b.Add(Opcode::kSort, "f32[16]", {keys});
  sort->mutable_attributes()->dimensions = std::vector<int64_t>{0};
  sort->set_to_apply(cmp);
  EXPECT_THAT(InferShape(*sort),
              FailsWith("expected comparator compare returning pred[]; got s32[]"));
}

TEST(ShapeInference, SortRejectsComparatorParameterTypes) {
  TestModule m;
  Computation* cmp = KeyValueComparator(m, {"f32", "f32"});
  HloBuilder b = m.Entry();
  Instruction* keys = b.Parameter(0, "f32[16]");
  Instruction* values = b.Parameter(1, "s32[16]");
  Instruction* sort = b.Add(Opcode::kSort, "(f32[16], s32[16])", {keys, values});
  sort->mutable_attributes()->dimensions = std::vector<int64_t>{0};
  sort->set_to_apply(cmp);
  EXPECT_THAT(InferShape(*sort),
              FailsWith("expected comparator parameter 2 of shape s32[]; got f32[]"));
}

TEST(ShapeInference, TopKReturnsValuesAndS32Indices) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[10,64]");
  Instruction* topk = b.Add(Opcode::kTopK, "(bf16[10,8], s32[10,8])", {x});
  topk->mutable_attributes()->k = 8;
  EXPECT_THAT(InferShape(*topk), InfersShape("(bf16[10,8], s32[10,8])"));
  topk->mutable_attributes()->k = 65;
  EXPECT_THAT(InferShape(*topk), FailsWith("expected k in [0, 64]; got 65"));
}

// ------------------------------------------------------------------------ gather/scatter

Instruction* AddGather(HloBuilder& b, absl::string_view shape, Instruction* operand,
                       Instruction* indices, GatherDimensionNumbers dn,
                       std::vector<int64_t> slice_sizes) {
  Instruction* g = b.Add(Opcode::kGather, shape, {operand, indices});
  g->mutable_attributes()->gather_dimension_numbers = std::move(dn);
  g->mutable_attributes()->gather_slice_sizes = std::move(slice_sizes);
  return g;
}

TEST(ShapeInference, GatherEmbeddingLookupWithImplicitIndexVector) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* table = b.Parameter(0, "f32[100,64]");
  Instruction* ids = b.Parameter(1, "s32[8]");
  GatherDimensionNumbers dn;
  dn.offset_dims = {1};
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;  // == rank of ids: an implicit trailing size-1 index vector.
  EXPECT_THAT(InferShape(*AddGather(b, "f32[8,64]", table, ids, dn, {1, 64})),
              InfersShape("f32[8,64]"));
}

TEST(ShapeInference, GatherWithBatchingDims) {
  TestModule m;
  HloBuilder b = m.Entry();
  // take_along_axis(x[1024,512], idx[1024,512], axis=1) as JAX lowers it.
  Instruction* x = b.Parameter(0, "bf16[1024,512]");
  Instruction* idx = b.Parameter(1, "s32[1024,512,1]");
  GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = {1};
  dn.start_index_map = {1};
  dn.operand_batching_dims = {0};
  dn.start_indices_batching_dims = {0};
  dn.index_vector_dim = 2;
  EXPECT_THAT(InferShape(*AddGather(b, "bf16[1024,512]", x, idx, dn, {1, 1})),
              InfersShape("bf16[1024,512]"));
  Instruction* short_idx = b.Parameter(2, "s32[1000,512,1]");
  EXPECT_THAT(InferShape(*AddGather(b, "bf16[1000,512]", x, short_idx, dn, {1, 1})),
              FailsWith("expected operand batching dimension 0 (size 1024) to equal indices "
                        "batching dimension 0 (size 1000); got 1024 vs 1000"));
}

TEST(ShapeInference, GatherFiveDimensionalOffsets) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[50,49,48,47,46]");
  Instruction* idx = b.Parameter(1, "s64[10,9,8,7,5]");
  GatherDimensionNumbers dn;
  dn.offset_dims = {4, 5, 6, 7, 8};
  dn.start_index_map = {0, 1, 2, 3, 4};
  dn.index_vector_dim = 4;
  EXPECT_THAT(
      InferShape(*AddGather(b, "f32[10,9,8,7,30,29,28,27,26]", x, idx, dn, {30, 29, 28, 27, 26})),
      InfersShape("f32[10,9,8,7,30,29,28,27,26]"));
}

TEST(ShapeInference, GatherRejectsCollapsedDimWithSliceAboveOne) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* table = b.Parameter(0, "f32[100,64]");
  Instruction* ids = b.Parameter(1, "s32[8,1]");
  GatherDimensionNumbers dn;
  dn.offset_dims = {1};
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;
  EXPECT_THAT(InferShape(*AddGather(b, "f32[8,64]", table, ids, dn, {2, 64})),
              FailsWith("expected slice size <= 1 for collapsed or batching dimension 0; got 2"));
  dn.start_index_map = {0, 1};
  EXPECT_THAT(InferShape(*AddGather(b, "f32[8,64]", table, ids, dn, {1, 64})),
              FailsWith("expected start_index_map with one entry per index vector element (1); "
                        "got {0,1}"));
}

Instruction* AddScatter(HloBuilder& b, absl::string_view shape, std::vector<Instruction*> operands,
                        ScatterDimensionNumbers dn, Computation* to_apply) {
  Instruction* s = b.Add(Opcode::kScatter, shape, std::move(operands));
  s->mutable_attributes()->scatter_dimension_numbers = std::move(dn);
  s->set_to_apply(to_apply);
  return s;
}

TEST(ShapeInference, ScatterAddWithWindowUpdates) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "s32");
  HloBuilder b = m.Entry();
  Instruction* operand = b.Parameter(0, "s32[1,4096]");
  Instruction* indices = b.Parameter(1, "s32[4096,2]");
  Instruction* updates = b.Parameter(2, "s32[4096,1,1]");
  ScatterDimensionNumbers dn;
  dn.update_window_dims = {1, 2};
  dn.scatter_dims_to_operand_dims = {0, 1};
  dn.index_vector_dim = 1;
  EXPECT_THAT(InferShape(*AddScatter(b, "s32[1,4096]", {operand, indices, updates}, dn, add)),
              InfersShape("s32[1,4096]"));
  Instruction* bad_updates = b.Parameter(3, "s32[4095,1,1]");
  EXPECT_THAT(InferShape(*AddScatter(b, "s32[1,4096]", {operand, indices, bad_updates}, dn, add)),
              FailsWith("expected update scatter dimensions {4096} (the index dimensions of "
                        "s32[4096,2]); got {4095} in s32[4095,1,1]"));
}

TEST(ShapeInference, ScatterVariadicReturnsTuple) {
  TestModule m;
  HloBuilder update = m.NewComputation("update");
  update.Parameter(0, "s32[]");
  update.Parameter(1, "f32[]");
  Instruction* r0 = update.Parameter(2, "s32[]");
  Instruction* r1 = update.Parameter(3, "f32[]");
  update.Add(Opcode::kTuple, "(s32[], f32[])", {r0, r1});
  HloBuilder b = m.Entry();
  Instruction* o0 = b.Parameter(0, "s32[3,3,2]");
  Instruction* o1 = b.Parameter(1, "f32[3,3,2]");
  Instruction* idx = b.Parameter(2, "s32[2,2]");
  Instruction* u0 = b.Parameter(3, "s32[2,2]");
  Instruction* u1 = b.Parameter(4, "f32[2,2]");
  ScatterDimensionNumbers dn;
  dn.update_window_dims = {1};
  dn.inserted_window_dims = {0, 1};
  dn.scatter_dims_to_operand_dims = {0, 1};
  dn.index_vector_dim = 1;
  EXPECT_THAT(InferShape(*AddScatter(b, "(s32[3,3,2], f32[3,3,2])", {o0, o1, idx, u0, u1}, dn,
                                     update.computation())),
              InfersShape("(s32[3,3,2], f32[3,3,2])"));
  // Update window 3 > operand dimension 2 (size 2).
  Instruction* wide = b.Parameter(5, "s32[2,3]");
  Instruction* wide_f = b.Parameter(6, "f32[2,3]");
  EXPECT_THAT(InferShape(*AddScatter(b, "(s32[3,3,2], f32[3,3,2])", {o0, o1, idx, wide, wide_f}, dn,
                                     update.computation())),
              FailsWith("expected update window dimension 1 <= operand dimension 2 (size 2); "
                        "got 3"));
}

TEST(ShapeInference, ScatterWithBatchingDims) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  // Per-row scatter: out[b, idx[b, j]] += upd[b, j], batching over b.
  Instruction* operand = b.Parameter(0, "f32[4,16]");
  Instruction* idx = b.Parameter(1, "s32[4,3,1]");
  Instruction* upd = b.Parameter(2, "f32[4,3]");
  ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {1};
  dn.scatter_dims_to_operand_dims = {1};
  dn.input_batching_dims = {0};
  dn.scatter_indices_batching_dims = {0};
  dn.index_vector_dim = 2;
  EXPECT_THAT(InferShape(*AddScatter(b, "f32[4,16]", {operand, idx, upd}, dn, add)),
              InfersShape("f32[4,16]"));
  dn.scatter_dims_to_operand_dims = {0};
  EXPECT_THAT(InferShape(*AddScatter(b, "f32[4,16]", {operand, idx, upd}, dn, add)),
              FailsWith("expected input_batching_dims disjoint from inserted_window_dims and "
                        "scatter_dims_to_operand_dims; got dimension 0 in both"));
}

// -------------------------------------------------------------------------- dynamic shapes

TEST(ShapeInference, DimensionSizeOps) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[16,8]");
  Instruction* n = b.Parameter(1, "s32[]");
  Instruction* get = b.Add(Opcode::kGetDimensionSize, "s32[]", {x});
  get->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  EXPECT_THAT(InferShape(*get), InfersShape("s32[]"));
  Instruction* set = b.Add(Opcode::kSetDimensionSize, "f32[<=16,8]", {x, n});
  set->mutable_attributes()->dimensions = std::vector<int64_t>{0};
  PERFSIM_ASSERT_OK_AND_ASSIGN(Shape shape, InferShape(*set));
  EXPECT_EQ(shape.ToString(), "f32[<=16,8]");
  Instruction* reshape = b.Add(Opcode::kDynamicReshape, "f32[<=128]", {x, n});
  EXPECT_THAT(InferShape(*reshape), InfersShape("f32[<=128]"));
  Instruction* bad = b.Add(Opcode::kDynamicReshape, "f32[<=16,8]", {x, n});
  EXPECT_THAT(InferShape(*bad),
              FailsWith("expected 3 operands (operand and one size per result dimension); got 2"));
}

}  // namespace
}  // namespace perfsim
