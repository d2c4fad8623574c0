// The CUDA implementations of every op, with exactly the signatures of the CPU
// ops (minus default arguments). The CPU entry points (kernels/ops/*.cpp,
// kernels/memory/*.cpp) validate their arguments and forward here when the
// tensors are on the GPU; nothing else calls these directly. One .cu file per
// family under kernels/cuda/.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"
#include "kernels/ops/grpu.h"
#include "kernels/ops/recurrent.h"

namespace mare::cuda {

// linalg.cu
Tensor matmul_forward(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b);
void matmul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                     const Tensor& b, bool trans_a, bool trans_b);
Tensor batched_matmul_forward(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b);
void batched_matmul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                             const Tensor& b, bool trans_a, bool trans_b);

// elementwise.cu (dropout's mask comes from the device Philox of random.cu)
Tensor bias_add_forward(const Tensor& x, const Tensor& bias);
void bias_add_backward(Tensor& d_x, Tensor& d_bias, const Tensor& d_out);
Tensor add_forward(const Tensor& a, const Tensor& b);
void add_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out);
Tensor mul_forward(const Tensor& a, const Tensor& b);
void mul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a, const Tensor& b);
Tensor scale_forward(const Tensor& x, float s);
void scale_backward(Tensor& d_x, const Tensor& d_out, float s);
Tensor relu_forward(const Tensor& x);
void relu_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x);
Tensor relu6_forward(const Tensor& x);
void relu6_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x);
Tensor sigmoid_forward(const Tensor& x);
void sigmoid_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out);
Tensor tanh_forward(const Tensor& x);
void tanh_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out);
Tensor oneplus_forward(const Tensor& x);
void oneplus_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x);
Tensor hard_sigmoid_forward(const Tensor& x);
void hard_sigmoid_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x);
DropoutResult dropout_forward(const Tensor& x, float p, uint64_t seed, uint32_t stream,
                              uint64_t offset);
void dropout_backward(Tensor& d_x, const Tensor& d_out, const Tensor& mask);

// softmax.cu
Tensor softmax_forward(const Tensor& x, const Tensor& mask);
void softmax_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out);
Tensor log_softmax_forward(const Tensor& x, const Tensor& mask);
void log_softmax_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out, const Tensor& mask);
Tensor logsumexp_sets_forward(const Tensor& x, const Tensor& offsets, const Tensor& rows);
void logsumexp_sets_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x, const Tensor& out,
                             const Tensor& offsets, const Tensor& rows);

// norm.cu
NormResult layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps);
void layer_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd);
NormResult batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              Tensor& running_mean, Tensor& running_var, bool training,
                              float momentum, float eps, const Tensor& row_mask);
void batch_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, bool training, const Tensor& row_mask);

// halting.cu (adaptive computation time, SPEC §4.4)
HaltingResult halting_forward(const Tensor& h, const Tensor& mask, int t_max, float eps);
void halting_backward(Tensor& d_h, const Tensor& d_p, float d_ponder, const Tensor& h,
                      const HaltingResult& fwd, const Tensor& mask);

// conv.cu
Tensor conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias);
void conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out, const Tensor& x,
                     const Tensor& w);
Tensor depthwise_conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias);
void depthwise_conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out,
                               const Tensor& x, const Tensor& w);

// indexing.cu
MaxResult max_forward(const Tensor& x, int axis);
void max_backward(Tensor& d_x, const Tensor& d_out, const Tensor& argmax, int axis);
Tensor grid_ids(int64_t rows, int64_t cols, bool by_row);
Tensor embedding_forward(const Tensor& table, const Tensor& ids);
void embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& ids);
Tensor concat_forward(const std::vector<Tensor>& xs, int axis);
void concat_backward(std::vector<Tensor>& d_xs, const Tensor& d_out, int axis);
std::vector<Tensor> split_forward(const Tensor& x, const std::vector<int64_t>& sizes, int axis);
void split_backward(Tensor& d_x, const std::vector<Tensor>& d_outs, int axis);

