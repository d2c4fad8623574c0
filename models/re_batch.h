// The data types of the relation-extraction task (SPEC §4.1–4.5, §5, §6): what a
// batch of documents looks like to a model. Built from documents by
// experiments/re_data.h; read by the models of models/re_models.h. Plain tensors
// only, so that kernels and models need nothing from experiments/.
//
// Layout rules:
//   - B documents, padded to T tokens (the longest in the batch, at most the
//     corpus's max_tokens). Token (b, i) is row b·T + i of every [B·T, …] view.
//   - Index tensors are i32; 0 is padding in every vocabulary (words, n-grams,
//     characters, POS tags, entity tags), so embedding row 0 is the padding row.
//   - Pairs are entity pairs of the allowed type pairs (NULL for the unannotated
//     ones); their mention token positions are given as CSR sets over the
//     rows of [B·T]: pair p's head positions are head_rows[head_offsets[p] ..
//     head_offsets[p+1]), the tokens of every mention of the head entity (same
//     for the tail). Every set is non-empty.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/tensor.h"

namespace mare {

// What the corpus fixes about every batch: vocabulary sizes and label sets.
struct ReVocabSizes {
  int64_t words = 0;         // word vocabulary, <pad> = 0, <unk> = 1
  int64_t ngrams = 0;        // character n-gram vocabulary (0 = none built)
  int64_t chars = 0;         // character vocabulary for the CNN's char-CNN
  int64_t pos_tags = 0;      // 0 when the data has no POS tags
  int64_t entity_tags = 0;   // BIO entity-tag vocabulary (input embedding), <pad> = 0
  int64_t ner_tags = 0;      // BIO output classes of the NER head (no padding class)
  int64_t relations = 0;     // relation classes, NULL = class 0
  int64_t max_distance = 0;  // largest |i − j| the CNN's position embeddings cover
};

struct ReBatch {
  int64_t B = 0, T = 0;
  // Tokens.
  Tensor words;        // i32 [B, T]
  Tensor mask;         // f32 [B, T]: 1 real token, 0 padding
  Tensor ngrams;       // i32 [B·T, G]: char n-gram ids of each token, 0-padded (G ≥ 1)
  Tensor chars;        // i32 [B·T, K]: character ids of each token, 0-padded (K ≥ 1)
  Tensor pos_tags;     // i32 [B, T] or undefined when the data has none
  Tensor entity_tags;  // i32 [B, T]: BIO entity-type tag ids (input feature), 0 on padding
  Tensor ner_targets;  // i32 [B·T]: gold BIO class of each token, −1 on padding
  // Entity pairs (P of them).
  int64_t P = 0;
  Tensor pair_doc;      // i32 [P]: the document b of each pair
  Tensor labels;        // i32 [P]: relation class, 0 = NULL
  Tensor head_offsets;  // i32 [P + 1]
  Tensor head_rows;     // i32 [..]: rows b·T + i of the head's mention tokens
  Tensor tail_offsets;  // i32 [P + 1]
  Tensor tail_rows;     // i32 [..]
  // For the per-pair CNN: the closest head/tail mention starts (token index in
  // the document), and the distance of the pair (for F1-by-distance).
  Tensor head_pos;            // i32 [P]
  Tensor tail_pos;            // i32 [P]
  std::vector<int> distance;  // [P] closest-mention token distance
  // Bookkeeping for metrics: which example of the split each pair is.
  std::vector<int64_t> example_index;  // [P]
  // What a model derives from this batch on the host (ReModel::stage: the bi-affine's
  // pair sets, the n-gram masks), made before the training step and moved with the
  // batch, so that the step itself builds nothing from host data (a CUDA graph of the
  // step would take these as inputs). By name; what is missing, the model derives
  // inside its forward pass.
  std::map<std::string, Tensor> staged;
};

// The batch with every tensor on `device` (itself on the CPU). Uploaded from host
// memory, its index tensors carry their ranges and (small ones) their bytes to the GPU
// (Tensor::to), so the ops' checks of ids, targets and pair sets read no device memory.
inline ReBatch to_device(ReBatch b, Device device) {
  if (device == Device::cpu) return b;
  for (Tensor* t : {&b.words, &b.mask, &b.ngrams, &b.chars, &b.pos_tags, &b.entity_tags,
                    &b.ner_targets, &b.pair_doc, &b.labels, &b.head_offsets, &b.head_rows,
                    &b.tail_offsets, &b.tail_rows, &b.head_pos, &b.tail_pos})
    if (t->defined()) *t = t->to(device);
  for (auto& [name, t] : b.staged) t = t.to(device);
  return b;
}

// A batch's pairs as they are gathered on the host, one at a time: push the rows of
// the pair's head and tail mention tokens onto head_rows and tail_rows, then
// close_pair; pairs_into writes them as the batch's pair tensors (the CSR sets of
// the layout above) on `device`. The data loader and the benchmarks' synthetic
// batches build their pairs with it.
struct RePairs {
  std::vector<int32_t> pair_doc, labels, head_offsets{0}, head_rows, tail_offsets{0}, tail_rows,
      head_pos, tail_pos;

  void close_pair(int64_t doc, int32_t label, int64_t head_start, int64_t tail_start) {
    head_offsets.push_back(static_cast<int32_t>(head_rows.size()));
    tail_offsets.push_back(static_cast<int32_t>(tail_rows.size()));
    pair_doc.push_back(static_cast<int32_t>(doc));
    labels.push_back(label);
    head_pos.push_back(static_cast<int32_t>(head_start));
    tail_pos.push_back(static_cast<int32_t>(tail_start));
  }

  void pairs_into(ReBatch& b, Device device = Device::cpu) const {
    auto ids = [device](const std::vector<int32_t>& v) {
      Tensor t = Tensor::from_indices(v, {static_cast<int64_t>(v.size())});
      return device == Device::cpu ? t : t.to(device);
    };
    b.P = static_cast<int64_t>(labels.size());
    b.pair_doc = ids(pair_doc);
    b.labels = ids(labels);
    b.head_offsets = ids(head_offsets);
    b.head_rows = ids(head_rows);
    b.tail_offsets = ids(tail_offsets);
    b.tail_rows = ids(tail_rows);
    b.head_pos = ids(head_pos);
    b.tail_pos = ids(tail_pos);
  }
};

}  // namespace mare
