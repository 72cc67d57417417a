// Counting rules of sim/cost/op_counts.h on small modules whose counts are derived by hand in
// the comments (XLA's rules: shared/reference/xla_cost_model.md section 1).
#include "sim/cost/op_counts.h"

#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;

constexpr CountOptions kXla{.mode = CostMode::kXlaCompatible, .num_devices = 1};
constexpr CountOptions kTrue{.mode = CostMode::kTrue, .num_devices = 1};

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return nullptr;
  const absl::Status verified = VerifyModule(**module);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(module);
}

const Instruction& Root(const Module& module) { return *module.entry()->root(); }

TEST(CountDot, TwoFlopsPerMultiplyAddAndDenseBytes) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[64,24]{1,0} parameter(0)
  w = f32[24,640]{1,0} parameter(1)
  ROOT d = f32[64,640]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  for (const CountOptions& options : {kXla, kTrue}) {
    const OpCounts c = CountInstruction(Root(*m), options);
    // 2 * 64*640 outputs * 24 = 1966080; bytes 64*24*4, 24*640*4 and 64*640*4.
    EXPECT_EQ(c.flops, 1966080);
    EXPECT_THAT(c.operand_bytes, ElementsAre(6144, 61440));
    EXPECT_EQ(c.output_bytes, 163840);
    EXPECT_EQ(c.bytes_accessed, 6144 + 61440 + 163840);
  }
}

TEST(CountRaggedDot, XlaDropsTheRowsTrueCountKeepsThem) {
  // MoE mode [M=12,K=5] x [G=4,K=5,N=7] -> [12,7]: XLA deletes output dim 0 (M) and counts
  // 2*N*K = 70 (XLA's own number for the committed ragged_dot_noncontracting module); the work
  // is 2*M*K*N = 840.
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[12,5]{1,0} parameter(0)
  w = f32[4,5,7]{2,1,0} parameter(1)
  g = s32[4]{0} parameter(2)
  ROOT r = f32[12,7]{1,0} ragged-dot(x, w, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).flops, 70);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 840);
}

TEST(CountRaggedDot, RaggedContractingIsNotCountedPerGroup) {
  // [M=4,K=6] x [K=6,N=5] -> [G=3,4,5], K split among the groups: XLA 2*60*6 = 720 (G times
  // too many), true 2*M*N*K = 240.
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[4,6]{1,0} parameter(0)
  w = f32[6,5]{1,0} parameter(1)
  g = s32[3]{0} parameter(2)
  ROOT r = f32[3,4,5]{2,1,0} ragged-dot(x, w, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).flops, 720);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 240);
}

TEST(CountElementwise, TranscendentalsAreCountedApart) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[4,8]{1,0} parameter(0)
  a = f32[4,8]{1,0} exponential(x)
  ROOT b = f32[4,8]{1,0} add(a, x)
})");
  const OpCounts exp = CountInstruction(*m->entry()->FindInstruction("a"), kXla);
  EXPECT_EQ(exp.flops, 0);
  EXPECT_EQ(exp.transcendentals, 32);
  const OpCounts add = CountInstruction(Root(*m), kXla);
  EXPECT_EQ(add.flops, 32);
  // Two f32[4,8] operands read (128 B each) and one written.
  EXPECT_EQ(add.bytes_accessed, 384);
}

TEST(CountFusion, ParametersAreReadAsTheFusedCodeUsesThem) {
  // p0 f32[100]: read by a slice of 10 elements (40 B) and by a plain add (once: 400 B).
  // p1 f32[10]: read by two plain users (multiply, add), shared: 40 B once, plus a broadcast
  //   user that XLA charges every time: +40 B.
  // c: a 10-element constant, read once: 40 B. Result f32[10]: 40 B.
  // Total 40+400 + 40+40 + 40 + 40 = 600; flops: add 10 + multiply 10 + add 10 = 30.
  auto m = Parse(R"(HloModule m
fused {
  p0 = f32[100]{0} parameter(0)
  p1 = f32[10]{0} parameter(1)
  s = f32[10]{0} slice(p0), slice={[0:10]}
  c = f32[10]{0} constant({1,2,3,4,5,6,7,8,9,10})
  m1 = f32[10]{0} multiply(p1, c)
  b = f32[2,10]{1,0} broadcast(p1), dimensions={1}
  r = f32[2,10]{1,0} reduce-precision(b), exponent_bits=8, mantissa_bits=7
  a1 = f32[10]{0} add(s, m1)
  p0s = f32[100]{0} negate(p0)
  a2 = f32[10]{0} add(a1, p1)
  ROOT out = f32[10]{0} slice(p0s), slice={[0:10]}
}
ENTRY e {
  x = f32[100]{0} parameter(0)
  y = f32[10]{0} parameter(1)
  ROOT f = f32[10]{0} fusion(x, y), kind=kLoop, calls=fused
})");
  const OpCounts c = CountInstruction(Root(*m), kXla);
  // Fused flops: multiply 10, reduce-precision 20, add 10, negate 100, add 10 = 150.
  EXPECT_EQ(c.flops, 150);
  EXPECT_THAT(c.operand_bytes, ElementsAre(440, 80));
  EXPECT_EQ(c.output_bytes, 40);
  EXPECT_EQ(c.bytes_accessed, 440 + 80 + 40 + 40);
}

