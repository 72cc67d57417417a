#!/usr/bin/env python3
"""Measures a whole dense-transformer training step and its pieces with JAX on one GPU.

Writes perfsim measurement rows (the 27 columns of shared/reference/calibration.csv, as
measure_moe.py writes them; its COLUMNS, Timer and software_versions are imported, not copied),
calibration data for the whole-training-step prediction (issue 13). In priority order (the run
stops starting new measurements once --budget-s has passed, so the first ones matter most):

  1. whole_step          one training step of a Llama-3-8B-shaped model cut to L=4 decoder
                         layers, then to L=2 (so that the per-layer slope (t4 - t2) / 2 and the
                         fixed part t2 - 2 * slope separate): embedding gather, L decoder layers,
                         final RMSNorm, untied LM head, fp32 softmax cross-entropy, jax.grad,
                         hand-written AdamW over fp32 master weights and fp32 moments that also
                         writes the bf16 parameters. Params and optimizer state are donated.
  2. layer_decoder       one decoder layer (RMSNorm, Q/K/V projections, RoPE, causal GQA
                         attention, output projection, residual, RMSNorm, SwiGLU FFN, residual),
                         forward alone, and forward + backward (gradients of x and every weight).
  3. layer_dense_ffn     the SwiGLU FFN alone, silu(x W0) * (x W1) W2, forward and forward +
                         backward, for Llama-3-8B (D=4096, F=14336) and DeepSeek-V3's dense
                         layers (D=7168, F=18432), T=8192 tokens.
  4. op_lm_head_loss     final RMSNorm + LM head [T, D] x [D, V] + fp32 softmax cross-entropy,
                         forward and forward + backward, D=4096, V=128256, T=8192.
  5. op_optimizer_adamw  the AdamW update alone over one decoder layer's parameters (218.1M):
                         memory-bound; the notes give the bytes moved and GB/s.

Shapes (Llama-3-8B): D=4096, 32 query heads, 8 KV heads, head dim 128, F=14336, vocab 128256,
batch 1 x sequence 8192; bf16 parameters and activations; attention through
jax.nn.dot_product_attention(..., is_causal=True, implementation="cudnn") on a GPU ("xla" on a
CPU, or --attention).

Method: as measure_moe.py's Timer. Every function is lowered and compiled once (the compile
time and XLA's cost_analysis / memory_analysis come from that executable), run --warmup times,
then --reps calls are each timed alone (dispatch to block_until_ready: the `derived` "one call
alone" figures) and --batches batches of --reps calls are dispatched back to back and waited
for; the row's value is the median time per call over the batches (us). The training step and
the optimizer donate their state, so their calls are chained (each call's outputs are the next
call's inputs) exactly like a training loop; the other functions are called on the same inputs.

Analytic FLOPs (the notes' convention: a matmul [m, k] x [k, n] is 2·m·k·n FLOPs; causal
attention is counted as half of the S x S square; backward = 2x forward, so forward + backward
= 3x forward; element-wise work (norms, RoPE, softmax, SiLU, AdamW) and the embedding gather are
not counted). T = B·S tokens; H query heads, KV key/value heads, Dh head dim.

  One decoder layer, forward:
    Q, K, V projections   2·T·D·(H + 2·KV)·Dh      [T, D] x [D, (H + 2 KV) Dh]
    attention scores      2·B·H·S·S·Dh / 2          Q K^T per head, causal half
    attention values      2·B·H·S·S·Dh / 2          P V per head, causal half
    output projection     2·T·H·Dh·D
    SwiGLU FFN            3 · 2·T·D·F               W0, W1 (D -> F), W2 (F -> D)
  Llama-3-8B, B=1, S=8192 (T=8192):
    QKV  2·8192·4096·6144            =   412.32 GFLOP
    attn 2·32·8192²·128              =   549.76 GFLOP (both matmuls)
    O    2·8192·4096·4096            =   274.88 GFLOP
    FFN  6·8192·4096·14336           = 2,886.22 GFLOP
    layer forward                    = 4,123.2 GFLOP; forward + backward 12,369.5 GFLOP
  LM head: 2·T·D·V = 2·8192·4096·128256 = 8,607.1 GFLOP forward (25,821.3 forward + backward)
  Whole step, L layers: 3·(L·4,123.2 + 8,607.1) GFLOP: L=4 75.30 TFLOP, L=2 50.56 TFLOP.
  A flash-attention backward recomputes the scores (5 causal-half matmuls, not 4): the notes
  also give that "executed" count (+ B·H·S²·Dh per layer, 274.9 GFLOP at these shapes).
  Dense FFN alone: 6·T·D·F: Llama 2,886.2 GFLOP, DeepSeek-V3 (7168 x 18432) 6,493.9 GFLOP fwd.
  Parameters of one layer: D·(H + 2 KV)·Dh + H·Dh·D + 3·D·F + 2·D = 218,112,000; the embedding
  and the head 128256·4096 = 525,336,576 each. AdamW bytes per parameter: read bf16 grad (2),
  fp32 master, m, v (12); write fp32 master, m, v (12), bf16 param (2) = 28 B: one layer
  6.107 GB, the L=4 model's 1,923.1M parameters 53.8 GB.
XLA's own count (cost_analysis "flops", in the notes) counts every HLO op, element-wise
included; on a CPU the "xla" attention computes (and XLA counts) the whole S x S square; on a GPU
it most likely counts nothing for the cuDNN attention custom call (not checked here). Checked on
a CPU at the full shapes (--dry-run --compile, jax 0.10.2, "xla" attention): FFN and LM head
1.000-1.001x the analytic count; decoder layer fwd and fwd_bwd 1.138x, whole step L=4 1.091x,
L=2 1.068x, which is the full square (expected 1.133x, 1.133x, 1.088x, 1.065x) plus 0.3-0.5% of
element-wise work.
The fwd_bwd functions return the forward output as well as the gradients, so that XLA cannot
drop the forward's last matmul (which no gradient needs) and the work is the 3x counted.

--moe: a Qwen3-30B-A3B-shaped MoE transformer instead (models/qwen3_30b_a3b.textproto; the cut
models perfsim reads are validation/gpu/models/qwen3_30b_a3b_{2,4}layers.textproto): D=2048,
32 query heads, 4 KV heads, head dim 128, RMSNorm of each q and k head before RoPE (use_qk_norm),
RoPE theta 1e7, every layer MoE: 128 routed SwiGLU experts of F=768, top-8, no shared expert,
router in fp32 (softmax over E, top-K, renormalised: norm_topk_prob), vocab 151936 untied,
RMSNorm eps 1e-6; B=1 x S=4096 (T=4096 tokens, T·K = 32,768 expert rows). Rows: whole_step
(model=qwen3_30b_a3b_{L}layers, L = --step-layers, default 2,4: the same step as the dense one)
and layer_moe (one MoE decoder layer, fwd and fwd_bwd), E, K, F and shared_experts filled.
  The MoE FFN is "argsort + grouped matmul": router, argsort of the flattened expert ids, gather
of the token copies in expert order, group sizes (bincount), wi_0 and wi_1 [E, D, F], SiLU
gate, wo [E, F, D], the rows scattered back and combined with the renormalised weights.
  Routing is balanced and exact: the expert ids are an input array, token t's j-th expert
(t·K + j) mod E, so every expert gets exactly T·K/E = 256 rows; the combine weights are still
the router's softmax top-K values renormalised, so the router, its top-k and gradient all run
(only which experts is fixed). perfsim: --balanced-routing.
  --moe-impl picks the grouped matmuls (comma-separated: each is measured):
    ragged_dot  jax.lax.ragged_dot with the group sizes (perfsim's backend sparse_ragged_dot).
                XLA's RaggedDotRewriter (README, measure_moe.py's rows) computes every one of
                the E groups over all T·K rows: E = 128x the useful expert FLOPs, and a masked
                [E, T·K, D] operand of 17.2 GB (bf16) per up projection. On a CPU (jax 0.10.2,
                --dry-run --compile, where bf16 dots run in fp32) XLA's memory_analysis needs
                34.7 GiB of temporaries for one layer forward, 133 GiB forward + backward, 198
                GiB for the L=2 step: the whole steps most likely do not fit a GPU at S=4096.
                A case that XLA says does not fit the device is compiled but not run (noted).
    batched     the same with the three grouped matmuls as einsums over [E, T·K/E, D]: exact
                for the balanced routing (every group T·K/E rows; checked equal to ragged_dot,
                values and gradients, on a CPU) and the work of an ideal grouped GEMM.
  The first --moe-impl's whole steps run first, then every impl's layer_moe rows, then the
other impls' whole steps.
  Memory (whole step, B=1 x S=4096): parameters per layer: experts 3·128·2048·768 =
603,979,776, attention 2048·(32 + 2·4)·128 + 32·128·2048 = 18,874,368, router 2048·128 =
262,144, norms 2·2048 + 2·128: 623,120,640; embedding and head 151936·2048 = 311,164,928 each.
L=2: 1,868,573,184 parameters, L=4: 3,114,814,464. bf16 params (2 B) + fp32 master, m, v (12 B)
+ bf16 grads (2 B) = 16 B/param: 27.8 GiB (L=2), 46.4 GiB (L=4); plus the fp32 logits and their
gradient (2 x 2.3 GiB) and the activations (~0.5 GiB per layer with "batched"): L=4 ~55 GiB,
over JAX's default 75% preallocation of an H100 (58.5 of 78 GiB): run with
XLA_PYTHON_CLIENT_MEM_FRACTION=0.92. (CPU memory_analysis, fp32 dots: "batched" temporaries
26.3 GiB L=2, 44.3 GiB L=4, 11.9 GiB one layer fwd_bwd.)
  Analytic FLOPs (same conventions as above; the expert FFN per token K·3·2·D·F, the router
2·D·E per token, counted by MaxText and not by Megatron): one layer forward at B=1, S=4096:
    Q, K, V projections  2·4096·2048·(32 + 8)·128          =    85.90 GFLOP
    attention            2·32·4096²·128 (causal half, both) =   137.44 GFLOP
    output projection    2·4096·4096·2048                  =    68.72 GFLOP
    experts              8·3·2·4096·2048·768               =   309.24 GFLOP
    router               2·4096·2048·128                   =     2.15 GFLOP (MaxText only)
    layer forward: 601.30 GFLOP (Megatron), 603.44 GFLOP (MaxText); x3 with the backward.
  LM head 2·4096·2048·151936 = 2,549.06 GFLOP forward. Whole step 3·(L·layer + head): L=2
  11.255 TFLOP (Megatron) / 11.268 (MaxText), L=4 14.863 / 14.889. The notes give the row's
  count in both, and for ragged_dot the "executed" count with XLA's expansion (experts
  39,582 GFLOP per layer forward, 128x) and the flash backward's recomputed scores (+68.7 GFLOP
  per layer). AdamW moves 28 B/param: 52.3 GB (L=2), 87.2 GB (L=4) per step.

Usage (on a GPU machine with jax[cuda] installed):
  python3 validation/gpu/measure_step.py --out $OUT/h200_step.csv --id-prefix S --budget-s 330
  XLA_PYTHON_CLIENT_MEM_FRACTION=0.92 python3 validation/gpu/measure_step.py --moe \
      --moe-impl batched,ragged_dot --out $OUT/h100_moe_step.csv --id-prefix H --id-start 13 \
      --warmup 2 --reps 5 --batches 3 --budget-s 100
CPU check of the script itself (timings meaningless, do not commit them):
  python3 validation/gpu/measure_step.py --platform cpu --tiny --out /tmp/step_cpu.csv
  python3 validation/gpu/measure_step.py --platform cpu --dry-run   # full shapes, no running
  python3 validation/gpu/measure_step.py --platform cpu --moe --moe-impl ragged_dot,batched \
      --tiny --out /tmp/step_moe_cpu.csv
  python3 validation/gpu/measure_step.py --platform cpu --moe --moe-impl ragged_dot,batched \
      --dry-run
"""

