// backend_config JSON into typed messages (sim/ir/backend_config.h).
#include "sim/ir/backend_config.h"

#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "sim/ir/hlo_parser.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

// A module whose root is a custom-call with `config` as its backend_config text.
std::unique_ptr<Module> WithConfig(const std::string& config) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(absl::StrCat(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(p), custom_call_target="k", backend_config=)",
                                                                          config, "\n}\n"),
                                                             "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

TEST(BackendConfig, KnownTripCountReadsXlasStringInteger) {
  auto m = WithConfig(R"({"known_trip_count":{"n":"8"},"other":[1,{"x":2}]})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(KnownTripCountOf(*m->entry()->root()), 8);
  auto quoted = WithConfig(R"("{\"known_trip_count\":{\"n\":\"5\"}}")");
  ASSERT_NE(quoted, nullptr);
  EXPECT_EQ(KnownTripCountOf(*quoted->entry()->root()), 5);
  auto none = WithConfig(R"({"nested":{"known_trip_count":{"n":"3"}}})");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(KnownTripCountOf(*none->entry()->root()), std::nullopt);
}

TEST(BackendConfig, KernelTilingAndFlags) {
  auto m = WithConfig(R"({"tiling":[512,1024,128],"transpose_rhs":true,"group_offset":2})");
  ASSERT_NE(m, nullptr);
  KernelBackendConfig k;
  ASSERT_TRUE(ReadBackendConfig(*m->entry()->root(), &k).ok());
  ASSERT_EQ(k.tiling_size(), 3);
  EXPECT_EQ(k.tiling(0), 512);
  EXPECT_EQ(k.tiling(2), 128);
  EXPECT_TRUE(k.transpose_rhs());
  EXPECT_EQ(k.group_offset(), 2);
}

TEST(BackendConfig, PallasCostEstimateNestedInTheCustomCallConfig) {
  auto m = WithConfig(
      R"({"custom_call_config":{"body":"TUxJUg==","cost_estimate":{"flops":1e9,)"
      R"("transcendentals":0,"bytes_accessed":4096}}})");
  ASSERT_NE(m, nullptr);
  PallasBackendConfig p;
  ASSERT_TRUE(ReadBackendConfig(*m->entry()->root(), &p).ok());
  EXPECT_EQ(p.custom_call_config().cost_estimate().flops(), 1e9);
  EXPECT_EQ(p.custom_call_config().cost_estimate().bytes_accessed(), 4096);
}

TEST(BackendConfig, WrongTypeIsAnErrorNamingTheInstruction) {
  auto m = WithConfig(R"({"tiling":"wide"})");
  ASSERT_NE(m, nullptr);
  KernelBackendConfig k;
  const absl::Status s = ReadBackendConfig(*m->entry()->root(), &k);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("c: expected backend_config JSON for KernelBackendConfig; got"));
}

}  // namespace
}  // namespace perfsim
