// libFuzzer target for the config loaders: arbitrary bytes go through the textproto parser (with
// its error recovery and location mapping) and, when they parse, through hardware, model and
// whole-step validation (a TrainingStepSpec against a fixed built-in model, then its derived
// quantities, FLOPs and HBM), the field-location lookup and both printers. Nothing may crash, hang or trip a
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
#include "sim/moe/model_registry.h"
#include "sim/hw/chip_registry.h"
#include "proto/step.pb.h"
#include "sim/step/model_flops.h"
#include "sim/step/step_memory.h"
#include "sim/step/training_step.h"
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

// A whole step: validated against Mixtral 8x7B (every range and divisibility check), then what
// its validity promises: the derived counts, both FLOP conventions and the HBM model (which
// simulates the pipeline schedule, bounded by the spec's task limit).
void FuzzStep(absl::string_view text) {
  perfsim::TrainingStepSpec spec;
  absl::StatusOr<perfsim::TextProtoSource> source =
      perfsim::ParseTextProto(text, "fuzz.textproto", &spec);
  if (!source.ok()) {
    CheckRejection(source.status());
    return;
  }
  static const perfsim::ModelConfig* const model =
      new perfsim::ModelConfig(*perfsim::ResolveModel("mixtral_8x7b"));
  static const perfsim::Chip* const chip = new perfsim::Chip(*perfsim::ResolveChip("gpu_h100"));
  absl::StatusOr<perfsim::TrainingStep> step = perfsim::TrainingStep::FromProto(spec, *model);
  if (!step.ok()) {
    Require(step.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  Require(step->microbatches() >= 1 && step->tokens_per_microbatch() >= 1);
  int64_t layers = 0;
  for (int64_t c = 0; c < step->pp() * step->vp(); ++c) layers += step->layers_in_chunk(c);
  Require(layers == model->proto().num_layers());
  perfsim::ModelFlopsPerStep(*model,
                             {.sequences = step->proto().global_batch(),
                              .seq_len = step->proto().seq_len(),
                              .mtp_layers = step->proto().mtp_layers()},
                             perfsim::FlopConvention::kMegatron);
  absl::StatusOr<perfsim::StepMemory> memory =
      perfsim::StepHbm(*step, *chip, /*search_max_micro_batch=*/false);
  Require(memory.ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  FuzzHardware(text);
  FuzzModel(text);
  FuzzStep(text);
  return 0;
}