import argparse
import copy
import csv
import datetime
import gc
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_moe  # noqa: E402  (COLUMNS, UNIT, Timer, software_versions; no side effects)

CATEGORIES = ["whole_step", "layer_decoder", "layer_dense_ffn", "op_lm_head_loss",
              "op_optimizer_adamw", "layer_moe"]

# AdamW hyper-parameters (values only matter for numerical sanity, not for the time).
LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 3e-4, 0.9, 0.95, 1e-8, 0.1
ADAMW_BYTES_PER_PARAM = 28  # see the module docstring


class Config:
    """A Llama-like dense transformer's shapes."""

    moe = False
    eps = 1e-5            # RMSNorm epsilon (Llama 3)
    rope_theta = 500000.0  # Llama 3

    def __init__(self, name, model, d, heads, kv_heads, head_dim, ffn, vocab, batch, seq):
        assert heads % kv_heads == 0
        self.name, self.model = name, model
        self.d, self.heads, self.kv_heads, self.head_dim = d, heads, kv_heads, head_dim
        self.ffn, self.vocab, self.batch, self.seq = ffn, vocab, batch, seq

    def with_batch_seq(self, batch=None, seq=None):
        other = copy.copy(self)
        other.batch, other.seq = batch or self.batch, seq or self.seq
        return other

    @property
    def tokens(self):
        return self.batch * self.seq

    def layer_params(self):
        return (self.d * (self.heads + 2 * self.kv_heads) * self.head_dim
                + self.heads * self.head_dim * self.d + 3 * self.d * self.ffn + 2 * self.d)

    def model_params(self, layers):
        return layers * self.layer_params() + 2 * self.vocab * self.d + self.d

    def layer_fwd_flops(self):
        t, d, hd = self.tokens, self.d, self.head_dim
        qkv = 2 * t * d * (self.heads + 2 * self.kv_heads) * hd
        attention = 2 * (2 * self.batch * self.heads * self.seq * self.seq * hd) // 2
        out = 2 * t * self.heads * hd * d
        ffn = 3 * 2 * t * d * self.ffn
        return qkv + attention + out + ffn

    def attention_half_matmul_flops(self):
        """One causal-half S x S x Dh matmul over every head: 2·B·H·S·S·Dh / 2."""
        return self.batch * self.heads * self.seq * self.seq * self.head_dim

    def head_fwd_flops(self):
        return 2 * self.tokens * self.d * self.vocab

    def shape_text(self):
        return (f"batch={self.batch}; seq={self.seq}; d={self.d}; heads={self.heads}; "
                f"kv_heads={self.kv_heads}; head_dim={self.head_dim}; ffn={self.ffn}; "
                f"vocab={self.vocab}")


class MoeConfig(Config):
    """A Qwen3-MoE-like transformer: GQA attention with a per-head RMSNorm on q and k (Qwen3's
    use_qk_norm), every layer a routed SwiGLU MoE (no shared expert), softmax router in fp32
    with top-K renormalised (norm_topk_prob). `ffn` is the expert width F."""

    moe = True
    moe_impl = "ragged_dot"  # or "batched" (see moe_ffn)

    def __init__(self, name, model, d, heads, kv_heads, head_dim, ffn, vocab, batch, seq,
                 experts, top_k, eps, rope_theta):
        super().__init__(name, model, d, heads, kv_heads, head_dim, ffn, vocab, batch, seq)
        self.experts, self.top_k = experts, top_k
        self.eps, self.rope_theta = eps, rope_theta

    def layer_params(self):
        hd = self.heads * self.head_dim
        return (self.d * (self.heads + 2 * self.kv_heads) * self.head_dim + hd * self.d
                + 2 * self.head_dim                    # q_norm, k_norm
                + self.d * self.experts                # router
                + 3 * self.experts * self.d * self.ffn + 2 * self.d)

    def expert_fwd_flops(self):
        """The routed experts, useful work: K·3·2·D·F per token."""
        return self.top_k * 3 * 2 * self.tokens * self.d * self.ffn

    def router_fwd_flops(self):
        """2·D·E per token (MaxText counts it, Megatron does not)."""
        return 2 * self.tokens * self.d * self.experts

    def layer_fwd_flops(self):
        """Megatron's convention: no router."""
        t, d, hd = self.tokens, self.d, self.head_dim
        qkv = 2 * t * d * (self.heads + 2 * self.kv_heads) * hd
        attention = 2 * (2 * self.batch * self.heads * self.seq * self.seq * hd) // 2
        out = 2 * t * self.heads * hd * d
        return qkv + attention + out + self.expert_fwd_flops()

    def expanded_expert_fwd_flops(self):
        """What XLA executes when it expands each ragged_dot to every one of the E groups over
        all T·K rows (RaggedDotRewriter; README): E x the useful expert work ("batched": the
        useful work, nothing expanded)."""
        if self.moe_impl == "batched":
            return self.expert_fwd_flops()
        return self.experts * self.expert_fwd_flops()

    def shape_text(self):
        return (f"batch={self.batch}; seq={self.seq}; d={self.d}; heads={self.heads}; "
                f"kv_heads={self.kv_heads}; head_dim={self.head_dim}; qk_norm=yes; "
                f"experts={self.experts}; top_k={self.top_k}; expert_ffn={self.ffn}; "
                f"shared_experts=0; vocab={self.vocab}; norm_eps={self.eps:g}; "
                f"rope_theta={self.rope_theta:g}; router=fp32_softmax_topk_renormalized; "
                f"routing=balanced_round_robin; moe_backend={MOE_BACKEND_WORD[self.moe_impl]}")

    def with_moe_impl(self, impl):
        other = copy.copy(self)
        other.moe_impl = impl
        return other


