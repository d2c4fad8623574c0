// PubTator format (BioCreative V CDR): reader and writer.
//
//   PMID|t|title
//   PMID|a|abstract
//   PMID<TAB>start<TAB>end<TAB>text<TAB>type<TAB>id[<TAB>extra]
//   PMID<TAB>CID<TAB>chemical_id<TAB>disease_id
//   <blank line between documents>
//
// Rule: offsets count code points of title + " " + abstract (end exclusive) and must
// select exactly the mention text; ids "D1|D2" make one mention of several entities,
// "-1" a mention of none; a relation may only name ids that some mention carries.
// write_pubtator(parse_pubtator(x)) == x for files in the layout the writer produces
// (one blank line after each document, mention lines before relation lines).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/data/document.h"

namespace mare::data {

struct PubtatorOptions {
  std::set<std::string> relation_types{"CID"};  // any other relation type is an error
};

std::vector<Document> parse_pubtator(std::string_view content, std::string_view file,
                                     const PubtatorOptions& options = {});
std::vector<Document> load_pubtator(const std::string& path, const PubtatorOptions& options = {});
std::string write_pubtator(const std::vector<Document>& docs);

}  // namespace mare::data
