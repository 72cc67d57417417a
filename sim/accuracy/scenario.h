// From a measurement row to the scenario perfsim simulates for it.
//
//   PERFSIM_ASSIGN_OR_RETURN(MappedRow mapped, MapMeasurement(row));
//   if (!mapped.scenario) std::cout << row.id << " skipped: " << mapped.skipped_reason;
//
// Categories (the `category` column) and what they become:
//   kernel_grouped_gemm  one grouped-matmul call (sim/cost/grouped_matmul.h) on one device.
//       Shapes from op_shape: "groups=G; M_per_group=M; N=..; K=.." (rows per group),
//       "group_sizes=[a,b,...]", "m=..; groups=.." (rows split as evenly as possible), the
//       keyless "4 groups x ~8192" and "[262144,2560] x [64,2560,1280]" (text_fields.h
//       ParseOpShape; a label before ':' and approximate "M~32768" values are read), or
//       "rhs (E=64, K x N=4096x2048)" with the tokens cell "touched groups x rows = 30x3"
//       (the touched groups evenly spread over E). "op=fwd|dlhs|drhs" picks the forward gmm,
//       the input-gradient gmm (k and n swapped) or the weight-gradient tgmm; default fwd.
//       Tiling: on a GPU the kernel's CTA tile, waves and L2-aware traffic of
//       sim/cost/gpu_gemm.h, the model predict and fit use too (CostGroupedMatmul on a GPU):
//       re-reads a wave shares stay in the L2 (50 MiB on Hopper), so HBM sees each operand
//       once while it fits, as DeepGEMM's own memory_bw figure counts. On a TPU, gmm_v2 (backend_kernel names it) gets its default
//       tiling (shared/reference/backends.md 1b): tm = 128·min(⌈16/lhs bits⌉,2) /
//       min(⌈16/rhs bits⌉,2) clipped to m, tk = k and tn = n rounded up to 128, then tn and
//       then tk halved (floors 512 and 128) until sim/fit says the kernel fits its VMEM limit;
//       any other TPU kernel gets (128, 128, 128), the ragged-dot tiling `perfsim predict` uses.
//       Metric: TFLOP/s (useful flops over time) or a time.
//   kernel_ep_comm  an expert-parallel dispatch or combine (DeepEP-style) of `tokens` per rank
//       of D-wide tokens, top-K over E experts spread evenly over the ranks. FP8 tokens carry
//       one f32 scale per 128 elements (D + 4·⌈D/128⌉ bytes), BF16 2·D. Routing: uniform top-K;
//       "node-limited ... top-N groups" in backend_kernel first picks N of the nodes (min(N,
//       nodes)), as DeepSeek-V3 limits a token to 4 nodes. One node: a routed all-to-all over
//       NVLink (sim/comm/traffic.h, direct factor). Several nodes: the hierarchical exchange
//       DeepEP's internode kernels do, in two pipelined stages: each token crosses InfiniBand
//       once per remote node it needs, to the GPU of the same local index (costed at the
//       hierarchical factor), then NVLink forwards it to the ranks it needs there (direct
//       factor); time = fixed cost + the slower stage's transfer + both stages' latency.
//       Traffic is the expectation under uniform routing (closed form, nothing sampled): a
//       token reaches a rank (node) with probability 1 - C(M - e, K) / C(M, K), M the experts
//       it may pick from (E, or the N chosen nodes' experts) and e the rank's (node's) experts.
//       Metric: GB/s as DeepEP's tests count it, per rank: the NVLink metric (one node) counts
//       the bytes of the tokens a rank receives, its own included; the RDMA / IB metric
//       (several nodes) the bytes of the (token, node) pairs a rank sends, its own node
//       included. HybridEP's "algorithm bandwidth" is read as the RDMA metric (an assumption:
//       its README does not define it). Or a time. The kernel's mode (low-latency: flat
//       traffic, no forwarding) and SM budget ("12 SMs": an SM copy limit) come from
//       backend_kernel (ep_fields.h); sim/comm/ep_dispatch.h times the exchange.
//   collective  NCCL / XLA collectives. op_shape "AllGather over Y (size 4) of bf16[2048, 8192]"
//       on a TPU slice "8x4": the group is the devices along that axis, bytes the array's
//       (sim/comm/collectives.h). Without an op_shape the collective is named in metric, derived
//       or notes ("all-to-all", "alltoall", "all-gather", "all-reduce", "reduce-scatter") over
//       every chip of num_chips ("2+ nodes": 2 nodes), with a 1 GiB buffer per rank (the large-
//       message end of an nccl-tests sweep: the plateau, where no per-call overhead shows).
//       Metric: a time; "busBw" (algorithm bytes·(n−1)/n per second, 2(n−1)/n for all-reduce);
//       or "IB bandwidth per NIC" (bytes on one NIC per second).
//   moe_block, moe_layer_fused  one MoE layer's forward on num_chips devices (a cell that says
//       the count is not stated reads as one chip, said in the description), simulated by
//       sim/predict with uniform routing: E, K, D, F from their columns, tokens from the tokens
//       cell ("per rank" multiplies by the devices), SwiGLU experts and no shared expert (the
//       rows time the routed experts), the dtype cell's first dtype for weights and
//       activations (FP4 weights, which perfsim has no type for, as FP8: twice the weight
//       bytes). Backend: on a TPU the megablox gmm path; on GPUs the expert-parallel ragged
//       all-to-all with grouped GEMMs. A kernel that fuses dispatch, GEMMs and combine into
//       one (DeepGEMM MegaMoE) is simulated as the unfused path it replaces: what its fusion
//       overlaps is not modelled. Metric: a time. These rows test the whole-layer simulator
//       and inform no factor (accuracy.h). Limits, far beyond any published layer and what
//       keeps one simulation short: E <= 4096, D and F <= 65536, 4096 devices, 2^24 tokens in
//       all; beyond them the cell is an error.
//   e2e_train  a whole training step (sim/accuracy/scenario_step.cc, sim/step/step_time.h):
//       the model column names a built-in model, num_chips the devices, global_batch and
//       seq_len the batch, parallelism the split (TrainingStep's parallelism strings), dtype the
//       precision ("bf16 compute, fp32 weights": MaxText's fp32 weights as the master copy),
//       the interconnect cell a TPU slice shape ("4x4x8") or "every 32 GPUs ... in one NVL
//       domain". Megatron rows use the distributed optimizer (ZeRO-1); "recompute a+b" in the
//       parallelism cell is the selective recompute of those modules. Layers that do not divide
//       over the pipeline chunks are spread as evenly as possible (the rows' custom layouts).
//       MaxText's "remat custom + offload" is full recompute (its layer input goes to the host,
//       which is not timed); "megablox=False, sparse_matmul=False" is the capacity einsum.
//       GPU slices: NVLink domains of the chip's size, or the cell's "every N GPUs ... in one
//       NVL domain", or the fewest equal domains (256 GB200s: 4 of 64).
//       Metric: the step time (s), tokens/s per device ("tokens/s/GPU") or model TFLOP/s per
//       device (Megatron's count for Megatron rows, MaxText's for MaxText rows).
// Timing method (every category): how the row's time was taken, from what its backend_kernel
// and metric cells say. "API timing", "API time", "host timing" or "wall-clock" (any case)
// make it kHostApi: the time was taken around a library's host API call (e.g. HybridEP's
// "Torch API timing"), so it includes a per-call host cost (Python/C++ dispatch, allocation,
// synchronisation) that the device never sees; row_model.h gives such rows their own fixed
// term. Anything else (a kernel or device time, "device time (xprof)", nothing said) is
// kDevice. The rule is about what the row states, never about which library it is.
// Anything else — another category, a chip that is not built in, a unit that does not fit the
// metric, a missing shape — is a skipped row with its reason. A cell that is present but
// malformed where a number must be (e.g. "N=4O96") is an InvalidArgument "file:line:col: ...".
#ifndef PERFSIM_SIM_ACCURACY_SCENARIO_H_
#define PERFSIM_SIM_ACCURACY_SCENARIO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/accuracy/measurement.h"
#include "sim/comm/ep_dispatch.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/ir/primitive_type.h"
#include "proto/model.pb.h"
#include "proto/step.pb.h"