MOE_BACKEND_WORD = {"ragged_dot": "argsort_ragged_dot",
                    "batched": "argsort_batched_einsum_equal_groups"}
MOE_KERNEL_TEXT = {
    "ragged_dot": "jax.lax.ragged_dot (perfsim backend sparse_ragged_dot)",
    "batched": "batched einsums over the E equal groups [E, T·K/E, D] (exact for the balanced "
               "routing: the work of an ideal grouped GEMM)"}


LLAMA = Config("llama3_8b", "Llama-3-8B", 4096, 32, 8, 128, 14336, 128256, 1, 8192)
TINY = Config("tiny_llama", "tiny Llama-3-8B-like", 64, 4, 2, 16, 96, 160, 1, 128)
# models/qwen3_30b_a3b.textproto: D=2048, 32 / 4 heads of 128, qk_norm, 128 experts of F=768,
# top-8 renormalised, no shared expert, vocab 151936 untied, RMSNorm eps 1e-6, RoPE theta 1e7.
# B=1 x S=4096: T·K = 32,768 expert rows, 256 per expert with the balanced routing.
QWEN3_MOE = MoeConfig("qwen3_30b_a3b", "Qwen3-30B-A3B", 2048, 32, 4, 128, 768, 151936, 1, 4096,
                      experts=128, top_k=8, eps=1e-6, rope_theta=10000000.0)
TINY_MOE = MoeConfig("tiny_qwen3_moe", "tiny Qwen3-30B-A3B-like", 64, 4, 2, 16, 48, 160, 1, 128,
                     experts=8, top_k=2, eps=1e-6, rope_theta=10000000.0)
# Dense SwiGLU FFN points: (name, model, D, F); T = the config's tokens.
FULL_FFN = [("llama3_8b", "Llama-3-8B", 4096, 14336),
            ("deepseek_v3_dense", "DeepSeek-V3 (dense layers)", 7168, 18432)]
TINY_FFN = [("tiny_a", "tiny (D != F)", 64, 96), ("tiny_b", "tiny (D != F)", 112, 80)]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=None, help="CSV file to write (overwritten)")
    p.add_argument("--platform", default=None,
                   help="JAX platform (gpu, cpu); default: JAX's choice")
    p.add_argument("--tiny", action="store_true", help="small shapes (a CPU check)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=330.0,
                   help="start no measurement once this many seconds have passed")
    p.add_argument("--id-prefix", default="S", help="row ids are PREFIX001, PREFIX002, ...")
    p.add_argument("--id-start", type=int, default=1,
                   help="number of the first row id (e.g. 13 to continue a file at H012)")
    p.add_argument("--moe", action="store_true",
                   help="the Qwen3-30B-A3B-shaped MoE model (models/qwen3_30b_a3b.textproto) "
                        "instead of Llama-3-8B, B=1 x S=4096: categories whole_step (default "
                        "--step-layers 2,4) and layer_moe")
    p.add_argument("--moe-impl", default="ragged_dot",
                   help="with --moe: comma-separated grouped-matmul implementations, each "
                        "measured: ragged_dot (jax.lax.ragged_dot), batched (einsums over the "
                        "E equal groups of the balanced routing: an ideal grouped GEMM)")
    p.add_argument("--only", default=None,
                   help="comma-separated categories to run (default all): " + ",".join(CATEGORIES))
    p.add_argument("--attention", default="auto", choices=["auto", "cudnn", "xla"],
                   help="dot_product_attention implementation (auto: cudnn on a GPU, else xla)")
    p.add_argument("--dry-run", action="store_true",
                   help="allocate and run nothing: jax.eval_shape every function on abstract "
                        "inputs and print the analytic FLOPs (with --compile, also lower and "
                        "compile on this platform and print XLA's cost_analysis)")
    p.add_argument("--compile", action="store_true", help="with --dry-run: compile too")
    p.add_argument("--step-layers", default=None,
                   help="comma-separated decoder layer counts of the whole_step rows (default "
                        "4,2; with --moe 2,4)")
    p.add_argument("--remat", action="store_true",
                   help="whole_step: rematerialise each decoder layer in the backward "
                        "(jax.checkpoint around the layer, nothing saved: MaxText's "
                        "remat_policy=full, Megatron's --recompute-granularity full)")
    p.add_argument("--batch", type=int, default=None,
                   help="override the Llama config's batch (sequences)")
    p.add_argument("--seq", type=int, default=None,
                   help="override the Llama config's sequence length (tokens)")
    args = p.parse_args(argv)
    if not args.dry_run and not args.out:
        p.error("--out is required unless --dry-run")
    unknown = [i for i in args.moe_impl.split(",") if i not in MOE_BACKEND_WORD]
    if unknown:
        p.error(f"unknown --moe-impl {unknown}; known: {list(MOE_BACKEND_WORD)}")
    if args.step_layers is None:
        args.step_layers = "2,4" if args.moe else "4,2"
    if args.only:
        unknown = [c for c in args.only.split(",") if c not in CATEGORIES]
        if unknown:
            p.error(f"unknown categories {unknown}; known: {CATEGORIES}")
    return args


# ---------------------------------------------------------------------------------------------
# The model (jax is imported inside the functions: importing this module has no side effects).

def rms_norm(x, w, eps=1e-5):
    import jax
    import jax.numpy as jnp
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (y * w.astype(jnp.float32)).astype(x.dtype)


def rope_tables(seq, head_dim, theta=500000.0):
    """cos, sin [seq, head_dim / 2] in fp32 (Llama 3's theta), made on the host."""
    import numpy as np
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(seq, dtype=np.float64), inv)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def apply_rope(x, cos, sin):
    """x [B, S, N, Dh], rotate-half form, in fp32."""
    import jax.numpy as jnp
    x32 = x.astype(jnp.float32)
    x1, x2 = jnp.split(x32, 2, axis=-1)
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return jnp.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1).astype(x.dtype)


def swiglu(x, w0, w1, w2):
    import jax
    return (jax.nn.silu(x @ w0) * (x @ w1)) @ w2


def attention_sublayer(p, x, cos, sin, cfg, impl):
    """x + attention(RMSNorm(x)): x [B, S, D]; p: attn_norm, wq, wk, wv, wo (and q_norm, k_norm
    [head_dim] for a Qwen3 MoE config: RMSNorm of each head of q and k before RoPE)."""
    import jax
    b, s, _ = x.shape
    h = rms_norm(x, p["attn_norm"], cfg.eps)
    q = (h @ p["wq"]).reshape(b, s, cfg.heads, cfg.head_dim)
    k = (h @ p["wk"]).reshape(b, s, cfg.kv_heads, cfg.head_dim)
    v = (h @ p["wv"]).reshape(b, s, cfg.kv_heads, cfg.head_dim)
    if cfg.moe:
        q, k = rms_norm(q, p["q_norm"], cfg.eps), rms_norm(k, p["k_norm"], cfg.eps)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    a = jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation=impl)
    return x + a.reshape(b, s, cfg.heads * cfg.head_dim) @ p["wo"]


def decoder_layer(p, x, cos, sin, cfg, impl, route=None):
    """x [B, S, D] -> [B, S, D]; p: attn_norm, wq, wk, wv, wo, ffn_norm, w0, w1, w2 (dense) or
    the MoE layer's (moe_decoder_layer); route: the MoE layer's expert ids (unused if dense)."""
    if cfg.moe:
        return moe_decoder_layer(p, x, cos, sin, cfg, impl, route)
    x = attention_sublayer(p, x, cos, sin, cfg, impl)
    h = rms_norm(x, p["ffn_norm"], cfg.eps)
    return x + swiglu(h, p["w0"], p["w1"], p["w2"])


