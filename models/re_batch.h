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
};

}  // namespace mare
