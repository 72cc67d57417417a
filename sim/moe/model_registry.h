// The built-in models (models/*.textproto, compiled into the binary) and the `--model` resolver.
//
//   BuiltinModelNames();                  // {"deepseek_v2_lite", ..., "qwen3_30b_a3b"}, sorted
//   ResolveModel("nano");                 // the test-sized model
//   ResolveModel("my/model.textproto");   // a file: any argument with '/' or ending ".textproto"
//   ResolveModel("gpt5");                 // NotFound: "unknown model 'gpt5'; known: ..."
//
// Built-in files report problems under their source path ("models/nano.textproto:4:1: ...") and
// must name themselves after their file ("name" equals the file stem).
#ifndef PERFSIM_SIM_MOE_MODEL_REGISTRY_H_
#define PERFSIM_SIM_MOE_MODEL_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/moe/model_config.h"
#include "sim/util/textproto.h"

namespace perfsim {

// Every models/*.textproto of the source tree at build time, sorted by path. Generated.
absl::Span<const EmbeddedTextProto> BuiltinModelFiles();

// Names of the built-in models, sorted.
std::vector<std::string> BuiltinModelNames();

// Loads and validates the built-in model `name`; NotFound listing the known names otherwise.
absl::StatusOr<ModelConfig> LoadBuiltinModel(absl::string_view name);

// A built-in name, or a path to a .textproto file (see LooksLikeTextProtoPath).
absl::StatusOr<ModelConfig> ResolveModel(absl::string_view name_or_path);

}  // namespace perfsim

#endif  // PERFSIM_SIM_MOE_MODEL_REGISTRY_H_