def moe_ffn(x, w_router, wi_0, wi_1, wo, route, top_k, impl="ragged_dot"):
    """The routed SwiGLU MoE, "argsort + ragged_dot": x [T, D] -> [T, D].

    Router: logits [T, E] in fp32 (x and the router weight cast to fp32), softmax over the E
    experts, lax.top_k, the K weights renormalised to sum to 1 (norm_topk_prob). The expert ids
    are `route` [T, K] (int32, an input: token t's j-th expert is (t·K + j) mod E, so every
    expert gets exactly T·K/E rows; the weights are still the router's top-K values, so the
    router, its softmax, top-k and gradient all run). Then: argsort of the flattened ids, a
    gather of the token copies in expert order, the group sizes (bincount), three ragged_dots
    (wi_0, wi_1: [E, D, F]; wo: [E, F, D]) with SiLU(x wi_0) * (x wi_1) between, the rows
    scattered back to token order and combined with the weights. Dropless, no capacity.

    impl "batched": the same, but the three grouped matmuls are batched einsums over
    [E, T·K/E, D]: exact only when every group has T·K/E rows (the balanced routing), and then
    the work of an ideal grouped GEMM (XLA's own ragged_dot on a GPU computes all E groups over
    every row, README)."""
    import jax
    import jax.numpy as jnp
    t, _ = x.shape
    e = w_router.shape[1]
    logits = x.astype(jnp.float32) @ w_router.astype(jnp.float32)
    probs = jax.nn.softmax(logits, axis=-1)
    weights, _ = jax.lax.top_k(probs, top_k)
    weights = weights / jnp.sum(weights, axis=-1, keepdims=True)
    flat = route.reshape(-1)
    order = jnp.argsort(flat, stable=True)
    xs = jnp.take(x, order // top_k, axis=0)
    sizes = jnp.bincount(flat, length=e).astype(jnp.int32)
    if impl == "batched":
        assert (t * top_k) % e == 0
        xe = xs.reshape(e, t * top_k // e, -1)
        h = (jax.nn.silu(jnp.einsum("ecd,edf->ecf", xe, wi_0))
             * jnp.einsum("ecd,edf->ecf", xe, wi_1))
        ys = jnp.einsum("ecf,efd->ecd", h, wo).reshape(t * top_k, -1)
    else:
        h = (jax.nn.silu(jax.lax.ragged_dot(xs, wi_0, sizes))
             * jax.lax.ragged_dot(xs, wi_1, sizes))
        ys = jax.lax.ragged_dot(h, wo, sizes)
    y = jnp.zeros_like(ys).at[order].set(ys).reshape(t, top_k, -1)
    return jnp.einsum("tkd,tk->td", y, weights.astype(x.dtype))


def moe_decoder_layer(p, x, cos, sin, cfg, impl, route):
    """Qwen3 MoE decoder layer: x + attention (with qk norm), then x + MoE(RMSNorm(x))."""
    b, s, d = x.shape
    x = attention_sublayer(p, x, cos, sin, cfg, impl)
    h = rms_norm(x, p["ffn_norm"], cfg.eps).reshape(b * s, d)
    y = moe_ffn(h, p["router"], p["moe_wi_0"], p["moe_wi_1"], p["moe_wo"], route, cfg.top_k,
                cfg.moe_impl)
    return x + y.reshape(b, s, d)


def cross_entropy(logits, targets):
    """Mean softmax cross-entropy in fp32; logits [..., V] (any dtype), targets [...] int."""
    import jax
    import jax.numpy as jnp
    logits = logits.astype(jnp.float32)
    picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)


def lm_head_loss(x, norm_w, head, targets, eps=1e-5):
    return cross_entropy(rms_norm(x, norm_w, eps) @ head, targets)


def model_loss(params, tokens, targets, cos, sin, cfg, impl, remat=False, route=None):
    import jax
    import jax.numpy as jnp
    x = jnp.take(params["embed"], tokens, axis=0)  # [B, S, D]
    layer_fn = decoder_layer
    if remat:
        # Full rematerialisation: the layer keeps only its input; the backward re-runs its
        # forward (cfg and impl are static Python values).
        layer_fn = jax.checkpoint(decoder_layer, static_argnums=(4, 5))
    for layer in params["layers"]:
        x = layer_fn(layer, x, cos, sin, cfg, impl, route)
    return lm_head_loss(x, params["final_norm"], params["head"], targets, cfg.eps)


def adamw(params, master, m, v, count, grads):
    """One AdamW step in fp32 over pytrees: returns (bf16 params, master, m, v, count)."""
    import jax
    import jax.numpy as jnp
    count = count + 1
    t = count.astype(jnp.float32)
    c1 = 1.0 - BETA1 ** t
    c2 = 1.0 - BETA2 ** t

    def one(p, w, mm, vv, g):
        g = g.astype(jnp.float32)
        mm = BETA1 * mm + (1.0 - BETA1) * g
        vv = BETA2 * vv + (1.0 - BETA2) * g * g
        w = w - LR * ((mm / c1) / (jnp.sqrt(vv / c2) + EPS) + WEIGHT_DECAY * w)
        return w.astype(p.dtype), w, mm, vv

    out = jax.tree_util.tree_map(one, params, master, m, v, grads)
    treedef = jax.tree_util.tree_structure(params)
    leaves = treedef.flatten_up_to(out)
    unzip = [treedef.unflatten([leaf[i] for leaf in leaves]) for i in range(4)]
    return unzip[0], unzip[1], unzip[2], unzip[3], count


# ---------------------------------------------------------------------------------------------
# Inputs: every array through one maker, real (on the device) or abstract (--dry-run).

class Maker:
    def __init__(self, abstract, seed=0):
        import jax
        self.abstract = abstract
        self.key = jax.random.PRNGKey(seed)

    def _next(self):
        import jax
        self.key, sub = jax.random.split(self.key)
        return sub

    def normal(self, shape, dtype, scale=1.0):
        import jax
        import jax.numpy as jnp
        if self.abstract:
            return jax.ShapeDtypeStruct(shape, dtype)
        return (jax.random.normal(self._next(), shape, jnp.float32) * scale).astype(dtype)

    def ones(self, shape, dtype):
        import jax
        import jax.numpy as jnp
        return jax.ShapeDtypeStruct(shape, dtype) if self.abstract else jnp.ones(shape, dtype)

    def zeros_like(self, tree):
        import jax
        import jax.numpy as jnp
        if self.abstract:
            return tree
        return jax.tree_util.tree_map(jnp.zeros_like, tree)

    def ints(self, shape, high):
        import jax
        import jax.numpy as jnp
        if self.abstract:
            return jax.ShapeDtypeStruct(shape, jnp.int32)
        return jax.random.randint(self._next(), shape, 0, high, jnp.int32)

    def scalar_int(self, value):
        import jax
        import jax.numpy as jnp
        if self.abstract:
            return jax.ShapeDtypeStruct((), jnp.int32)
        return jnp.asarray(value, jnp.int32)

    def cast(self, tree, dtype):
        import jax
        if self.abstract:
            return jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, dtype), tree)
        return jax.tree_util.tree_map(lambda a: a.astype(dtype), tree)

    def host(self, array):
        import jax
        import jax.numpy as jnp
        if self.abstract:
            return jax.ShapeDtypeStruct(array.shape, array.dtype)
        return jnp.asarray(array)


def make_layer(mk, cfg, dtype):
    d, hd = cfg.d, cfg.head_dim
    if cfg.moe:
        e, f = cfg.experts, cfg.ffn
        return {
            "attn_norm": mk.ones((d,), dtype),
            "wq": mk.normal((d, cfg.heads * hd), dtype, d ** -0.5),
            "wk": mk.normal((d, cfg.kv_heads * hd), dtype, d ** -0.5),
            "wv": mk.normal((d, cfg.kv_heads * hd), dtype, d ** -0.5),
            "q_norm": mk.ones((hd,), dtype),
            "k_norm": mk.ones((hd,), dtype),
            "wo": mk.normal((cfg.heads * hd, d), dtype, (cfg.heads * hd) ** -0.5),
            "ffn_norm": mk.ones((d,), dtype),
            "router": mk.normal((d, e), dtype, d ** -0.5),
            "moe_wi_0": mk.normal((e, d, f), dtype, d ** -0.5),
            "moe_wi_1": mk.normal((e, d, f), dtype, d ** -0.5),
            "moe_wo": mk.normal((e, f, d), dtype, f ** -0.5),
        }
    return {
        "attn_norm": mk.ones((d,), dtype),
        "wq": mk.normal((d, cfg.heads * hd), dtype, d ** -0.5),
        "wk": mk.normal((d, cfg.kv_heads * hd), dtype, d ** -0.5),
        "wv": mk.normal((d, cfg.kv_heads * hd), dtype, d ** -0.5),
        "wo": mk.normal((cfg.heads * hd, d), dtype, (cfg.heads * hd) ** -0.5),
        "ffn_norm": mk.ones((d,), dtype),
        "w0": mk.normal((d, cfg.ffn), dtype, d ** -0.5),
        "w1": mk.normal((d, cfg.ffn), dtype, d ** -0.5),
        "w2": mk.normal((cfg.ffn, d), dtype, cfg.ffn ** -0.5),
    }