TEST(CountFusion, DynamicUpdateSliceRootWritesOnlyItsUpdate) {
  // In place: the buffer p0 is aliased (0 B), the update p1 is read (40 B) and written (40 B),
  // the index read (4 B): 84 B.
  auto m = Parse(R"(HloModule m
fused {
  p0 = f32[100]{0} parameter(0)
  p1 = f32[10]{0} parameter(1)
  i = s32[] parameter(2)
  ROOT d = f32[100]{0} dynamic-update-slice(p0, p1, i)
}
ENTRY e {
  x = f32[100]{0} parameter(0)
  y = f32[10]{0} parameter(1)
  z = s32[] parameter(2)
  ROOT f = f32[100]{0} fusion(x, y, z), kind=kLoop, calls=fused
})");
  const OpCounts c = CountInstruction(Root(*m), kXla);
  EXPECT_THAT(c.operand_bytes, ElementsAre(0, 40, 4));
  EXPECT_EQ(c.output_bytes, 40);
  EXPECT_EQ(c.bytes_accessed, 84);
}

TEST(CountFusion, UnusedTupleLeafChargesThePointerTable) {
  // XLA's own test IgnoreUnusedParameterShape expects 19 B for a (s8[3], s8[100]) parameter of
  // which only element 0 is used: 3 B for the leaf read through its get-tuple-element, and 16 B
  // (the 2-element pointer table) for the leaf nobody extracts.
  auto m = Parse(R"(HloModule m
fused {
  p = (s8[3]{0}, s8[100]{0}) parameter(0)
  g = s8[3]{0} get-tuple-element(p), index=0
  ROOT n = s8[3]{0} negate(g)
}
ENTRY e {
  t = (s8[3]{0}, s8[100]{0}) parameter(0)
  ROOT f = s8[3]{0} fusion(t), kind=kLoop, calls=fused
})");
  EXPECT_THAT(CountInstruction(Root(*m), kXla).operand_bytes, ElementsAre(19));
}

TEST(CountWhile, XlaCountsOneIterationTrueCountUsesTheTripCount) {
  // Body: one add of f32[4] (4 flops) and one s32 add (1); condition: one compare (1).
  // XLA: one of each = 6. True: known_trip_count 5: 5 * 5 + 6 * 1 = 31.
  auto m = Parse(R"(HloModule m
body {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4]{0} get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4]{0} add(x, x)
  ROOT t = (s32[], f32[4]{0}) tuple(j, y)
}
cond {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  init = (s32[], f32[4]{0}) parameter(0)
  ROOT w = (s32[], f32[4]{0}) while(init), condition=cond, body=body, backend_config={"known_trip_count":{"n":"5"}}
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).flops, 6);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 31);
  EXPECT_EQ(KnownTripCount(Root(*m)), 5);
}

TEST(CountCustomCall, XlaSaysUnknownTrueCountsTheBuffers) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[8]{0} parameter(0)
  ROOT c = f32[8]{0} custom-call(x), custom_call_target="foo"
})");
  const OpCounts xla = CountInstruction(Root(*m), kXla);
  EXPECT_EQ(xla.flops, -1);
  EXPECT_EQ(xla.bytes_accessed, -1);
  EXPECT_THAT(xla.operand_bytes, ElementsAre(-1));
  const OpCounts truth = CountInstruction(Root(*m), kTrue);
  EXPECT_EQ(truth.flops, 0);
  EXPECT_EQ(truth.bytes_accessed, 64);
}

TEST(CountCustomCall, DeclaredPallasCostIsUsed) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = bf16[128,256]{1,0} parameter(0)
  ROOT c = bf16[128,256]{1,0} custom-call(x), custom_call_target="tpu_custom_call", backend_config={"custom_call_config":{"body":"abc","cost_estimate":{"flops":1000,"transcendentals":7,"bytes_accessed":131072}}}
})");
  const OpCounts c = CountInstruction(Root(*m), kTrue);
  EXPECT_EQ(c.flops, 1000);
  EXPECT_EQ(c.transcendentals, 7);
  EXPECT_EQ(c.bytes_accessed, 131072);
}

