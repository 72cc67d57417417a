"""Golden MoE modules: dense einsum, argsort + ragged_dot, expert parallel.

All modules share one set of parameters (MoeConfig defaults: T=64, D=24,
F=40, E=16, K=2, EP=8 so each device holds E_l=2 experts and T_l=8 tokens).
Forward modules take (x, router_w, wi_0, wi_1, wo) and return out [T, D].
Gradient modules also take a cotangent [T, D] and return the gradients of
sum(out * cotangent) w.r.t. the five parameters, in parameter order.
Every module is checked against a float64 numpy per-token reference.
"""

from __future__ import annotations

import jax
import numpy as np
from jax import lax

import golden_lib
import moe_models
from moe_models import EP_AXIS, MoeConfig

_MARGIN = 1e-3  # smallest accepted gap between k-th and (k+1)-th router prob
_NAMES = ("x", "router_w", "wi_0", "wi_1", "wo")


def _parameters(cfg: MoeConfig):
  """Deterministic inputs. The seed is the first one from 0 whose routing has
  no near-tie, so every implementation picks the same experts."""
  for seed in range(100):
    rng = np.random.default_rng(seed)
    t, d, f, e = cfg.tokens, cfg.d_model, cfg.d_ff, cfg.num_experts
    x = rng.standard_normal((t, d)).astype(np.float32)
    router_w = (rng.standard_normal((d, e)) / np.sqrt(d)).astype(np.float32)
    wi_0 = (rng.standard_normal((e, d, f)) / np.sqrt(d)).astype(np.float32)
    wi_1 = (rng.standard_normal((e, d, f)) / np.sqrt(d)).astype(np.float32)
    wo = (rng.standard_normal((e, f, d)) / np.sqrt(f)).astype(np.float32)
    cotangent = rng.standard_normal((t, d)).astype(np.float32)
    if moe_models.routing_margin(x, router_w, cfg.top_k) > _MARGIN:
      return seed, (x, router_w, wi_0, wi_1, wo), cotangent
  raise AssertionError("no seed with a clean routing margin")


def config_json():
  cfg = MoeConfig()
  return {
      "tokens": cfg.tokens, "d_model": cfg.d_model, "d_ff": cfg.d_ff,
      "num_experts": cfg.num_experts, "top_k": cfg.top_k,
      "expert_parallel_devices": cfg.ep,
      "recv_buffer_rows": cfg.recv_buffer_rows,
      "router": "softmax over E logits, top-k, renormalise the k weights",
      "expert_ffn": "(silu(x @ wi_0) * (x @ wi_1)) @ wo",
  }


def cases():
  cfg = MoeConfig()
  seed, params, cotangent = _parameters(cfg)
  k = cfg.top_k
  shape_note = (f"T={cfg.tokens} D={cfg.d_model} F={cfg.d_ff}"
                f" E={cfg.num_experts} K={k}; inputs from numpy"
                f" default_rng({seed}); routing margin > {_MARGIN}")

  def expected_fwd(args):
    out, _ = moe_models.reference_forward_and_grad(*args[:5], None, k)
    return [out]

  def expected_grad(args):
    _, grads = moe_models.reference_forward_and_grad(*args, k)
    return grads

  dense = lambda *a: moe_models.moe_dense_einsum(*a, top_k=k)
  ragged = lambda *a: moe_models.moe_ragged_dot(*a, top_k=k)
  mesh = jax.make_mesh((cfg.ep,), (EP_AXIS,))
  ep_real = moe_models.make_ep_forward(mesh, cfg, lax.ragged_all_to_all)
  ep_emul = moe_models.make_ep_forward(
      mesh, cfg, moe_models.ragged_all_to_all_emulated)
  grad_specs = moe_models.EP_IN_SPECS + (jax.sharding.PartitionSpec(EP_AXIS),)
  ep_note = (
      f"{shape_note}; EP={cfg.ep} over mesh axis '{EP_AXIS}', E_l="
      f"{cfg.experts_per_device}, T_l={cfg.tokens_per_device}, receive buffer"
      f" R=T_l*K*min(EP,E/K)={cfg.recv_buffer_rows} rows; receive buffers are"
      " zeros (MaxText uses lax.empty; TE uses zeros)")

  fwd_args = list(params)
  grad_args = list(params) + [cotangent]
  grad_names = _NAMES + ("cotangent",)
  tol = 1e-4
  return [
      golden_lib.Case(
          name="moe_dense_einsum_fwd",
          description="MoE forward, dense einsum: every token through every"
          " expert, combine weighted by the renormalised top-k router probs",
          fn=dense, args=fwd_args, arg_names=_NAMES,
          expected=expected_fwd, expected_tolerance=tol, notes=shape_note),
      golden_lib.Case(
          name="moe_dense_einsum_grad",
          description="gradient of sum(moe_dense_einsum_fwd * cotangent)"
          " w.r.t. x, router_w, wi_0, wi_1, wo (jax.grad)",
          fn=moe_models.make_grad(dense), args=grad_args,
          arg_names=grad_names, expected=expected_grad,
          expected_tolerance=tol, notes=shape_note),
      golden_lib.Case(
          name="moe_ragged_dot_fwd",
          description="MoE forward, argsort + lax.ragged_dot: top-k, argsort"
          " of expert ids, repeat + gather, bincount group sizes, ragged-dot"
          " x3, unpermute, weighted sum",
          fn=ragged, args=fwd_args, arg_names=_NAMES,
          expected=expected_fwd, expected_tolerance=tol, notes=shape_note),
      golden_lib.Case(
          name="moe_ragged_dot_grad",
          description="gradient of sum(moe_ragged_dot_fwd * cotangent) w.r.t."
          " all parameters (jax.grad; ragged-dot transposes into the ragged"
          " contracting and dlhs forms)",
          fn=moe_models.make_grad(ragged), args=grad_args,
          arg_names=grad_names, expected=expected_grad,
          expected_tolerance=tol, notes=shape_note),
      golden_lib.Case(
          name="moe_ep_ragged_a2a_fwd",
          description="MoE forward, expert parallel under shard_map on 8"
          " devices: group-size all-gathers, ragged-all-to-all dispatch,"
          " local permute, ragged-dot x3, ragged-all-to-all combine",
          fn=ep_real, exec_fn=ep_emul, args=fwd_args, arg_names=_NAMES,
          in_specs=moe_models.EP_IN_SPECS, mesh=mesh,
          expected=expected_fwd, expected_tolerance=tol, notes=ep_note),
      golden_lib.Case(
          name="moe_ep_ragged_a2a_grad",
          description="gradient of sum(moe_ep_ragged_a2a_fwd * cotangent)"
          " (jax.grad through shard_map; each ragged-all-to-all transposes"
          " into a ragged-all-to-all with offsets swapped)",
          fn=moe_models.make_grad(ep_real),
          exec_fn=moe_models.make_grad(ep_emul), args=grad_args,
          arg_names=grad_names, in_specs=grad_specs, mesh=mesh,
          expected=expected_grad, expected_tolerance=tol, notes=ep_note),
  ]
