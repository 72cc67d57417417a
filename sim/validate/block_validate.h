// `perfsim validate --block`: the whole step's non-MoE blocks (attention, dense FFN, embedding,
// LM head with its loss), each lowered on tp devices and run in the reference interpreter,
// against the same block lowered on one device (issue 13).
//
//   BlockValidationOptions options{.model = *ResolveModel("llama4_maverick"),
//                                  .blocks = {Block::kAttention}, .max_devices = 4};
//   PERFSIM_ASSIGN_OR_RETURN(std::vector<BlockValidationResult> results,
//                            ValidateBlocks(options));
//   PrintBlockTable(results, std::cout);   // a line per case, "N passed, M failed, K skipped"
//
// Cases. For each block (for attention, each distinct attention layer kind of the model: scope
// and rope, "chunked+rope" and "global+nope" for Llama 4, "mla global+rope" for DeepSeek-V3),
// each phase, and tp = 2, 4, 8, ... up to max_devices (attention: with and without sequence
// parallelism). A tp that does not divide the heads (or F, or V) is a skipped case with the
// lowering's reason.
//
// Sizes. Blocks run at B = 2, S = 16 (the defaults below) in f32, whatever the model's dtypes,
// so that the comparison can be tight. The model's dimensions are kept up to a small cap and
// scaled down beyond it (SmallBlockSizes): D ≤ 64, attention head widths ≤ 8 (MLA: ranks ≤ 16,
// nope ≤ 8, rope ≤ 4, v ≤ 8), windows ≤ S/4, F ≤ 64, V ≤ 96. Head counts, the K/V head ratio,
// the layer scopes, masks and rope are the model's own, so every tp that divides the model's
// heads divides the copy's. nano runs unscaled; a scaled case says so in its message ("f32,
// scaled down: D 5120 -> 64, head_dim 128 -> 8, window 8192 -> 4; heads, masks and rope
// kept").
//
// Inputs: SplitMix64 of the seed, per parameter in order: activations and dy uniform in
// [-1, 1); weights uniform in [-1, 1)/√(first dim); rank-1 weights (norm scales and biases)
// 1 + [-0.25, 0.25); token ids and labels uniform in [0, V). Each device gets its shard as the
// sharded lowering's TensorSpec::split says (a K/V head shared by tp/Hkv devices: that head).
//
// Comparison: every output of every device against its part of the reference's output (the
// outputs put back together, every replica checked), per tensor the ∞-norm relative error
// max |got − want| / max |want| over the whole tensor (validate.h TensorError). A NaN or Inf
// where the reference is finite fails whatever the tolerance.
#ifndef PERFSIM_SIM_VALIDATE_BLOCK_VALIDATE_H_
#define PERFSIM_SIM_VALIDATE_BLOCK_VALIDATE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/validate_report.pb.h"
#include "sim/lowering/layer.h"
#include "sim/moe/model_config.h"
#include "sim/moe/step_spec.h"
#include "sim/validate/validate.h"

