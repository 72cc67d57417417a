// What an expert-parallel row's backend_kernel cell says about the kernel: its mode and the SMs
// it was given.
//
//   ParseEpKernelText("DeepEP V2 ElasticBuffer, 12 SMs");          // {kNormal, 12}
//   ParseEpKernelText("HybridEP, 8 SMs, Torch API timing");        // {kNormal, 8}
//   ParseEpKernelText("DeepEP low-latency kernels, 24 SMs");       // {kLowLatency, 24}
//   ParseEpKernelText("DeepEP normal (high-throughput) kernels");  // {kNormal, 0}: not stated
//
// Mode: "low-latency", "low latency" or "low_latency" (any case) is kLowLatency; anything else
// (DeepEP's "normal" / "high-throughput", HybridEP, nothing said) is kNormal. SMs: the integer
// before the word "SMs" or "SM" ("12 SMs", "64 SM"; not "8 SM90 GPUs"); 0 when none is given.
#ifndef PERFSIM_SIM_ACCURACY_EP_FIELDS_H_
#define PERFSIM_SIM_ACCURACY_EP_FIELDS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "sim/comm/ep_dispatch.h"

namespace perfsim {

struct EpKernelText {
  EpKernelMode mode = EpKernelMode::kNormal;
  int64_t sms = 0;  // 0: not stated
};

EpKernelText ParseEpKernelText(absl::string_view backend_kernel);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_EP_FIELDS_H_