TEST(CountCustomCall, WorkIsKnownOnlyForTheKernelsCountingModels) {
  // A declared cost (top level or in Pallas' custom_call_config), an allocation and TopK in its
  // counted (values, indices) form are known; an unknown target, or a TopK of another form,
  // is only its traffic; a non-custom-call is not a custom-call kernel at all.
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[8,16]{1,0} parameter(0)
  a = f32[8,16]{1,0} custom-call(x), custom_call_target="tpu_custom_call", backend_config={"custom_call_config":{"cost_estimate":{"flops":10}}}
  b = f32[8,16]{1,0} custom-call(x), custom_call_target="my_kernel", backend_config={"cost_estimate":{"flops":10}}
  c = f32[8,16]{1,0} custom-call(), custom_call_target="AllocateBuffer"
  d = (f32[8,4]{1,0}, s32[8,4]{1,0}) custom-call(x), custom_call_target="TopK"
  u = f32[8,16]{1,0} custom-call(x), custom_call_target="my_kernel"
  v = f32[8,4]{1,0} custom-call(x), custom_call_target="TopK"
  ROOT n = f32[8,16]{1,0} negate(x)
})");
  std::map<std::string, bool> known;
  for (const auto& instruction : m->entry()->instructions()) {
    known[instruction->name()] = CustomCallWorkKnown(*instruction);
  }
  EXPECT_TRUE(known["a"]);
  EXPECT_TRUE(known["b"]);
  EXPECT_TRUE(known["c"]);
  EXPECT_TRUE(known["d"]);
  EXPECT_FALSE(known["u"]);
  EXPECT_FALSE(known["v"]);
  EXPECT_FALSE(known["n"]);
}

TEST(CountTuple, XlaChargesThePointerTable) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[8]{0} parameter(0)
  y = s32[] parameter(1)
  ROOT t = (f32[8]{0}, s32[], f32[8]{0}) tuple(x, y, x)
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).bytes_accessed, 24);  // 3 elements x 8 B
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).bytes_accessed, 0);
}

TEST(CountAllReduce, XlaAssumesTwoReplicasTrueCountUsesTheGroup) {
  // f32[16] over groups of 4: XLA 16 additions; a ring does (N-1)/N * 16 = 12 per device.
  auto m = Parse(R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[16]{0} parameter(0)
  ROOT r = f32[16]{0} all-reduce(x), replica_groups={{0,1,2,3}}, to_apply=add
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).flops, 16);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 12);
}

TEST(CountSort, XlaSortsAllElementsTrueCountSortsRows) {
  // f32[4,8] sorted along dim 1: XLA n*ceil(log2 n) with n = 32: 160. True: each row of 8:
  // 32 * log2(8) = 96 comparisons of one compare each.
  auto m = Parse(R"(HloModule m
lt { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = pred[] compare(a, b), direction=LT }
ENTRY e {
  x = f32[4,8]{1,0} parameter(0)
  ROOT s = f32[4,8]{1,0} sort(x), dimensions={1}, to_apply=lt
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).flops, 160);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 96);
}

TEST(CountReduce, ReducerRunsInputMinusOutputTimes) {
  // f32[4,6] -> f32[4]: 24 - 4 = 20 applications of a one-flop reducer.
  auto m = Parse(R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[4,6]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4]{0} reduce(x, z), dimensions={1}, to_apply=add
})");
  const OpCounts c = CountInstruction(Root(*m), kXla);
  EXPECT_EQ(c.flops, 20);
  EXPECT_EQ(c.bytes_accessed, 96 + 4 + 16);
}

TEST(CountReduceWindow, XlaSpecialCasesReduceThenBroadcast) {
  // f32[8], window 15 = 2N-1 with padding N-1 = 7 on both sides: every output is the sum of
  // all 8 inputs. XLA counts E(out)/N + (N-1) = 1 + 7 = 8 applications
  // (xla_cost_model.md 1.2); the true count is (window-1) * E(out) = 14 * 8 = 112.
  auto m = Parse(R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[8]{0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8]{0} reduce-window(x, z), window={size=15 pad=7_7}, to_apply=add
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).flops, 8);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 112);
}

TEST(CountComputation, XlaTotalsRoundLikeFloat32) {
  // The dot does 2*64*2048*64 = 2^24 flops, the negate 1. XLA sums in float32, where
  // 2^24 + 1 rounds back to 2^24; the true total is exact.
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[64,64]{1,0} parameter(0)
  w = f32[64,2048]{1,0} parameter(1)
  d = f32[64,2048]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[1]{0} parameter(2)
  n = f32[1]{0} negate(s)
  ROOT t = (f32[64,2048]{1,0}, f32[1]{0}) tuple(d, n)
})");
  EXPECT_EQ(CountComputation(*m->entry(), kXla).flops, 16777216);
  EXPECT_EQ(CountComputation(*m->entry(), kTrue).flops, 16777217);
}

TEST(CountReshape, RowMajorReshapeIsABitcastInTrueCounts) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[4,6]{1,0} parameter(0)
  ROOT r = f32[24]{0} reshape(x)
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).bytes_accessed, 192);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).bytes_accessed, 0);
}

}  // namespace
}  // namespace perfsim
