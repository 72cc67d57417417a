#include "absl/strings/string_view.h"
#include "sim/util/status.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace perfsim {
namespace internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": PERFSIM_CHECK failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  // An internal invariant broke: this is a perfsim bug, not bad input. Print and abort so that
  // sanitizers and debuggers stop right here.
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

}  // namespace perfsim