def make_rope(mk, cfg):
    cos, sin = rope_tables(cfg.seq, cfg.head_dim, cfg.rope_theta)
    return mk.host(cos), mk.host(sin)


def balanced_route(cfg):
    """Expert ids [T, K] int32: token t's j-th expert is (t·K + j) mod E. The K ids of a token
    are distinct (K <= E) and, when E divides T·K, every expert gets exactly T·K/E rows."""
    import numpy as np
    assert cfg.top_k <= cfg.experts and (cfg.tokens * cfg.top_k) % cfg.experts == 0
    ids = np.arange(cfg.tokens * cfg.top_k, dtype=np.int64) % cfg.experts
    return ids.reshape(cfg.tokens, cfg.top_k).astype(np.int32)


def make_route(mk, cfg):
    """The expert ids as an input array (not a constant XLA could fold the argsort over)."""
    return mk.host(balanced_route(cfg)) if cfg.moe else None


def param_count(tree):
    import jax
    return sum(math.prod(a.shape) for a in jax.tree_util.tree_leaves(tree))


# ---------------------------------------------------------------------------------------------
# Cases: one row each. build(mk) -> (function, args, donate_argnums, n_state, extra notes).
# A stateful case (n_state > 0) returns its first n_state arguments, updated, then one more
# output (the loss, or nothing); its calls are chained.

class Case:
    def __init__(self, category, op, model, cfg_text, build, flops=None, exec_flops=None,
                 bytes_moved=None, d="", f="", tokens="", seq_len="", global_batch="",
                 metric="", backend="", e="", k="", shared_experts="", alt_flops=None):
        self.category, self.op, self.model = category, op, model
        self.e, self.k, self.shared_experts = e, k, shared_experts
        # (FLOPs, what): the analytic count in another convention (MaxText's, with the router).
        self.alt_flops = alt_flops
        self.op_shape = f"{cfg_text}; op={op}"
        self.build, self.flops, self.exec_flops, self.bytes_moved = build, flops, exec_flops, \
            bytes_moved
        self.d, self.f, self.tokens = d, f, tokens
        self.seq_len, self.global_batch = seq_len, global_batch
        self.metric, self.backend = metric, backend

    @property
    def label(self):
        backend = ""
        if "moe_backend=" in self.op_shape:
            backend = " " + self.op_shape.split("moe_backend=")[1].split(";")[0]
        return f"{self.category} {self.op_shape.split(';')[0]}{backend} {self.op}"


def whole_step_cases(cfg, impl, attention_word, backend, layer_counts=(4, 2), remat=False):
    import jax
    import jax.numpy as jnp
    cases = []
    for layers in layer_counts:
        def build(mk, layers=layers):
            master = {
                "embed": mk.normal((cfg.vocab, cfg.d), jnp.float32, 1.0),
                "layers": [make_layer(mk, cfg, jnp.float32) for _ in range(layers)],
                "final_norm": mk.ones((cfg.d,), jnp.float32),
                "head": mk.normal((cfg.d, cfg.vocab), jnp.float32, cfg.d ** -0.5),
            }
            params = mk.cast(master, jnp.bfloat16)
            m, v = mk.zeros_like(master), mk.zeros_like(master)
            tokens = mk.ints((cfg.batch, cfg.seq), cfg.vocab)
            targets = mk.ints((cfg.batch, cfg.seq), cfg.vocab)
            cos, sin = make_rope(mk, cfg)
            extra = (make_route(mk, cfg),) if cfg.moe else ()

            def step(params, master, m, v, count, tokens, targets, cos, sin, *route):
                loss, grads = jax.value_and_grad(model_loss)(params, tokens, targets, cos, sin,
                                                             cfg, impl, remat, *route)
                params, master, m, v, count = adamw(params, master, m, v, count, grads)
                return params, master, m, v, count, loss

            n = param_count(master)
            note = (f"{n:,} parameters; AdamW moves {ADAMW_BYTES_PER_PARAM} B/param "
                    f"= {ADAMW_BYTES_PER_PARAM * n / 1e9:.4g} GB per step (not in the FLOPs)")
            if cfg.moe:
                note += "; " + moe_routing_note(cfg)
            return (step, (params, master, m, v, mk.scalar_int(0), tokens, targets, cos, sin)
                    + extra, (0, 1, 2, 3, 4), 5, note)

        fwd = layers * cfg.layer_fwd_flops() + cfg.head_fwd_flops()
        # Model FLOPs stay 3x the forward; with full remat the hardware also re-runs every
        # layer's forward once in the backward.
        recompute = layers * cfg.layer_fwd_flops() if remat else 0
        exec_flops = 3 * fwd + recompute + layers * cfg.attention_half_matmul_flops()
        moe = {}
        if cfg.moe:
            moe = dict(e=cfg.experts, k=cfg.top_k, shared_experts=0,
                       alt_flops=(3 * (fwd + layers * cfg.router_fwd_flops()),
                                  "MaxText's convention (the router's 2·D·E per token too)"))
            # XLA's expansion of every ragged_dot to all E groups (forward and both gradients,
            # and the forward again under remat).
            exec_flops += (layers * (3 + (1 if remat else 0))
                           * (cfg.expanded_expert_fwd_flops() - cfg.expert_fwd_flops()))
        cases.append(Case(
            "whole_step", "fwd_bwd_adamw", f"{cfg.model} ({layers} layers"
            + (f", {cfg.moe_impl}" if cfg.moe else "") + (", full remat)" if remat else ")"),
            f"model={cfg.name}_{layers}layers; layers={layers}; {cfg.shape_text()}; "
            f"attention={attention_word}; embedding=untied; norm=rmsnorm; ffn_act=swiglu; "
            f"rope=yes; params=bf16; master=fp32; adam_moments=fp32; loss=fp32_softmax_xent; "
            f"optimizer=adamw; donated=params,master,m,v; remat={'full' if remat else 'none'}",
            build, flops=3 * fwd, exec_flops=exec_flops,
            d=cfg.d, f=cfg.ffn, tokens=cfg.tokens, seq_len=cfg.seq, global_batch=cfg.batch,
            metric="device time of one training step (embedding, decoder layers, LM head, fp32 "
                   "cross-entropy, backward, AdamW)",
            backend=backend, **moe))
        if cfg.moe and cfg.moe_impl == "ragged_dot":
            cases[-1].exec_what = MOE_EXEC_WHAT + (" and full remat" if remat else "")
        elif remat:
            cases[-1].exec_what = ("executed with full remat (every layer's forward run again "
                                   "in the backward) and the flash backward's recomputed scores")
    return cases


MOE_EXEC_WHAT = ("executed if XLA expands every ragged_dot (forward and both gradients) to all "
                 "E groups over all T·K rows, as its RaggedDotRewriter does on the GPU "
                 "(README), and the flash backward recomputes the scores")


def moe_routing_note(cfg):
    rows = cfg.tokens * cfg.top_k
    return (f"routing balanced: expert ids fixed round-robin (token t's j-th expert (t·K + j) "
            f"mod E, an input array), every expert exactly {rows // cfg.experts} of the "
            f"{rows} rows; combine weights = the fp32 router's softmax top-{cfg.top_k} "
            f"values renormalised (the router, top-k and their gradient run)"
            + ("; grouped matmuls as batched einsums over [E, T·K/E, D] (exact for these "
               "equal groups)" if cfg.moe_impl == "batched" else "; grouped matmuls "
               "jax.lax.ragged_dot with the group sizes (bincount of the ids)"))


