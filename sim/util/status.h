// Status helpers for perfsim.
//
// Debian 12 ships Abseil 20220623, which has no absl/log and no status macros, so the
// project defines its own:
//
//   PERFSIM_RETURN_IF_ERROR(expr);            // returns the Status if !ok()
//   PERFSIM_ASSIGN_OR_RETURN(auto x, expr);   // unwraps a StatusOr or returns its Status
//   PERFSIM_CHECK(cond) << "message";         // internal invariant; aborts with a message
//
// PERFSIM_CHECK is for *our* bugs only. Anything caused by input (a file, a flag, a module)
// must come back as an absl::Status with a canonical code and an "expected X; got Y" message.
#ifndef PERFSIM_SIM_UTIL_STATUS_H_
#define PERFSIM_SIM_UTIL_STATUS_H_

#include "absl/strings/string_view.h"
#include <sstream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace perfsim {
namespace internal {

// Collects a streamed message and aborts when destroyed. Used only by PERFSIM_CHECK.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  [[noreturn]] ~CheckFailure();

  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `PERFSIM_CHECK(c) << x` be an expression of type void in both branches.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

inline const absl::Status& AsStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& AsStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace internal

// Prepends `context` to the message of a non-OK status, keeping its code:
// "context: original message". Returns OK unchanged.
absl::Status Annotate(const absl::Status& status, absl::string_view context);

}  // namespace perfsim

#define PERFSIM_CHECK(condition) \
  (condition) ? (void)0          \
              : ::perfsim::internal::Voidify() & ::perfsim::internal::CheckFailure(__FILE__, __LINE__, #condition)

#define PERFSIM_STATUS_CONCAT_INNER_(a, b) a##b
#define PERFSIM_STATUS_CONCAT_(a, b) PERFSIM_STATUS_CONCAT_INNER_(a, b)

#define PERFSIM_RETURN_IF_ERROR(expr)                                               \
  do {                                                                              \
    const ::absl::Status perfsim_status_ = ::perfsim::internal::AsStatus((expr));   \
    if (!perfsim_status_.ok()) return perfsim_status_;                              \
  } while (false)

#define PERFSIM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

#define PERFSIM_ASSIGN_OR_RETURN(lhs, expr) \
  PERFSIM_ASSIGN_OR_RETURN_IMPL_(PERFSIM_STATUS_CONCAT_(perfsim_statusor_, __LINE__), lhs, expr)

#endif  // PERFSIM_SIM_UTIL_STATUS_H_
