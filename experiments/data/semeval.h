// SemEval 2018 Task 7 format: XML abstracts with inline entities, and relation lines.
//
//   <doc><text id="H01-1001"><title>... <entity id="H01-1001.1">term</entity> ...</title>
//        <abstract>...</abstract></text>...</doc>
//   USAGE(H01-1001.1,H01-1001.2)            relation from the first to the second id
//   USAGE(H01-1001.1,H01-1001.2,REVERSE)    the relation goes from the second to the first
//
// Rule: Document::text is title + "\n" + abstract (segments "title" and "abstract"; a
// <text> without an abstract, as two of 1.2.text.xml, has an empty one), every <entity>
// is one entity of type "Entity" with one mention, nested entities included (an entity
// inside another is an argument in its own right: 1.2.text.xml has 214), the text of a
// <SectionTitle> inside an abstract is text of the abstract, an empty <abstract> between
// two <text> elements (eight in 1.2.text.xml) adds nothing, entity ids are unique in the
// file, and a relation names two entities of one document with a known type.
// The writer produces a canonical layout (declaration, one <text> per document with
// <title> and <abstract> on their own lines, nested entities nested); loader → writer
// gives identical bytes for files in that layout, and the same documents for any other
// layout.
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
  // The file lists pairs without a type, '(E1,E2[,REVERSE])': the test pairs to classify
  // (1.1.test.relations.txt). Their relations get an empty type.
  bool unlabelled = false;
};

// One line of a relation, pair, key or prediction file: TYPE(E1,E2[,REVERSE]) or, for
// the unlabelled test pairs, (E1,E2[,REVERSE]); line and columns for messages.
struct SemevalPairLine {
  std::string label;  // empty on an unlabelled line
  std::string e1, e2;
  bool reverse = false;
  std::size_t line = 0, column_e1 = 0, column_e2 = 0;
};
// What a pair file's lines carry before the '(': a type from `labels`, or nothing.
enum class LabelRule { required, none };
// Blank lines are skipped; any other malformed line is a DataError with its position.
std::vector<SemevalPairLine> parse_semeval_pair_lines(std::string_view content,
                                                      std::string_view file, LabelRule rule,
                                                      const std::set<std::string>& labels);

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