namespace perfsim {

// What quantity of the simulation the row measured.
enum class ScenarioMetric {
  kTime,           // seconds, shown in the row's time unit
  kThroughput,     // useful flops per second
  kLinkBandwidth,  // bytes on the bottleneck link per second
  kBusBandwidth,   // NCCL bus bandwidth
};

struct GroupedGemmScenario {
  GroupedMatmulSpec spec;
  std::string tiling_rule;  // "GPU: CTA tile (128, 256), k step 128, L2 reuse ...", ...
};

enum class EpOp { kDispatch, kCombine };
enum class LinkClass { kNvlink, kScaleOut };

struct EpCommScenario {
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  int64_t tokens_per_rank = 0;
  int64_t hidden = 0;
  int64_t top_k = 0;
  int64_t experts = 0;
  int64_t node_limit = 0;  // 0: no limit
  EpOp op = EpOp::kDispatch;
  PrimitiveType dtype = PrimitiveType::kBF16;
  double bytes_per_token = 0;
  LinkClass bottleneck = LinkClass::kNvlink;  // the link a bandwidth metric names
  // From backend_kernel (sim/accuracy/ep_fields.h): the kernel's mode and SM budget (0: not
  // stated), which sim/comm/ep_dispatch.h times.
  EpKernelMode mode = EpKernelMode::kNormal;
  int64_t sms = 0;
};

enum class CollectiveKind { kAllGather, kReduceScatter, kAllReduce, kAllToAll };

struct CollectiveScenario {
  CollectiveKind kind = CollectiveKind::kAllGather;
  std::string slice;           // Topology::Create slice shape: "8x4", "2x8", "8"
  std::vector<int64_t> group;  // device ids
  double bytes = 0;            // per device, as sim/comm/collectives.h defines for the kind
  std::string link_dimension;  // kLinkBandwidth: the topology dimension whose link is measured
  // An achievable bandwidth with no message size (the plateau of an nccl-tests sweep, simulated
  // at 1 GiB): a per-call overhead has vanished there, so the row neither pays nor informs it.
  bool plateau = false;
};

enum class TimingMethod {
  kDevice,   // kernel / device time: what perfsim predicts
  kHostApi,  // around a host API call: a per-call host cost on top (the file comment)
};

// "device", "host API".
absl::string_view TimingMethodName(TimingMethod timing);
// The timing method the row's backend_kernel and metric cells state (the file comment).
TimingMethod RowTimingMethod(const Measurement& row);

struct Scenario {
  std::string chip;  // built-in chip name
  TimingMethod timing = TimingMethod::kDevice;
  std::variant<GroupedGemmScenario, EpCommScenario, CollectiveScenario> what;
  ScenarioMetric metric = ScenarioMetric::kTime;
  MeasurementUnit unit = MeasurementUnit::kMicroseconds;
  std::string description;  // one line: what is simulated
};

// moe_block and moe_layer_fused rows: one MoE layer's forward pass, simulated whole by
// `perfsim predict`'s simulator (block_model.h), not by a closed-form row model.
struct BlockScenario {
  std::string chip;      // built-in chip name
  std::string mesh;      // Topology::Create slice: "1x1x1" (one TPU chip), "8" (8 GPUs)
  int64_t devices = 1;   // the experts are spread over all of them (ep = devices)
  int64_t tokens = 0;    // over all devices
  ModelSpec model;       // E, K, D, F and dtypes from the row; SwiGLU experts, nothing shared
  std::string backend;   // a lowering of sim/lowering (megablox_gmm, ep_ragged_a2a)
  TimingMethod timing = TimingMethod::kDevice;
  MeasurementUnit unit = MeasurementUnit::kMicroseconds;  // a time unit
  std::string description;
};

// e2e_train rows: a whole training step, composed by sim/step (step_time.h) from its blocks
// simulated by the model-agnostic simulator.
enum class StepMetric {
  kStepSeconds,           // the step time
  kTokensPerSecondPerDevice,
  kModelTflopsPerDevice,  // model FLOPs per second per device, in the row's convention
};

struct StepRowScenario {
  std::string chip;  // built-in chip name
  std::string mesh;  // Topology::Create slice shape
  TrainingStepSpec step;
  StepMetric metric = StepMetric::kStepSeconds;
  bool megatron_flops = true;  // kModelTflopsPerDevice: Megatron's convention, else MaxText's
  MeasurementUnit unit = MeasurementUnit::kSeconds;
  std::string description;
};

struct MappedRow {
  std::optional<Scenario> scenario;
  std::optional<BlockScenario> block;  // instead of scenario, for moe_block / moe_layer_fused
  std::optional<StepRowScenario> train_step;  // instead, for e2e_train
  std::string skipped_reason;          // set when all are empty
};

absl::StatusOr<MappedRow> MapMeasurement(const Measurement& row);

// "all-gather", "reduce-scatter", "all-reduce", "all-to-all".
absl::string_view CollectiveKindName(CollectiveKind kind);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_SCENARIO_H_
