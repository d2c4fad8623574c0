// SemEval 2018 Task 7 format: XML abstracts with inline entities, and relation lines.
//
//   <doc><text id="H01-1001"><title>... <entity id="H01-1001.1">term</entity> ...</title>
//        <abstract>...</abstract></text>...</doc>
//   USAGE(H01-1001.1,H01-1001.2)            relation from the first to the second id
//   USAGE(H01-1001.1,H01-1001.2,REVERSE)    the relation goes from the second to the first
//
// Rule: Document::text is title + "\n" + abstract (segments "title" and "abstract"),
// every <entity> is one entity of type "Entity" with one mention, entity ids are unique
// in the file, and a relation names two entities of one document with a known type.
// The writer produces a canonical layout (declaration, one <text> per document with
// <title> and <abstract> on their own lines); loader → writer gives identical bytes for
// files in that layout, and the same documents for any other layout.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/data/document.h"

namespace mare::data {

struct SemevalOptions {
  std::set<std::string> relation_types{"USAGE",      "RESULT", "MODEL-FEATURE",
                                       "PART_WHOLE", "TOPIC",  "COMPARE"};
};

// Documents of an XML file, without relations.
std::vector<Document> parse_semeval_xml(std::string_view content, std::string_view file);
// Adds the relations of a relation file to documents parsed from the XML.
void parse_semeval_relations(std::vector<Document>& docs, std::string_view content,
                             std::string_view file, const SemevalOptions& options = {});

// Loads the XML and, when relations_path is not empty, its relations.
std::vector<Document> load_semeval(const std::string& xml_path, const std::string& relations_path,
                                   const SemevalOptions& options = {});
// "X.text.xml" or "X.xml" -> "X.relations.txt" (the naming of the task's files).
std::string semeval_relations_path(const std::string& xml_path);

std::string write_semeval_xml(const std::vector<Document>& docs);
std::string write_semeval_relations(const std::vector<Document>& docs);

}  // namespace mare::data