// loss.cu
CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                         const Tensor& weights);
void cross_entropy_backward(Tensor& d_logits, float d_loss, const Tensor& probs,
                            const Tensor& targets, const Tensor& weights);
Tensor mse_forward(const Tensor& pred, const Tensor& target);
void mse_backward(Tensor& d_pred, Tensor& d_target, float d_loss, const Tensor& pred,
                  const Tensor& target);

// attention.cu
AttentionResult attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads,
                                  const Tensor& key_mask);
void attention_backward(Tensor& d_q, Tensor& d_k, Tensor& d_v, const Tensor& d_out, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& probs, int heads);

// recurrent.cu (GRPU, GRU, LSTM cells)
GrpuCellResult grpu_cell_forward(const Tensor& x_c, const Tensor& x_vm, const Tensor& h_prev,
                                 const Tensor& w_gates, const Tensor& b_gates, const Tensor& w_cand,
                                 const Tensor& b_cand, const Tensor& mask, const GrpuConfig& cfg);
void grpu_cell_backward(Tensor& d_x_c, Tensor& d_h_prev, Tensor& d_w_gates, Tensor& d_b_gates,
                        Tensor& d_w_cand, Tensor& d_b_cand, const Tensor& d_h, const Tensor& x_c,
                        const Tensor& h_prev, const Tensor& w_gates, const Tensor& w_cand,
                        const Tensor& mask, const GrpuCellResult& fwd, const GrpuConfig& cfg);
GrpuCellResult gru_cell_forward(const Tensor& x, const Tensor& h_prev, const Tensor& w_gates,
                                const Tensor& b_gates, const Tensor& w_cand, const Tensor& b_cand,
                                const Tensor& mask);
void gru_cell_backward(Tensor& d_x, Tensor& d_h_prev, Tensor& d_w_gates, Tensor& d_b_gates,
                       Tensor& d_w_cand, Tensor& d_b_cand, const Tensor& d_h, const Tensor& x,
                       const Tensor& h_prev, const Tensor& w_gates, const Tensor& w_cand,
                       const Tensor& mask, const GrpuCellResult& fwd);
LstmCellResult lstm_cell_forward(const Tensor& x, const Tensor& h_prev, const Tensor& c_prev,
                                 const Tensor& w, const Tensor& b, const Tensor& mask);
void lstm_cell_backward(Tensor& d_x, Tensor& d_h_prev, Tensor& d_c_prev, Tensor& d_w, Tensor& d_b,
                        const Tensor& d_h, const Tensor& d_c, const Tensor& x, const Tensor& h_prev,
                        const Tensor& c_prev, const Tensor& w, const Tensor& mask,
                        const LstmCellResult& fwd);

// memory.cu (interface split and memory access, SPEC §3)
InterfaceParts interface_split_forward(const Tensor& xi, int64_t read_heads, int64_t word);
void interface_split_backward(Tensor& d_xi, const InterfaceParts& d_parts, const Tensor& xi,
                              const InterfaceParts& parts, int64_t read_heads, int64_t word);
Tensor content_weighting_forward(const Tensor& memory, const Tensor& keys, const Tensor& strengths);
void content_weighting_backward(Tensor& d_memory, Tensor& d_keys, Tensor& d_strengths,
                                const Tensor& d_out, const Tensor& memory, const Tensor& keys,
                                const Tensor& strengths, const Tensor& out);
Tensor retention_forward(const Tensor& free_gates, const Tensor& read_weights_prev);
void retention_backward(Tensor& d_free_gates, Tensor& d_read_weights_prev, const Tensor& d_out,
                        const Tensor& free_gates, const Tensor& read_weights_prev);
Tensor usage_forward(const Tensor& usage_prev, const Tensor& write_weights_prev,
                     const Tensor& retention);
void usage_backward(Tensor& d_usage_prev, Tensor& d_retention, const Tensor& d_out,
                    const Tensor& usage_prev, const Tensor& write_weights_prev,
                    const Tensor& retention);
