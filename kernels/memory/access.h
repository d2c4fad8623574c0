// Memory access of the DNC (SPEC §3 steps 1–3 and 5–11) as forward/backward
// op pairs on batches of independent memories. Allocation (step 4) is in
// allocation.h, the interface-vector split in interface.h.
//
// Shapes: M memories (batch × tokens), N slots, W word size, R read heads, H
// heads of a content lookup (R for reads, 1 for the write). Memories are
// [M, N, W], usages/precedences/write weights [M, N], read weights [M, R, N],
// links [M, N, N], gates [M].
//
// Rule of the kernel layer: forward returns new tensors; backward ACCUMULATES
// (+=) into the gradient tensors it is given and skips any that is undefined.
// Memories run in chunks on the kernel threads (kernels/parallel.h), each memory
// in a fixed order: the same bytes at any thread count.
#pragma once

#include "kernels/tensor.h"

namespace mare {

inline constexpr float kContentEpsilon = 1e-6f;  // ε of the cosine norms

// 1./5./10. Content weighting, per head h and slot n:
//   cos[h,n] = k_h·M_n / (‖k_h‖ ‖M_n‖ + ε),  ‖x‖ = sqrt(Σ x² + ε)   (DeepMind DNC)
//   out[h,:] = softmax_n(β_h · cos[h,:])
// memory: [M, N, W], keys: [M, H, W], strengths: [M, H] -> out: [M, H, N]
Tensor content_weighting_forward(const Tensor& memory, const Tensor& keys, const Tensor& strengths);
// d_memory: [M, N, W], d_keys: [M, H, W], d_strengths: [M, H], d_out, out: [M, H, N]
void content_weighting_backward(Tensor& d_memory, Tensor& d_keys, Tensor& d_strengths,
                                const Tensor& d_out, const Tensor& memory, const Tensor& keys,
                                const Tensor& strengths, const Tensor& out);

// 2. Retention ψ[n] = Π_r (1 − f_r · w^r_{t−1}[r, n]).
// free_gates: [M, R], read_weights_prev: [M, R, N] -> out: [M, N]
Tensor retention_forward(const Tensor& free_gates, const Tensor& read_weights_prev);
void retention_backward(Tensor& d_free_gates, Tensor& d_read_weights_prev, const Tensor& d_out,
                        const Tensor& free_gates, const Tensor& read_weights_prev);

// 3. Usage u = (u_{t−1} + w^w_{t−1} − u_{t−1} ⊙ w^w_{t−1}) ⊙ ψ.
// No gradient flows into w^w_{t−1} (DeepMind's DNC): the backward has no slot
// for it. usage_prev, write_weights_prev, retention: [M, N] -> out: [M, N]
Tensor usage_forward(const Tensor& usage_prev, const Tensor& write_weights_prev,
                     const Tensor& retention);
void usage_backward(Tensor& d_usage_prev, Tensor& d_retention, const Tensor& d_out,
                    const Tensor& usage_prev, const Tensor& write_weights_prev,
                    const Tensor& retention);

// 6. Write weighting w^w = g^w · (g^a · a + (1 − g^a) · c^w).
// allocation, write_content: [M, N], allocation_gate, write_gate: [M] -> out: [M, N]
Tensor write_weighting_forward(const Tensor& allocation, const Tensor& write_content,
                               const Tensor& allocation_gate, const Tensor& write_gate);
void write_weighting_backward(Tensor& d_allocation, Tensor& d_write_content,
                              Tensor& d_allocation_gate, Tensor& d_write_gate, const Tensor& d_out,
                              const Tensor& allocation, const Tensor& write_content,
                              const Tensor& allocation_gate, const Tensor& write_gate);

// 7. Memory update M = M_{t−1} ⊙ (1 − w^w eᵀ) + w^w vᵀ.
// memory: [M, N, W], write_weights: [M, N], erase, write_vector: [M, W] -> out: [M, N, W]
Tensor memory_update_forward(const Tensor& memory, const Tensor& write_weights, const Tensor& erase,
                             const Tensor& write_vector);
void memory_update_backward(Tensor& d_memory, Tensor& d_write_weights, Tensor& d_erase,
                            Tensor& d_write_vector, const Tensor& d_out, const Tensor& memory,
                            const Tensor& write_weights, const Tensor& erase,
                            const Tensor& write_vector);

// 8a. Temporal links L[i,j] = (1 − w[i] − w[j]) · L_{t−1}[i,j] + w[i] · p_{t−1}[j],
// L[i,i] = 0. links_prev: [M, N, N], precedence_prev, write_weights: [M, N] -> [M, N, N]
Tensor link_update_forward(const Tensor& links_prev, const Tensor& precedence_prev,
                           const Tensor& write_weights);
void link_update_backward(Tensor& d_links_prev, Tensor& d_precedence_prev, Tensor& d_write_weights,
                          const Tensor& d_out, const Tensor& links_prev,
                          const Tensor& precedence_prev, const Tensor& write_weights);

// 8b. Precedence p = (1 − Σ_i w[i]) · p_{t−1} + w.
// precedence_prev, write_weights: [M, N] -> out: [M, N]
Tensor precedence_update_forward(const Tensor& precedence_prev, const Tensor& write_weights);
void precedence_update_backward(Tensor& d_precedence_prev, Tensor& d_write_weights,
                                const Tensor& d_out, const Tensor& precedence_prev,
                                const Tensor& write_weights);

// 9. Forward and backward weights per read head: f = L · w^r_{t−1}, b = Lᵀ · w^r_{t−1}.
struct LinkWeights {
  Tensor forward;   // [M, R, N]
  Tensor backward;  // [M, R, N]
};
// links: [M, N, N], read_weights_prev: [M, R, N]
LinkWeights link_weights_forward(const Tensor& links, const Tensor& read_weights_prev);
// d_forward, d_backward: [M, R, N] (either may be undefined: no gradient from it)
void link_weights_backward(Tensor& d_links, Tensor& d_read_weights_prev, const Tensor& d_forward,
                           const Tensor& d_backward, const Tensor& links,
                           const Tensor& read_weights_prev);

// 10. Read weights w^r = π₁ · b + π₂ · c^r + π₃ · f (π = read modes, a softmax over 3).
// read_modes: [M, R, 3], backward_weights, read_content, forward_weights: [M, R, N]
Tensor read_weights_forward(const Tensor& read_modes, const Tensor& backward_weights,
                            const Tensor& read_content, const Tensor& forward_weights);
void read_weights_backward(Tensor& d_read_modes, Tensor& d_backward_weights, Tensor& d_read_content,
                           Tensor& d_forward_weights, const Tensor& d_out, const Tensor& read_modes,
                           const Tensor& backward_weights, const Tensor& read_content,
                           const Tensor& forward_weights);

// 11. Read vectors r_h = Mᵀ w^r_h. memory: [M, N, W], read_weights: [M, R, N] -> [M, R, W]
Tensor read_vectors_forward(const Tensor& memory, const Tensor& read_weights);
void read_vectors_backward(Tensor& d_memory, Tensor& d_read_weights, const Tensor& d_out,
                           const Tensor& memory, const Tensor& read_weights);

}  // namespace mare