def layer_moe_cases(cfg, impl, attention_word, backend):
    """One Qwen3 MoE decoder layer: forward, and forward + backward (gradients of x and every
    weight), as layer_decoder_cases for the dense layer."""
    import jax
    import jax.numpy as jnp
    shape = (f"model={cfg.name}_layer; {cfg.shape_text()}; attention={attention_word}; "
             f"norm=rmsnorm; ffn_act=swiglu; rope=yes; params=bf16")

    def inputs(mk):
        p = make_layer(mk, cfg, jnp.bfloat16)
        x = mk.normal((cfg.batch, cfg.seq, cfg.d), jnp.bfloat16)
        cos, sin = make_rope(mk, cfg)
        return p, x, cos, sin, make_route(mk, cfg)

    def build_fwd(mk):
        p, x, cos, sin, route = inputs(mk)
        return (lambda p_, x_, c_, s_, r_: moe_decoder_layer(p_, x_, c_, s_, cfg, impl, r_),
                (p, x, cos, sin, route), (), 0, moe_routing_note(cfg))

    def build_fwd_bwd(mk):
        p, x, cos, sin, route = inputs(mk)
        ct = mk.normal((cfg.batch, cfg.seq, cfg.d), jnp.bfloat16)

        def fwd_bwd(p_, x_, c_, s_, r_, ct_):
            out, vjp = jax.vjp(lambda pp, xx: moe_decoder_layer(pp, xx, c_, s_, cfg, impl, r_),
                               p_, x_)
            return out, vjp(ct_)

        return (fwd_bwd, (p, x, cos, sin, route, ct), (), 0,
                "returns the output and the gradients of x and every weight (router included); "
                + moe_routing_note(cfg))

    fwd = cfg.layer_fwd_flops()
    router = cfg.router_fwd_flops()
    expansion = cfg.expanded_expert_fwd_flops() - cfg.expert_fwd_flops()
    half = cfg.attention_half_matmul_flops()
    common = dict(d=cfg.d, f=cfg.ffn, tokens=cfg.tokens, seq_len=cfg.seq, e=cfg.experts,
                  k=cfg.top_k, shared_experts=0, global_batch=cfg.batch, backend=backend)
    maxtext = "MaxText's convention (the router's 2·D·E per token too)"
    cases = [
        Case("layer_moe", "fwd", f"{cfg.model} (one MoE decoder layer, {cfg.moe_impl})", shape,
             build_fwd,
             flops=fwd, exec_flops=fwd + expansion, alt_flops=(fwd + router, maxtext),
             metric="device time of one MoE decoder layer (forward)", **common),
        Case("layer_moe", "fwd_bwd", f"{cfg.model} (one MoE decoder layer, {cfg.moe_impl})", shape,
             build_fwd_bwd, flops=3 * fwd, exec_flops=3 * (fwd + expansion) + half,
             alt_flops=(3 * (fwd + router), maxtext),
             metric="device time of one MoE decoder layer (forward and backward: gradients of "
                    "x and every weight)", **common),
    ]
    for case in cases if cfg.moe_impl == "ragged_dot" else ():
        case.exec_what = MOE_EXEC_WHAT.replace(", and the flash backward recomputes the scores",
                                               "") if case.op == "fwd" else MOE_EXEC_WHAT
    return cases


def layer_decoder_cases(cfg, impl, attention_word, backend):
    import jax
    import jax.numpy as jnp
    shape = (f"model={cfg.name}_layer; {cfg.shape_text()}; attention={attention_word}; "
             f"norm=rmsnorm; ffn_act=swiglu; rope=yes; params=bf16")

    def inputs(mk):
        p = make_layer(mk, cfg, jnp.bfloat16)
        x = mk.normal((cfg.batch, cfg.seq, cfg.d), jnp.bfloat16)
        cos, sin = make_rope(mk, cfg)
        return p, x, cos, sin

    def build_fwd(mk):
        p, x, cos, sin = inputs(mk)
        return (lambda p_, x_, c_, s_: decoder_layer(p_, x_, c_, s_, cfg, impl),
                (p, x, cos, sin), (), 0, "")

    def build_fwd_bwd(mk):
        p, x, cos, sin = inputs(mk)
        ct = mk.normal((cfg.batch, cfg.seq, cfg.d), jnp.bfloat16)

        def fwd_bwd(p_, x_, c_, s_, ct_):
            out, vjp = jax.vjp(lambda pp, xx: decoder_layer(pp, xx, c_, s_, cfg, impl), p_, x_)
            return out, vjp(ct_)

        return (fwd_bwd, (p, x, cos, sin, ct), (), 0,
                "returns the output and the gradients of x and every weight")

    fwd = cfg.layer_fwd_flops()
    half = cfg.attention_half_matmul_flops()
    common = dict(d=cfg.d, f=cfg.ffn, tokens=cfg.tokens, seq_len=cfg.seq,
                  global_batch=cfg.batch, backend=backend)
    return [
        Case("layer_decoder", "fwd", f"{cfg.model} (one decoder layer)", shape, build_fwd,
             flops=fwd, exec_flops=fwd, metric="device time of one decoder layer (forward)",
             **common),
        Case("layer_decoder", "fwd_bwd", f"{cfg.model} (one decoder layer)", shape,
             build_fwd_bwd, flops=3 * fwd, exec_flops=3 * fwd + half,
             metric="device time of one decoder layer (forward and backward: gradients of x "
                    "and every weight)", **common),
    ]


def dense_ffn_cases(points, tokens, backend):
    import jax
    import jax.numpy as jnp
    cases = []
    for name, model, d, f in points:
        def inputs(mk, d=d, f=f):
            return (mk.normal((tokens, d), jnp.bfloat16),
                    mk.normal((d, f), jnp.bfloat16, d ** -0.5),
                    mk.normal((d, f), jnp.bfloat16, d ** -0.5),
                    mk.normal((f, d), jnp.bfloat16, f ** -0.5))

        def build_fwd(mk, inputs=inputs):
            return swiglu, inputs(mk), (), 0, ""

        def build_fwd_bwd(mk, inputs=inputs, d=d):
            args = inputs(mk)
            ct = mk.normal((tokens, d), jnp.bfloat16)

            def fwd_bwd(x, w0, w1, w2, ct_):
                out, vjp = jax.vjp(swiglu, x, w0, w1, w2)
                return out, vjp(ct_)

            return (fwd_bwd, args + (ct,), (), 0,
                    "returns the output and the gradients of x, W0, W1, W2")

        shape = f"model={name}_ffn; tokens={tokens}; d={d}; ffn={f}; act=swiglu; dtype=bf16"
        fwd = 6 * tokens * d * f
        for op, build, flops in (("fwd", build_fwd, fwd), ("fwd_bwd", build_fwd_bwd, 3 * fwd)):
            cases.append(Case(
                "layer_dense_ffn", op, f"{model} (dense SwiGLU FFN)", shape, build,
                flops=flops, exec_flops=flops, d=d, f=f, tokens=tokens,
                metric=f"device time of the dense SwiGLU FFN ({op})", backend=backend))
    return cases


def lm_head_cases(cfg, backend):
    import jax
    import jax.numpy as jnp
    t = cfg.tokens

    def inputs(mk):
        return (mk.normal((t, cfg.d), jnp.bfloat16), mk.ones((cfg.d,), jnp.bfloat16),
                mk.normal((cfg.d, cfg.vocab), jnp.bfloat16, cfg.d ** -0.5),
                mk.ints((t,), cfg.vocab))

    def build_fwd(mk):
        return lm_head_loss, inputs(mk), (), 0, ""

    def build_fwd_bwd(mk):
        return (jax.value_and_grad(lm_head_loss, argnums=(0, 1, 2)), inputs(mk), (), 0,
                "loss and gradients of x, the norm weight and the head")

    shape = (f"model={cfg.name}_lm_head; tokens={t}; d={cfg.d}; vocab={cfg.vocab}; "
             f"norm=rmsnorm; logits=bf16_matmul_then_fp32; loss=fp32_softmax_xent")
    fwd = cfg.head_fwd_flops()
    return [Case("op_lm_head_loss", op, f"{cfg.model} (LM head + loss)", shape, build,
                 flops=flops, exec_flops=flops, d=cfg.d, tokens=t,
                 metric=f"device time of the final RMSNorm, LM head and fp32 cross-entropy "
                        f"({op})", backend=backend)
            for op, build, flops in (("fwd", build_fwd, fwd), ("fwd_bwd", build_fwd_bwd,
                                                               3 * fwd))]


