// The sweep space: enumeration, sharding, canonical text, input errors.
#include "sim/sweep/space.h"

#include <memory>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/annotation.pb.h"
#include "sim/ir/hlo_printer.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "tests/sweep/sweep_test_util.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

TEST(SweepSpace, EnumeratesEveryFactorisationInLexicographicOrder) {
  // 8 = 2^3 devices: the ordered ways to give three factors of 2 to four axes are
  // C(3 + 3, 3) = 20, listed by (dp, fsdp, ep, tp) ascending: (1,1,1,8), (1,1,2,4), ...
  absl::StatusOr<SweepEnumeration> e = SweepEnumeration::Create(NanoSpace({"dense_einsum"}));
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->factorisations().size(), 20u);
  const Parallelism& first = e->factorisations()[0];
  EXPECT_EQ(std::vector<int64_t>({first.dp, first.fsdp, first.ep, first.tp}),
            std::vector<int64_t>({1, 1, 1, 8}));
  const Parallelism& last = e->factorisations().back();
  EXPECT_EQ(std::vector<int64_t>({last.dp, last.fsdp, last.ep, last.tp}),
            std::vector<int64_t>({8, 1, 1, 1}));
  for (const Parallelism& p : e->factorisations()) EXPECT_EQ(p.num_devices(), 8);
  EXPECT_EQ(e->num_points(), 20);
}

TEST(SweepSpace, PointsAreBlockTimesRoutingAndTilingsOnlyForTiledBackends) {
  SweepSpace s = NanoSpace({"dense_einsum", "megablox_gmm"});
  s.axes[kSweepDp] = {8};
  s.batch_per_device = {1, 2};
  s.tilings = {SweepTiling{}, SweepTiling{.search = true}};
  s.routings = {"uniform", "zipf:1.0", "hot:0.5"};
  absl::StatusOr<SweepEnumeration> e = SweepEnumeration::Create(s);
  ASSERT_TRUE(e.ok()) << e.status();
  // One factorisation (dp=8); dense_einsum: 2 batches × 1 tiling slot; megablox_gmm: 2 × 2.
  EXPECT_EQ(e->blocks().size(), 2u + 4u);
  EXPECT_EQ(e->num_points(), 6 * 3);
  const SweepScenario last = e->ScenarioAt(17);
  EXPECT_EQ(last.backend, "megablox_gmm");
  EXPECT_EQ(last.batch_per_device, 2);
  EXPECT_TRUE(last.tiling->search);
  EXPECT_EQ(last.routing, 2);
  const StepSpec spec = e->SpecOf(last);
  EXPECT_EQ(spec.batch, 16);  // 2 sequences × 8 devices
  EXPECT_EQ(spec.seq, 4);
  EXPECT_EQ(e->Label(e->ScenarioAt(0)), "dp=8 fsdp=1 ep=1 tp=1 dense_einsum b=1 default uniform");
}

TEST(SweepSpace, ShardsPartitionThePointsRoundRobin) {
  SweepSpace s = NanoSpace({"dense_einsum", "ep_ragged_a2a"});
  s.routings = {"uniform", "zipf:1.0"};
  absl::StatusOr<SweepEnumeration> e = SweepEnumeration::Create(s);
  ASSERT_TRUE(e.ok()) << e.status();
  const int64_t blocks = static_cast<int64_t>(e->blocks().size());
  ASSERT_EQ(blocks, 40);
  for (int64_t n : {1, 3, 40, 41, 80, 1000}) {
    std::set<int64_t> seen;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t p : e->ShardPoints(i, n)) EXPECT_TRUE(seen.insert(p).second) << p;
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), e->num_points()) << n;
  }
  // N <= blocks: whole blocks, round robin: shard 1 of 3 owns blocks 1, 4, 7, ...
  EXPECT_EQ(e->ShardPoints(1, 3)[0], 2);
  EXPECT_EQ(e->ShardPoints(1, 3)[1], 3);
  EXPECT_EQ(e->ShardPoints(1, 3)[2], 8);
  // N > blocks: single points, i, i+N, ...
  EXPECT_EQ(e->ShardPoints(5, 41), (std::vector<int64_t>{5, 46}));
  EXPECT_TRUE(e->ShardPoints(999, 1000).empty());
}