Tensor write_weighting_forward(const Tensor& allocation, const Tensor& write_content,
                               const Tensor& allocation_gate, const Tensor& write_gate);
void write_weighting_backward(Tensor& d_allocation, Tensor& d_write_content,
                              Tensor& d_allocation_gate, Tensor& d_write_gate, const Tensor& d_out,
                              const Tensor& allocation, const Tensor& write_content,
                              const Tensor& allocation_gate, const Tensor& write_gate);
Tensor memory_update_forward(const Tensor& memory, const Tensor& write_weights, const Tensor& erase,
                             const Tensor& write_vector);
void memory_update_backward(Tensor& d_memory, Tensor& d_write_weights, Tensor& d_erase,
                            Tensor& d_write_vector, const Tensor& d_out, const Tensor& memory,
                            const Tensor& write_weights, const Tensor& erase,
                            const Tensor& write_vector);
Tensor link_update_forward(const Tensor& links_prev, const Tensor& precedence_prev,
                           const Tensor& write_weights);
void link_update_backward(Tensor& d_links_prev, Tensor& d_precedence_prev, Tensor& d_write_weights,
                          const Tensor& d_out, const Tensor& links_prev,
                          const Tensor& precedence_prev, const Tensor& write_weights);
Tensor precedence_update_forward(const Tensor& precedence_prev, const Tensor& write_weights);
void precedence_update_backward(Tensor& d_precedence_prev, Tensor& d_write_weights,
                                const Tensor& d_out, const Tensor& precedence_prev,
                                const Tensor& write_weights);
LinkWeights link_weights_forward(const Tensor& links, const Tensor& read_weights_prev);
void link_weights_backward(Tensor& d_links, Tensor& d_read_weights_prev, const Tensor& d_forward,
                           const Tensor& d_backward, const Tensor& links,
                           const Tensor& read_weights_prev);
Tensor read_weights_forward(const Tensor& read_modes, const Tensor& backward_weights,
                            const Tensor& read_content, const Tensor& forward_weights);
void read_weights_backward(Tensor& d_read_modes, Tensor& d_backward_weights, Tensor& d_read_content,
                           Tensor& d_forward_weights, const Tensor& d_out, const Tensor& read_modes,
                           const Tensor& backward_weights, const Tensor& read_content,
                           const Tensor& forward_weights);
Tensor read_vectors_forward(const Tensor& memory, const Tensor& read_weights);
void read_vectors_backward(Tensor& d_memory, Tensor& d_read_weights, const Tensor& d_out,
                           const Tensor& memory, const Tensor& read_weights);

// allocation.cu (every variant of kernels/memory/allocation.h, same names)
void allocation_forward_into(Tensor& out, const Tensor& usage, AllocationVariant variant);
void allocation_backward(Tensor& d_usage, const Tensor& d_out, const Tensor& usage,
                         AllocationVariant variant);

// random.cu: the device Philox fills (kernels/random.h layout, same bits as the host)
void fill_uniform(Tensor& t, uint64_t seed, uint32_t stream, float lo, float hi, uint64_t offset);
void fill_normal(Tensor& t, uint64_t seed, uint32_t stream, float mean, float stddev,
                 uint64_t offset);
void fill_bernoulli(Tensor& t, uint64_t seed, uint32_t stream, float p, uint64_t offset);

// optim.cu: the optimiser kernels (kernels/ops/optim.h; not differentiable ops)
void l2_grad_add(Tensor& grad, const Tensor& w, float lambda);
void scale_inplace(Tensor& x, float s);
double sum_squares(std::span<const Tensor> xs);
Tensor adam_step(std::span<Tensor> ws, std::span<Tensor> gs, std::span<Tensor> ms,
                 std::span<Tensor> vs, const AdamStepConfig& config);
void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, float lr, float beta1,
                 float beta2, float eps, int64_t step);

}  // namespace mare::cuda
