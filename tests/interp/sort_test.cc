// Sorts with the comparators JAX emits run natively (sim/interp/evaluator_sort.cc
// NativeComparator); these tests run each one twice on the same random inputs, once as
// written and once with its root wrapped in `and(root, true)`, which no native form matches
// and the interpreter therefore calls per comparison, and require the same bytes out.
// Inputs mix NaNs of both signs and several payloads, -0.0 and +0.0, infinities and many
// ties, so that canonicalisation, total order and stability all matter.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::Run1;

// JAX's lt_to on a float key, as jax.numpy.argsort lowers it: -0.0 becomes +0.0 and every NaN
// the canonical NaN, then a total-order compare.
std::string CanonicalCompare(const std::string& type, const std::string& a, const std::string& b,
                             const std::string& direction, const std::string& tag) {
  auto canon = [&](const std::string& p, const std::string& s) {
    return absl::StrCat("  ne", s, " = pred[] compare(", p, ", ", p, "), direction=NE\n",
                        "  eq", s, " = pred[] compare(", p, ", zero", tag, "), direction=EQ\n",
                        "  z", s, " = ", type, "[] select(eq", s, ", zero", tag, ", ", p, ")\n",
                        "  c", s, " = ", type, "[] select(ne", s, ", nan", tag, ", z", s, ")\n");
  };
  return absl::StrCat("  nan", tag, " = ", type, "[] constant(nan)\n", "  zero", tag, " = ",
                      type, "[] constant(0)\n", canon(a, tag + "a"), canon(b, tag + "b"),
                      "  ", tag, " = pred[] compare(c", tag, "a, c", tag, "b), direction=",
                      direction, ", type=TOTALORDER\n");
}

// A module sorting `operands` (types) along dimension 1 of [rows, cols] with `comparator`
// (the body of a computation whose root is named `r`).
std::string SortModule(const std::vector<std::string>& types, const std::string& comparator,
                       int rows, int cols, bool interpreted) {
  std::string params;
  for (size_t k = 0; k < types.size(); ++k) {
    absl::StrAppend(&params, "  p", 2 * k, " = ", types[k], "[] parameter(", 2 * k, ")\n",
                    "  p", 2 * k + 1, " = ", types[k], "[] parameter(", 2 * k + 1, ")\n");
  }
  std::string body = comparator;
  if (interpreted) {
    body = absl::StrReplaceAll(body, {{"ROOT r =", "r0 ="}});
    absl::StrAppend(&body, "  t = pred[] constant(true)\n  ROOT r = pred[] and(r0, t)\n");
  }
  std::string shapes, operands, entry_params;
  for (size_t k = 0; k < types.size(); ++k) {
    const std::string shape = absl::StrCat(types[k], "[", rows, ",", cols, "]");
    absl::StrAppend(&shapes, k ? ", " : "", shape);
    absl::StrAppend(&operands, k ? ", " : "", "x", k);
    absl::StrAppend(&entry_params, "  x", k, " = ", shape, " parameter(", k, ")\n");
  }
  return absl::StrCat("HloModule sorts\n\ncmp {\n", params, body, "}\n\nENTRY e {\n",
                      entry_params, "  ROOT s = (", shapes, ") sort(", operands,
                      "), dimensions={1}, is_stable=true, to_apply=cmp\n}\n");
}

// Random elements drawn from a small pool so that ties are common.
Literal RandomFloats(PrimitiveType type, int64_t n, std::mt19937& rng) {
  Literal literal(Shape::Array(type, {n}));
  const int width = type == PrimitiveType::kF32 ? 4 : 2;
  const uint32_t f32_pool[] = {0x7fc00000u, 0xffc00000u, 0x7fc00001u, 0x7f800001u,
                               0x80000000u, 0x00000000u, 0x7f800000u, 0xff800000u,
                               0x3f800000u, 0xbf800000u, 0x40000000u, 0x3f000000u};
  const uint16_t bf16_pool[] = {0x7fc0, 0xffc0, 0x7fc1, 0x7f81, 0x8000, 0x0000,
                                0x7f80, 0xff80, 0x3f80, 0xbf80, 0x4000, 0x3f00};
  std::uniform_int_distribution<int> pick(0, 11);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* at = literal.mutable_data().data() + i * width;
    if (width == 4) {
      std::memcpy(at, &f32_pool[pick(rng)], 4);
    } else {
      std::memcpy(at, &bf16_pool[pick(rng)], 2);
    }
  }
  return literal;
}

Literal RandomInts(int64_t n, int range, std::mt19937& rng) {
  Literal literal(Shape::Array(PrimitiveType::kS32, {n}));
  std::uniform_int_distribution<int> pick(-range, range);
  for (int64_t i = 0; i < n; ++i) literal.SetFromInt64(i, pick(rng));
  return literal;
}

Literal Reshaped(const Literal& flat, PrimitiveType type, int rows, int cols) {
  std::vector<uint8_t> bytes(flat.data().begin(), flat.data().end());
  return Literal::CreateFromBytes(Shape::Array(type, {rows, cols}), std::move(bytes));
}