def optimizer_cases(cfg, backend):
    import jax.numpy as jnp
    n = cfg.layer_params()

    def build(mk):
        master = make_layer(mk, cfg, jnp.float32)
        params = mk.cast(master, jnp.bfloat16)
        m, v = mk.zeros_like(master), mk.zeros_like(master)
        grads = make_layer(mk, cfg, jnp.bfloat16)

        def step(params, master, m, v, count, grads):
            return adamw(params, master, m, v, count, grads) + (None,)

        return step, (params, master, m, v, mk.scalar_int(0), grads), (0, 1, 2, 3, 4), 5, ""

    shape = (f"model={cfg.name}_layer_params; params={n}; d={cfg.d}; heads={cfg.heads}; "
             f"kv_heads={cfg.kv_heads}; head_dim={cfg.head_dim}; ffn={cfg.ffn}; master=fp32; "
             f"adam_moments=fp32; grads_in=bf16; params_out=bf16; donated=params,master,m,v")
    return [Case("op_optimizer_adamw", "adamw", f"{cfg.model} (one decoder layer's parameters)",
                 shape, build, bytes_moved=ADAMW_BYTES_PER_PARAM * n, d=cfg.d, f=cfg.ffn,
                 metric="device time of the AdamW update of one decoder layer's parameters",
                 backend=backend)]


# ---------------------------------------------------------------------------------------------
# Timing.

def time_chained(fn, args, n_state, warmup, reps, batches):
    """Timer's method for a function whose first n_state inputs are donated and returned
    updated: every call takes the previous call's state (a training loop). Returns the timing
    dict of measure_moe.Timer and the last auxiliary output."""
    import jax
    state, rest = tuple(args[:n_state]), tuple(args[n_state:])
    aux = None

    def call(state):
        out = fn(*state, *rest)
        return tuple(out[:n_state]), out[n_state]

    for _ in range(warmup):
        state, aux = call(state)
        jax.block_until_ready((state, aux))
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        state, aux = call(state)
        jax.block_until_ready((state, aux))
        samples.append((time.perf_counter() - start) * 1e6)
    pipelined = []
    for _ in range(batches):
        start = time.perf_counter()
        auxes = []
        for _ in range(reps):
            state, aux = call(state)
            auxes.append(aux)
        jax.block_until_ready((state, auxes))
        pipelined.append((time.perf_counter() - start) * 1e6 / reps)
    import statistics
    timing = {"value": statistics.median(pipelined), "low": min(pipelined),
              "high": max(pipelined), "single": statistics.median(samples),
              "single_low": min(samples), "single_high": max(samples)}
    del state
    return timing, aux


