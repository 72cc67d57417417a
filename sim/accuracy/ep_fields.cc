// Reading an expert-parallel kernel's mode and SM budget (ep_fields.h).
#include "sim/accuracy/ep_fields.h"

#include <optional>
#include <string>
#include <vector>

#include "sim/accuracy/text_fields.h"

namespace perfsim {

EpKernelText ParseEpKernelText(absl::string_view backend_kernel) {
  EpKernelText out;
  for (absl::string_view spelling : {"low-latency", "low latency", "low_latency"}) {
    if (ContainsNoCase(backend_kernel, spelling)) out.mode = EpKernelMode::kLowLatency;
  }
  // "12 SMs": Words() splits "SMs," into "sms". Only "sm" / "sms": "8 SM90 GPUs" is no budget.
  const std::vector<std::string> words = Words(backend_kernel);
  for (size_t i = 1; i < words.size(); ++i) {
    if (words[i] != "sm" && words[i] != "sms") continue;
    if (std::optional<int64_t> sms = ParseInteger(words[i - 1])) out.sms = *sms;
  }
  return out;
}

}  // namespace perfsim