TEST(SweepSpace, CanonicalTextRoundTrips) {
  SweepSpace s = NanoSpace({"ep_ragged_a2a"});
  s.axes[kSweepEp] = {2, 4};
  s.tilings = {SweepTiling{.wi = ProjectionTilings{{8, 40, 56}, {8, 40, 56}, {8, 40, 56}}},
               SweepTiling{.search = true}};
  s.routings = {"uniform", "zipf:1.5"};
  const std::string text = CanonicalSweepSpaceText(s);
  absl::StatusOr<SweepSpace> parsed = ParseSweepSpace(text, "canonical");
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ(CanonicalSweepSpaceText(*parsed), text);
  EXPECT_THAT(text, HasSubstr("ep { values: [2, 4] }"));
  EXPECT_EQ(Fingerprint(text).size(), 16u);
  EXPECT_NE(Fingerprint(text), Fingerprint(text + " "));
}

TEST(SweepSpace, TextprotoErrorsCarryFileLineAndColumn) {
  absl::StatusOr<SweepSpace> s =
      ParseSweepSpace("model: \"nano\"\ntilings { wi: [1, 2] }\n", "space.textproto");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("space.textproto:2:"));
  EXPECT_THAT(s.status().message(), HasSubstr("expected tm,tk,tn"));
  absl::StatusOr<SweepSpace> typo = ParseSweepSpace("modle: \"nano\"\n", "space.textproto");
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.status().message(), HasSubstr("space.textproto:1:"));
}

TEST(SweepSpace, BadInputIsRejected) {
  SweepSpace not_dividing = NanoSpace({"dense_einsum"});
  not_dividing.axes[kSweepEp] = {3};
  absl::StatusOr<SweepEnumeration> e = SweepEnumeration::Create(not_dividing);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("ep: expected values dividing the 8 devices"));

  SweepSpace no_product = NanoSpace({"dense_einsum"});
  no_product.axes[kSweepEp] = {8};
  no_product.axes[kSweepTp] = {2};
  e = SweepEnumeration::Create(no_product);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("expected dp·fsdp·ep·tp = 8"));

  e = SweepEnumeration::Create(NanoSpace({"dense_einsum", "no_such_backend"}));
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("no_such_backend"));

  SweepSpace routing = NanoSpace({"dense_einsum"});
  routing.routings = {"zipf"};
  EXPECT_FALSE(SweepEnumeration::Create(routing).ok());

  for (const char* bad : {"4/4", "-1/2", "a/b", "1", "1/0", "1/2/3"}) {
    EXPECT_FALSE(ParseShardSpec(bad).ok()) << bad;
  }
  absl::StatusOr<std::pair<int64_t, int64_t>> ok = ParseShardSpec("3/4");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, 3);
  EXPECT_EQ(ok->second, 4);
}

// The module with the kernel configuration dropped from every annotation: ragged-dots carry
// their projection's tiling there (predict times a TPU ragged-dot with it) although the op
// itself, and so the lowered program, does not depend on it.
std::string PrintWithoutAnnotatedKernels(const Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const Annotation* annotation = instruction->annotation();
      if (annotation == nullptr || !annotation->has_kernel()) continue;
      auto stripped = std::make_shared<Annotation>(*annotation);
      stripped->clear_kernel();
      instruction->set_annotation(std::move(stripped));
    }
  }
  return PrintModule(module);
}

// BackendTakesTilings decides which backends get a tiling dimension: the others must lower
// the same program whatever the tiling, and the listed ones must not. (The ragged-dot
// backends' annotated tilings are left out of the comparison: see above.)
TEST(SweepSpace, OnlyTheListedBackendsReadTheTilings) {
  absl::StatusOr<ModelConfig> model = ResolveModel("nano");
  ASSERT_TRUE(model.ok());
  for (const MoeBackend* backend : Backends()) {
    StepSpec a = StepSpec::Defaults(*model);
    a.batch = 4;
    a.seq = 8;
    a.phase = Phase::kForwardBackward;
    a.backend = std::string(backend->name());
    a.parallelism = backend->DefaultParallelism(1, a);
    StepSpec b = a;
    b.knobs.wi = {{8, 16, 16}, {8, 16, 16}, {8, 16, 16}};
    b.knobs.wo = {{8, 16, 16}, {8, 16, 16}, {8, 16, 16}};
    absl::StatusOr<LoweredStep> la = LowerStep(a), lb = LowerStep(b);
    ASSERT_TRUE(la.ok()) << backend->name() << ": " << la.status();
    ASSERT_TRUE(lb.ok()) << backend->name() << ": " << lb.status();
    const bool same =
        PrintWithoutAnnotatedKernels(*la->module) == PrintWithoutAnnotatedKernels(*lb->module);
    EXPECT_EQ(same, !BackendTakesTilings(backend->name())) << backend->name();
  }
}

}  // namespace
}  // namespace perfsim
