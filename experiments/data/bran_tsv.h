// BRAN's processed TSV (its CDR and CTD files): one line per entity pair, 13 columns
//
//   e1_id e1_type e1_mention e1_starts e1_ends e2_id e2_type e2_mention e2_starts e2_ends
//   doc_id label tokenized_text
//
// separated by tabs; starts/ends are ':'-separated token offsets into the
// space-separated tokenized_text, one per mention, ends exclusive; label is a relation
// name or "Null". Rule: the lines of one document share one text, an entity id keeps
// the same type and mentions on every line, and the label is a known class. Documents
// keep their listed pairs (Document::pairs, "Null" included, in file order); only
// non-Null labels become relations. Loader → writer gives identical bytes when the
// lines of each document are contiguous (the writer's layout).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/data/document.h"

namespace mare::data {

// The 14 relation classes of the CTD data (thesis Table 4.9) under BRAN's names (its
// data/ctd/relation_map.txt), in the table's order: chem_disease_marker/mechanism,
// chem_disease_therapeutic, gene_disease_marker/mechanism, gene_disease_therapeutic and
// ten chem_gene_* classes. BRAN's CDR files use "CID"; negatives are "Null".
const std::vector<std::string>& ctd_relation_classes();

struct BranOptions {
  // Accepted labels besides "Null"; default: the 14 CTD classes and CDR's "CID".
  std::set<std::string> labels;
  BranOptions();
};

std::vector<Document> parse_bran_tsv(std::string_view content, std::string_view file,
                                     const BranOptions& options = {});
std::vector<Document> load_bran_tsv(const std::string& path, const BranOptions& options = {});
std::string write_bran_tsv(const std::vector<Document>& docs);

}  // namespace mare::data
