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
// "-1" a mention of none; inside a composite a "-1" part names no entity and a
// repeated id counts once (the CDR release has D002544|-1 and D020258|D020258); the
// seventh column (each part's own text, on composite mentions) is kept as written. A
// relation may only name ids that some mention carries, and a CID relation runs from a
// Chemical to a Disease.
// write_pubtator(parse_pubtator(x)) == x for files in the layout the writer produces
// (one blank line after each document, mention lines before relation lines).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/data/document.h"

namespace mare::data {

struct PubtatorOptions {
  std::set<std::string> relation_types{"CID"};  // any other relation type is an error
  // The entity types a relation type links, head then tail (a relation of a type not
  // listed here may link any types).
  std::map<std::string, std::pair<std::string, std::string>> argument_types{
      {"CID", {"Chemical", "Disease"}}};
};

std::vector<Document> parse_pubtator(std::string_view content, std::string_view file,
                                     const PubtatorOptions& options = {});
std::vector<Document> load_pubtator(const std::string& path, const PubtatorOptions& options = {});
std::string write_pubtator(const std::vector<Document>& docs);

}  // namespace mare::data