// Runs the native and the interpreted form on the same inputs; expects identical bytes.
void ExpectNativeMatchesInterpreted(const std::vector<std::string>& types,
                                    const std::string& comparator, int trials = 4) {
  constexpr int kRows = 5, kCols = 37;
  std::mt19937 rng(15);
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<Literal> inputs;
    for (const std::string& type : types) {
      const PrimitiveType t = type == "f32"    ? PrimitiveType::kF32
                              : type == "bf16" ? PrimitiveType::kBF16
                                               : PrimitiveType::kS32;
      const Literal flat = t == PrimitiveType::kS32 ? RandomInts(kRows * kCols, 3, rng)
                                                    : RandomFloats(t, kRows * kCols, rng);
      inputs.push_back(Reshaped(flat, t, kRows, kCols));
    }
    std::vector<Literal> again;
    for (const Literal& l : inputs) again.push_back(l);
    absl::StatusOr<std::vector<Literal>> native =
        Run1(SortModule(types, comparator, kRows, kCols, false), std::move(inputs));
    absl::StatusOr<std::vector<Literal>> interpreted =
        Run1(SortModule(types, comparator, kRows, kCols, true), std::move(again));
    ASSERT_TRUE(native.ok()) << native.status();
    ASSERT_TRUE(interpreted.ok()) << interpreted.status();
    ASSERT_EQ(native->size(), interpreted->size());
    for (size_t k = 0; k < native->size(); ++k) {
      EXPECT_TRUE((*native)[k].data() == (*interpreted)[k].data())
          << "operand " << k << " differs, trial " << trial;
    }
  }
}

TEST(NativeSort, JaxArgsortCanonicalLessThanOnBf16MatchesInterpreter) {
  // jnp.argsort(x) of bf16 keys: keys and an s32 iota, only the keys compared.
  ExpectNativeMatchesInterpreted(
      {"bf16", "s32"}, absl::StrReplaceAll(CanonicalCompare("bf16", "p0", "p1", "LT", "lt"),
                                           {{"  lt = pred[]", "  ROOT r = pred[]"}}));
}

TEST(NativeSort, JaxCanonicalGreaterThanOnF32MatchesInterpreter) {
  ExpectNativeMatchesInterpreted(
      {"f32", "s32"},
      absl::StrReplaceAll(CanonicalCompare("f32", "p0", "p1", "GT", "gt"),
                          {{"  gt = pred[]", "  ROOT r = pred[]"}}));
}

TEST(NativeSort, PlainAndTotalOrderComparesMatchInterpreter) {
  ExpectNativeMatchesInterpreted({"f32"}, "  ROOT r = pred[] compare(p0, p1), direction=LT\n");
  ExpectNativeMatchesInterpreted(
      {"f32"}, "  ROOT r = pred[] compare(p0, p1), direction=LT, type=TOTALORDER\n");
  // Parameters swapped: compare(p1, p0), direction=GT is p0 < p1, an ascending sort.
  ExpectNativeMatchesInterpreted({"bf16"}, "  ROOT r = pred[] compare(p1, p0), direction=GT\n");
  ExpectNativeMatchesInterpreted({"s32", "f32"},
                                 "  ROOT r = pred[] compare(p0, p1), direction=GT\n");
}

TEST(NativeSort, LexicographicTwoKeyComparatorMatchesInterpreter) {
  // JAX's comparator for lax.sort(..., num_keys=2): lt(k0) or (eq(k0) and lt(k1)), each key
  // canonicalised; a third operand rides along.
  const std::string comparator =
      CanonicalCompare("f32", "p0", "p1", "LT", "lt0") +
      CanonicalCompare("f32", "p0", "p1", "EQ", "eq0") +
      CanonicalCompare("bf16", "p2", "p3", "LT", "lt1") +
      "  tie = pred[] and(eq0, lt1)\n  ROOT r = pred[] or(lt0, tie)\n";
  ExpectNativeMatchesInterpreted({"f32", "bf16", "s32"}, comparator);
  // Integer keys: no canonicalisation, not() in the mix.
  ExpectNativeMatchesInterpreted(
      {"s32", "s32"},
      "  a = pred[] compare(p0, p1), direction=LT\n  e = pred[] compare(p0, p1), direction=EQ\n"
      "  g = pred[] compare(p2, p3), direction=GE\n  l = pred[] not(g)\n"
      "  tie = pred[] and(e, l)\n  ROOT r = pred[] or(a, tie)\n");
  // XLA's own stable-sort comparator (sort_fusion_with_iota_operand.hlo in the corpus): keys
  // tie when neither is less, select then compares the indices.
  ExpectNativeMatchesInterpreted(
      {"s32", "s32"},
      "  lt = pred[] compare(p0, p1), direction=LT\n  gt = pred[] compare(p1, p0), "
      "direction=LT\n  eq = pred[] compare(lt, gt), direction=EQ\n"
      "  li = pred[] compare(p2, p3), direction=LT\n  ROOT r = pred[] select(eq, li, lt)\n");
}

TEST(NativeSort, StableArgsortKeepsTiesInInputOrder) {
  // Keys [2, NaN, -0.0, 0.0, -NaN, 2] ascending, canonicalised: -0.0 == 0.0 and the NaNs are
  // equal and last, so the stable order of the iota is 2 3 0 5 1 4.
  const std::string hlo = SortModule(
      {"f32", "s32"},
      absl::StrReplaceAll(CanonicalCompare("f32", "p0", "p1", "LT", "lt"),
                          {{"  lt = pred[]", "  ROOT r = pred[]"}}),
      1, 6, false);
  Literal keys(Shape::Array(PrimitiveType::kF32, {1, 6}));
  const uint32_t bits[] = {0x40000000u, 0x7fc00000u, 0x80000000u,
                           0x00000000u, 0xffc00000u, 0x40000000u};
  std::memcpy(keys.mutable_data().data(), bits, sizeof(bits));
  std::vector<Literal> inputs;
  inputs.push_back(std::move(keys));
  inputs.push_back(::perfsim::testing::S32({1, 6}, {0, 1, 2, 3, 4, 5}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(hlo, std::move(inputs)));
  EXPECT_THAT(::perfsim::testing::Values(out[1]), ::testing::ElementsAre(2, 3, 0, 5, 1, 4));
}

}  // namespace
}  // namespace perfsim
