// libFuzzer target for the config loaders: arbitrary bytes go through the textproto parser (with
// its error recovery and location mapping) and, when they parse, through hardware and model
// validation, the field-location lookup and both printers. Nothing may crash, hang or trip a
// sanitizer; every rejection must be an InvalidArgument naming the file.
//
//   ./textproto_fuzzer -max_len=4096 hardware/ models/
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "proto/hardware.pb.h"
#include "proto/model.pb.h"
#include "sim/hw/chip.h"
#include "sim/moe/model_config.h"
#include "sim/util/proto_format.h"
#include "sim/util/textproto.h"

namespace {

// A broken promise of the loader contract: abort so that libFuzzer records the input.
void Require(bool condition) {
  if (!condition) std::abort();
}

void CheckRejection(const absl::Status& status) {
  Require(status.code() == absl::StatusCode::kInvalidArgument);
  Require(absl::StartsWith(status.message(), "fuzz.textproto"));
}

void FuzzHardware(absl::string_view text) {
  perfsim::HardwareSpec spec;
  absl::StatusOr<perfsim::TextProtoSource> source =
      perfsim::ParseTextProto(text, "fuzz.textproto", &spec);
  if (!source.ok()) {
    CheckRejection(source.status());
    return;
  }
  source->Where("interconnect.dimensions[0].size_chips");
  source->Where("compute.matrix_unit.units_per_core");
  absl::StatusOr<perfsim::Chip> chip = perfsim::Chip::FromProto(spec, &*source);
  if (chip.ok()) {
    chip->InterconnectSummary();
    chip->RidgeBf16FlopsPerByte();
  }
  perfsim::ProtoToJson(spec);
  perfsim::DescribeProtoFields(spec, /*include_unset=*/true);
}

void FuzzModel(absl::string_view text) {
  perfsim::ModelSpec spec;
  absl::StatusOr<perfsim::TextProtoSource> source =
      perfsim::ParseTextProto(text, "fuzz.textproto", &spec);
  if (!source.ok()) {
    CheckRejection(source.status());
    return;
  }
  source->Where("router.num_groups");
  absl::StatusOr<perfsim::ModelConfig> model = perfsim::ModelConfig::FromProto(spec, &*source);
  if (model.ok()) {
    // Validation bounds the dimensions so that these products cannot overflow (UBSan checks).
    model->RoutedParamsTotal();
    model->RoutedFlopsPerToken();
    model->SharedFlopsPerToken();
    model->BytesPerExpert();
  }
  perfsim::ProtoToJson(spec);
  perfsim::DescribeProtoFields(spec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  FuzzHardware(text);
  FuzzModel(text);
  return 0;
}