def xla_costs(compiled):
    """(flops, bytes accessed) from cost_analysis (a dict, a list of dicts, or None)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # not every backend / version has it
        return None, None
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    if not cost:
        return None, None
    return cost.get("flops"), cost.get("bytes accessed")


def xla_memory(compiled):
    try:
        mem = compiled.memory_analysis()
    except Exception:
        return None
    if mem is None:
        return None
    try:
        return (f"XLA memory_analysis: arguments {mem.argument_size_in_bytes / 2**30:.4g} GiB, "
                f"outputs {mem.output_size_in_bytes / 2**30:.4g} GiB, aliased "
                f"{mem.alias_size_in_bytes / 2**30:.4g} GiB, temporaries "
                f"{mem.temp_size_in_bytes / 2**30:.4g} GiB")
    except AttributeError:
        return None


def check_fits(compiled, device):
    """Raises MemoryError (the case fails, the run goes on) when XLA's memory_analysis needs
    more than the device holds: not running it saves the device time of an out-of-memory try."""
    try:
        mem = compiled.memory_analysis()
        need = (mem.argument_size_in_bytes + mem.output_size_in_bytes
                - mem.alias_size_in_bytes + mem.temp_size_in_bytes)
        limit = (device.memory_stats() or {}).get("bytes_limit")
    except Exception:  # no analysis or no stats on this platform: just try
        return
    if limit and need > limit:
        raise MemoryError(f"XLA memory_analysis needs {need / 2**30:.1f} GiB, the device holds "
                          f"{limit / 2**30:.1f} GiB: not run")


def tflop(flops):
    return f"{flops / 1e12:.4g} TFLOP"


def flop_notes(case, seconds, xla_flops, xla_bytes):
    parts = []
    if case.flops:
        parts.append(f"analytic {tflop(case.flops)} (matmuls 2·m·n·k, causal attention as half "
                     f"the S x S square, backward = 2x forward, element-wise work not counted) "
                     f"= {case.flops / seconds / 1e12:.4g} TFLOP/s achieved")
        if case.alt_flops:
            alt, what = case.alt_flops
            parts.append(f"{tflop(alt)} in {what} = {alt / seconds / 1e12:.4g} TFLOP/s")
        if case.exec_flops and case.exec_flops != case.flops:
            what = getattr(case, "exec_what", "if the attention backward recomputes the scores "
                           "as a flash-attention kernel does (5 causal-half matmuls, not 4)")
            parts.append(f"{tflop(case.exec_flops)} {what} = "
                         f"{case.exec_flops / seconds / 1e12:.4g} TFLOP/s")
    if case.bytes_moved:
        parts.append(f"{case.bytes_moved / 1e9:.4g} GB moved ({ADAMW_BYTES_PER_PARAM} B per "
                     f"parameter: bf16 grad in, fp32 master, m, v in and out, bf16 param out) = "
                     f"{case.bytes_moved / seconds / 1e9:.4g} GB/s achieved")
    if xla_flops is not None:
        ratio = f" ({xla_flops / case.flops:.3f}x the analytic count)" if case.flops else ""
        parts.append(f"XLA cost_analysis flops {tflop(xla_flops)}{ratio}")
    if xla_bytes is not None:
        parts.append(f"XLA cost_analysis bytes accessed {xla_bytes / 1e9:.4g} GB")
    return parts


def run_case(case, args, timer, device):
    """Builds, compiles, times one case: (timing, notes parts, rate) or raises."""
    import jax
    mk = Maker(abstract=False)
    fn, fn_args, donate, n_state, extra = case.build(mk)
    jax.block_until_ready(fn_args)
    start = time.perf_counter()
    compiled = jax.jit(fn, donate_argnums=donate).lower(*fn_args).compile()
    compile_s = time.perf_counter() - start
    xla_flops, xla_bytes = xla_costs(compiled)
    memory = xla_memory(compiled)
    check_fits(compiled, device)
    if n_state:
        timing, aux = time_chained(compiled, fn_args, n_state, args.warmup, args.reps,
                                   args.batches)
    else:
        timing, aux = timer(compiled, *fn_args), None
    seconds = timing["value"] / 1e6
    notes = flop_notes(case, seconds, xla_flops, xla_bytes)
    notes.append(f"compile {compile_s:.1f} s")
    if memory:
        notes.append(memory)
    if extra:
        notes.append(extra)
    if aux is not None and getattr(aux, "shape", None) == ():
        notes.append(f"loss after the timed steps {float(aux):.4f}")
    del fn_args, compiled, aux
    return timing, notes


def dry_run_case(case, args):
    import jax
    mk = Maker(abstract=True)
    fn, fn_args, donate, n_state, extra = case.build(mk)
    out = jax.eval_shape(fn, *fn_args)
    leaves = jax.tree_util.tree_leaves(out)
    size = sum(math.prod(leaf.shape) * leaf.dtype.itemsize for leaf in leaves)
    in_size = sum(math.prod(leaf.shape) * leaf.dtype.itemsize
                  for leaf in jax.tree_util.tree_leaves(fn_args))
    line = (f"{case.label}: eval_shape ok, inputs {in_size / 2**30:.2f} GiB, {len(leaves)} "
            f"outputs {size / 2**30:.2f} GiB")
    if case.flops:
        line += f"; analytic {tflop(case.flops)}"
    if case.bytes_moved:
        line += f"; {case.bytes_moved / 1e9:.3f} GB"
    if args.compile:
        start = time.perf_counter()
        compiled = jax.jit(fn, donate_argnums=donate).lower(*fn_args).compile()
        xla_flops, xla_bytes = xla_costs(compiled)
        line += f"; compiled in {time.perf_counter() - start:.1f} s"
        if xla_flops is not None:
            line += f"; XLA flops {tflop(xla_flops)}"
            if case.flops:
                line += f" ({xla_flops / case.flops:.3f}x analytic)"
        if xla_bytes is not None:
            line += f", bytes {xla_bytes / 1e9:.3f} GB"
        memory = xla_memory(compiled)
        if memory:
            line += "; " + memory
    print(line, flush=True)


def main(argv):
    t0 = time.perf_counter()
    args = parse_args(argv)
    if args.platform:
        os.environ["JAX_PLATFORMS"] = args.platform
    import jax

    device = jax.devices()[0]
    impl = args.attention
    if impl == "auto":
        impl = "cudnn" if device.platform == "gpu" else "xla"
    attention_word = f"{impl}_causal"
    if args.moe:
        cfg = TINY_MOE if args.tiny else QWEN3_MOE
    else:
        cfg = TINY if args.tiny else LLAMA
    if args.batch is not None or args.seq is not None:
        cfg = cfg.with_batch_seq(args.batch, args.seq)
    layer_counts = [int(n) for n in args.step_layers.split(",")]
    ffn_points = TINY_FFN if args.tiny else FULL_FFN
    backend = (f"jax.jit, XLA ({device.platform}); attention jax.nn.dot_product_attention "
               f"implementation={impl}, is_causal=True; hand-written AdamW")
    plain_backend = f"jax.jit, XLA ({device.platform})"

    if args.moe:
        # The first implementation's whole steps, then every implementation's layer rows, then
        # the other implementations' whole steps (ragged_dot's may not fit: see the docstring).
        moe_cfgs = []
        for name in args.moe_impl.split(","):
            kernel = f"; MoE argsort + {MOE_KERNEL_TEXT[name]}; hand-written AdamW"
            moe_cfgs.append((cfg.with_moe_impl(name),
                             backend.replace("; hand-written AdamW", kernel)))
        steps = [whole_step_cases(mc, impl, attention_word, be, layer_counts, args.remat)
                 for mc, be in moe_cfgs]
        cases = (steps[0] + [c for mc, be in moe_cfgs
                             for c in layer_moe_cases(mc, impl, attention_word, be)]
                 + [c for more in steps[1:] for c in more])
    else:
        cases = (whole_step_cases(cfg, impl, attention_word, backend, layer_counts, args.remat)
                 + layer_decoder_cases(cfg, impl, attention_word, backend)
                 + dense_ffn_cases(ffn_points, cfg.tokens, plain_backend)
                 + lm_head_cases(cfg, plain_backend)
                 + optimizer_cases(cfg, plain_backend + "; hand-written AdamW (fp32)"))
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c.category in wanted]

    if args.dry_run:
        if impl == "cudnn" and device.platform != "gpu":
            # Trace check only: let the cuDNN attention's shape checks and abstract evaluation
            # run without a GPU (it cannot be lowered or compiled here).
            from jax._src.cudnn import fused_attention_stablehlo
            fused_attention_stablehlo.check_cudnn_version = lambda: 91000
            print("dry run of the cudnn attention without a GPU: cuDNN's version check "
                  "stubbed (eval_shape only)", flush=True)
        failed = 0
        for case in cases:
            try:
                dry_run_case(case, args)
            except Exception as error:
                failed += 1
                print(f"FAILED {case.label}: {type(error).__name__}: {str(error)[:300]}",
                      flush=True)
        print(f"dry run: {len(cases) - failed} of {len(cases)} cases ok ({device.platform})")
        return 1 if failed else 0

    timer = measure_moe.Timer(args.warmup, args.reps, args.batches)
    today = datetime.date.today().isoformat()
    source = (f"validation/gpu/measure_step.py on {device.device_kind}; "
              f"{measure_moe.software_versions(device)}")
    method = (f"value: median over {args.batches} batches of {args.reps} calls dispatched back "
              f"to back, per call; after {args.warmup} warm-up calls")
    rows, skipped, failed = [], [], []
    out_file = open(args.out, "w", newline="")
    writer = csv.DictWriter(out_file, fieldnames=measure_moe.COLUMNS, lineterminator="\n")
    writer.writeheader()
    out_file.flush()

    def add(case, timing, notes):
        rows.append({
            "id": f"{args.id_prefix}{args.id_start + len(rows):03d}",
            "group": "perfsim validation/gpu",
            "category": case.category,
            "hardware": device.device_kind,
            "num_chips": "1",
            "interconnect_topology": "n/a",
            "model": case.model,
            "E": str(case.e), "K": str(case.k), "D": str(case.d), "F": str(case.f),
            "shared_experts": str(case.shared_experts),
            "tokens": f"{case.tokens} tokens" if case.tokens else "",
            "seq_len": str(case.seq_len), "global_batch": str(case.global_batch),
            "dtype": "bf16",
            "parallelism": "single device",
            "backend_kernel": case.backend,
            "op_shape": case.op_shape,
            "metric": case.metric,
            "value": f"{timing['value']:.2f}",
            "unit": measure_moe.UNIT,
            "derived": (f"batches min {timing['low']:.2f} us, max {timing['high']:.2f} us; "
                        f"one call alone (dispatch to block_until_ready): median "
                        f"{timing['single']:.2f} us, min {timing['single_low']:.2f} us, max "
                        f"{timing['single_high']:.2f} us"),
            "completeness": "full",
            "date": today,
            "source": source,
            "notes": "; ".join([method] + notes),
        })
        # Written as it goes: a run cut short keeps what it measured.
        writer.writerow(rows[-1])
        out_file.flush()

    print(f"{len(cases)} measurements on {device.device_kind} ({device.platform}), attention "
          f"{impl}, budget {args.budget_s:.0f} s", flush=True)
    for i, case in enumerate(cases):
        elapsed = time.perf_counter() - t0
        if elapsed > args.budget_s:
            skipped = cases[i:]
            print(f"budget of {args.budget_s:.0f} s spent ({elapsed:.0f} s): skipping "
                  f"{len(skipped)}: " + "; ".join(c.label for c in skipped), flush=True)
            break
        start = time.perf_counter()
        try:
            timing, notes = run_case(case, args, timer, device)
        except Exception as error:  # cuDNN missing, out of memory, ...: record nothing
            failed.append(case)
            print(f"FAILED {case.label}: {type(error).__name__}: {str(error)[:400]}",
                  flush=True)
        else:
            add(case, timing, notes)
            seconds = timing["value"] / 1e6
            rate = ""
            if case.flops:
                rate = f", {case.flops / seconds / 1e12:.4g} TFLOP/s"
            if case.bytes_moved:
                rate += f", {case.bytes_moved / seconds / 1e9:.4g} GB/s"
            print(f"{rows[-1]['id']} {case.category} {case.model} op={case.op}: "
                  f"{timing['value']:.2f} us (alone {timing['single']:.2f} us){rate}; "
                  f"{time.perf_counter() - start:.1f} s incl. compile; "
                  f"elapsed {time.perf_counter() - t0:.0f} s", flush=True)
        # The inputs and the executable were local to run_case; collect them (and, after a
        # failure, the traceback's frames) before the next measurement allocates its own.
        # jax.clear_caches() is not called: it would also drop the small programs that make the
        # inputs, which every later measurement would then compile again.
        gc.collect()
    out_file.close()

    print(f"\nwrote {len(rows)} rows to {args.out} ({device.device_kind}) in "
          f"{time.perf_counter() - t0:.0f} s; {len(failed)} failed, {len(skipped)} skipped")
    for row in rows:
        print(f"  {row['id']} {row['category']:<18} {row['model']:<45} "
              f"{row['op_shape'].split('op=')[-1]:<14} {float(row['value']):>12.2f} us")
    kinds = {}
    for r in rows:
        if r["category"] == "whole_step":
            what = r["op_shape"].split("moe_backend=")[1].split(";")[0] \
                if "moe_backend=" in r["op_shape"] else ""
            layers = r["op_shape"].split("layers=")[1].split(";")[0]
            kinds.setdefault(what, {})[layers] = float(r["value"])
    for what, steps in kinds.items():
        if "4" in steps and "2" in steps:
            slope = (steps["4"] - steps["2"]) / 2
            print(f"  whole step{' ' + what if what else ''}: per layer (t4 - t2) / 2 = "
                  f"{slope:.2f} us; fixed part (embedding, head, loss and their optimizer) "
                  f"t2 - 2 slope = {steps['2'] - 2 * slope:.2f} us")
    for case in failed:
        print(f"  FAILED {case.label}")
    for case in skipped:
        print(f"  SKIPPED {case.label}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
