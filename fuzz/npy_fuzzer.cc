// libFuzzer target for the .npy reader behind `perfsim run --inputs` (sim/interp/npy.h).
//
// Arbitrary bytes go through ParseNpy, and through ReadNpyFile on a file holding them (with and
// without an expected element type, as `perfsim run` reads an input for a parameter). An
// accepted array is written back with SerializeNpy and read again.
//
// Checked: nothing crashes, hangs or trips a sanitizer; ParseNpy rejects with an
// InvalidArgument starting "npy: " (its documented form) and ReadNpyFile with one starting with
// the file's path; the round trip keeps the dimensions and the bytes (bf16 read from '<V2' is
// written as its '<u2' bit pattern, so only the element width must match).
//
//   ./npy_fuzzer -max_len=4096 tests/testdata/hlo/jax/
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "sim/interp/npy.h"

namespace {

// A broken promise of the loader contract: abort so that libFuzzer records the input.
void Require(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "npy_fuzzer: broken contract: %s\n", what);
    std::abort();
  }
}

void CheckRejection(const absl::Status& status, absl::string_view prefix) {
  if (status.code() != absl::StatusCode::kInvalidArgument ||
      !absl::StartsWith(status.message(), prefix)) {
    fprintf(stderr, "npy_fuzzer: rejection: %s\n", status.ToString().c_str());
  }
  Require(status.code() == absl::StatusCode::kInvalidArgument, "rejection is InvalidArgument");
  Require(absl::StartsWith(status.message(), prefix), "rejection has the documented prefix");
}

const std::string& TempPath() {
  static const std::string* const path =
      new std::string(absl::StrCat("/tmp/npy_fuzzer.", getpid(), ".npy"));
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<perfsim::Literal> literal = perfsim::ParseNpy(bytes);
  {
    std::ofstream(TempPath(), std::ios::binary).write(bytes.data(), bytes.size());
    const std::optional<perfsim::PrimitiveType> expected =
        size % 2 == 0 ? std::nullopt : std::optional(perfsim::PrimitiveType::kBF16);
    absl::StatusOr<perfsim::Literal> read = perfsim::ReadNpyFile(TempPath(), expected);
    if (!read.ok()) CheckRejection(read.status(), absl::StrCat(TempPath(), ": "));
    Require(!literal.ok() || read.ok() || expected.has_value(), "file and bytes agree");
  }
  if (!literal.ok()) {
    CheckRejection(literal.status(), "npy: ");
    return 0;
  }
  absl::StatusOr<std::string> written = perfsim::SerializeNpy(*literal);
  Require(written.ok(), "an array read can be written");
  absl::StatusOr<perfsim::Literal> again = perfsim::ParseNpy(*written);
  Require(again.ok(), "what is written can be read");
  Require(again->shape().dimensions() == literal->shape().dimensions(), "same dimensions");
  Require(perfsim::ByteWidth(again->shape().element_type()) ==
              perfsim::ByteWidth(literal->shape().element_type()),
          "same element width");
  Require(again->data() == literal->data(), "same bytes");
  return 0;
}
