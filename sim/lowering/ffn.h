// The gated expert activation and its gradient, shared by every backend.
//
//   silu (SwiGLU):      a = h0·σ(h0)·h1
//   gelu (GeGLU):       a = gelu_tanh(h0)·h1, gelu_tanh(x) = x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))
//                       (jax.nn.gelu's default approximation)
//   clipped (GPT-OSS):  g = min(h0, L); u = clamp(h1, −L, L); a = g·σ(α·g)·(u + 1)
// Gradients are the analytic derivatives; at the clip boundaries the gradient of the clipped
// input is 0 (as jnp.minimum / jnp.clip give for x > L).
#ifndef PERFSIM_SIM_LOWERING_FFN_H_
#define PERFSIM_SIM_LOWERING_FFN_H_

#include <utility>

#include "absl/strings/string_view.h"

#include "proto/model.pb.h"
#include "sim/lowering/named_builder.h"

namespace perfsim {

// Records h0 and h1 as the residuals "<role>.h0" and "<role>.h1" (named_builder.h): the
// gradient below must read these very values (known_bugs.md #17). `role` tells the routed
// experts ("experts") from the shared expert ("shared_expert").
Tensor GatedActivation(NamedBuilder& nb, const ActivationSpec& spec, const Tensor& h0,
                       const Tensor& h1, absl::string_view role = "experts");

// (dh0, dh1) from da; h0 and h1 are read as the residuals of `role`.
std::pair<Tensor, Tensor> GatedActivationGrad(NamedBuilder& nb, const ActivationSpec& spec,
                                              const Tensor& h0, const Tensor& h1,
                                              const Tensor& da,
                                              absl::string_view role = "experts");

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_FFN_H_
