// Small GoogleTest matchers for absl::Status / absl::StatusOr (Abseil 20220623 has none).
//
//   EXPECT_THAT(status, IsOk());
//   EXPECT_THAT(status_or, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected")));
//   PERFSIM_ASSERT_OK_AND_ASSIGN(Shape s, InferShape(...));
#ifndef PERFSIM_SIM_UTIL_STATUS_MATCHERS_H_
#define PERFSIM_SIM_UTIL_STATUS_MATCHERS_H_

#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status.h"

namespace perfsim {
namespace testing {

MATCHER(IsOk, "is OK") {
  const absl::Status& status = ::perfsim::internal::AsStatus(arg);
  if (!status.ok()) *result_listener << "status is " << status;
  return status.ok();
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + std::string(absl::StatusCodeToString(code)) + " and a matching message") {
  const absl::Status& status = ::perfsim::internal::AsStatus(arg);
  *result_listener << "status is " << status;
  if (status.code() != code) return false;
  return ::testing::Matches(message_matcher)(std::string(status.message()));
}

}  // namespace testing
}  // namespace perfsim

#define PERFSIM_ASSERT_OK(expr) ASSERT_THAT((expr), ::perfsim::testing::IsOk())
#define PERFSIM_EXPECT_OK(expr) EXPECT_THAT((expr), ::perfsim::testing::IsOk())

#define PERFSIM_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                       \
  ASSERT_TRUE(tmp.ok()) << tmp.status();                   \
  lhs = std::move(tmp).value()

#define PERFSIM_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  PERFSIM_ASSERT_OK_AND_ASSIGN_IMPL_(PERFSIM_STATUS_CONCAT_(perfsim_assert_or_, __LINE__), lhs, expr)

#endif  // PERFSIM_SIM_UTIL_STATUS_MATCHERS_H_
