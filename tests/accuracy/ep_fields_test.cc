// Reading an expert-parallel kernel's mode and SM budget from backend_kernel (ep_fields.h), on
// the spellings of shared/reference/calibration.csv.
#include "sim/accuracy/ep_fields.h"

#include "gtest/gtest.h"

namespace perfsim {
namespace {

TEST(EpFields, ReadsTheSmBudget) {
  EXPECT_EQ(ParseEpKernelText("DeepEP V2 ElasticBuffer, 12 SMs").sms, 12);   // M047
  EXPECT_EQ(ParseEpKernelText("DeepEP V2 ElasticBuffer, 64 SMs").sms, 64);   // M053
  EXPECT_EQ(ParseEpKernelText("HybridEP, 8 SMs, Torch API timing").sms, 8);  // M057
  EXPECT_EQ(ParseEpKernelText("HybridEP, 32 SM").sms, 32);
}

TEST(EpFields, NoBudgetWhenNoneIsStated) {
  EXPECT_EQ(ParseEpKernelText("DeepEP normal (high-throughput) kernels, node-limited routing "
                              "top-4 groups")
                .sms,
            0);
  // A chip name is no SM count.
  EXPECT_EQ(ParseEpKernelText("DeepEP on 8 SM90 GPUs").sms, 0);
}

TEST(EpFields, ReadsTheMode) {
  EXPECT_EQ(ParseEpKernelText("DeepEP low-latency kernels").mode, EpKernelMode::kLowLatency);
  EXPECT_EQ(ParseEpKernelText("DeepEP Low Latency mode, 24 SMs").mode,
            EpKernelMode::kLowLatency);
  EXPECT_EQ(ParseEpKernelText("DeepEP normal (high-throughput) kernels").mode,
            EpKernelMode::kNormal);
  EXPECT_EQ(ParseEpKernelText("HybridEP, 8 SMs").mode, EpKernelMode::kNormal);
}

}  // namespace
}  // namespace perfsim