namespace perfsim {

enum class Block { kAttention, kDenseFfn, kEmbedding, kLmHead };
absl::string_view BlockName(Block block);  // "attention", "dense_ffn", "embedding", "lm_head"
// One name, or "all" (every block); else InvalidArgument listing the names.
absl::StatusOr<std::vector<Block>> ParseBlocks(absl::string_view text);

// Tolerance on the ∞-norm relative error of a tp run against the one-device run, both f32.
// The two compute the same products; only the order of some sums differs: a contraction split
// over tp devices is summed in tp partial sums and then all-reduced (or reduce-scattered).
// Reordering a sum of N terms changes it by up to about u·Σ|terms| (u = 6e-8, f32's unit
// roundoff; a few u where partial sums round separately). Relative to the result, that is
// large where the terms have random signs and cancel: |Σ| ≈ √N·|term|, an error of u·√N. The
// longest such sums here are the QK-norm scale gradients, over B·S·H = 2·16·64 = 2048 terms
// (Qwen3-235B): u·√2048 ≈ 2.7e-6; measured 2.74e-6 (seed 1; at most 1.7e-6 on seeds 2-9).
// Every other output of every built-in model, both phases, tp up to 8 with and without
// sequence parallelism, stays below 7e-7. 1e-5 leaves 3.6x headroom over the worst; the bugs
// this exists to catch (a dropped all-reduce, a wrong shard, a missing gradient term) give
// errors of 1e-2 or more (block_validate_test.cc).
inline constexpr double kBlockTolerance = 1e-5;

// Small sizes of a model's blocks (header comment): the caps applied, and what changed.
struct SmallBlockSizes {
  int64_t d_model = 0;
  int64_t ffn_dim = 0;      // 0 when the model has no dense FFN
  int64_t vocab_size = 0;   // 0 when the model has no embedding / LM head
  AttentionSpec attention;  // scaled copy (heads, scopes, rope kept)
  // What was capped, per block: "D 5120 -> 64", "head_dim 128 -> 8", "F 16384 -> 64", ...
  std::vector<std::string> d_model_notes, attention_notes, ffn_notes, vocab_notes;
};
SmallBlockSizes SmallSizesOf(const ModelConfig& model, int64_t seq);

struct BlockValidationOptions {
  ModelConfig model;
  std::vector<Block> blocks;  // empty: every block
  std::vector<Phase> phases;  // empty: fwd and fwd_bwd
  int64_t max_devices = 4;    // tp = 2, 4, ... up to it
  int64_t batch = 2;          // B per device
  int64_t seq = 16;           // S
  uint64_t seed = 1;
  double tolerance = 0;                                               // 0: kBlockTolerance
  int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes;  // every interpreter run
};

struct BlockValidationResult {
  std::string block;       // "attention", ...
  std::string layer_kind;  // attention: "chunked+rope", "global+nope", "mla global+rope"; else ""
  std::string phase;       // "fwd", "fwd_bwd"
  int64_t tp = 1;
  bool sequence_parallel = false;
  bool pass = false;
  bool skipped = false;  // the tp does not divide the block's heads or widths
  double tolerance = 0;
  std::vector<TensorError> errors;  // one per output, in output order
  std::string message;              // why it failed or was skipped; a note (scaling) on a pass
};

// Every case of `options`. InvalidArgument for a request that cannot be checked: a block the
// model lacks ("--block embedding: nano has no embedding (vocab_size 0)"), max_devices < 2,
// a tolerance that is not a positive number.
absl::StatusOr<std::vector<BlockValidationResult>> ValidateBlocks(
    const BlockValidationOptions& options);

// One case: `sharded` (lowered for `tp` devices, possibly mutated by a test) against
// `reference` (the same block on one device) on the seed's inputs. The result's block,
// layer_kind, phase and sequence_parallel are left for the caller.
BlockValidationResult CompareBlockLowerings(
    const LoweredLayer& reference, const LoweredLayer& sharded, int64_t tp, uint64_t seed,
    double tolerance, int64_t memory_budget_bytes = kDefaultValidationMemoryBudgetBytes);

// The table: a line per case (block, layer kind, phase, tp, sp, largest error and its tensor,
// status), the failure's message under it, then "N passed, M failed, K skipped; largest
// relative error E" and the distinct notes and skip reasons.
void PrintBlockTable(const std::vector<BlockValidationResult>& results, std::ostream& out);

// --format=json: ValidateReport (proto/validate_report.proto) with block, layer_kind and
// sequence_parallel set, devices = parallelism.tp = tp, backend/router/routing empty.
report::ValidateReport BlockValidationReport(const std::vector<BlockValidationResult>& results);

// Appends the per-tensor errors of a case to its report entry (shared with the MoE validate
// report of cli/validate_command.cc).
void AddTensorErrors(const std::vector<TensorError>& errors, report::ValidateResult& result);

}  // namespace perfsim

#endif  // PERFSIM_SIM_VALIDATE_BLOCK_VALIDATE_H_
