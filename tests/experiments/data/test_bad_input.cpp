// Bad input: every loader rejects malformed files with a message that names the file,
// the line (and column where it helps) and what was expected.
//
// Rule: one table row per case; each row asserts the exact location prefix and a
// phrase of the message, so a loader that fails for the wrong reason fails the test.
#include <gtest/gtest.h>

#include <functional>

#include "experiments/data/bran_tsv.h"
#include "experiments/data/error.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/semeval.h"
#include "experiments/data/word2vec.h"

namespace mare::data {
namespace {

enum class Fmt { kPubtator, kSemevalXml, kSemevalRelations, kBran, kW2vText, kW2vBinary };

struct BadCase {
  const char* name;
  Fmt format;
  std::string content;
  std::string location;  // expected message prefix, e.g. "f.txt:3:5: "
  std::string phrase;    // expected somewhere in the message
};

const std::string kXml =
    "<doc><text id=\"D\"><title><entity id=\"D.1\">a</entity> and <entity "
    "id=\"D.2\">b</entity></title><abstract>c</abstract></text></doc>\n";

void load(Fmt f, const std::string& content) {
  switch (f) {
    case Fmt::kPubtator:
      parse_pubtator(content, "f.pubtator");
      break;
    case Fmt::kSemevalXml:
      parse_semeval_xml(content, "f.xml");
      break;
    case Fmt::kSemevalRelations: {
      auto docs = parse_semeval_xml(kXml, "f.xml");
      parse_semeval_relations(docs, content, "f.relations.txt");
      break;
    }
    case Fmt::kBran:
      parse_bran_tsv(content, "f.tsv");
      break;
    case Fmt::kW2vText:
      parse_word2vec_text(content, "f.txt");
      break;
    case Fmt::kW2vBinary:
      parse_word2vec_binary(content, "f.bin");
      break;
  }
}

std::string floats(std::initializer_list<float> v) {
  std::string s;
  for (float x : v) s.append(reinterpret_cast<const char*>(&x), 4);
  return s;
}

const std::string kTitle = "1|t|Aspirin and pain\n1|a|Aspirin helps.\n";
// 13-column BRAN line builder
std::string bran(const std::string& label = "Null", const std::string& s1 = "0",
                 const std::string& e1 = "1", const std::string& text = "aspirin and pain") {
  return "C1\tChemical\taspirin\t" + s1 + "\t" + e1 + "\tD1\tDisease\tpain\t2\t3\tdoc\t" + label +
         "\t" + text + "\n";
}

std::vector<BadCase> cases() {
  return {
      // ---------------- PubTator
      {"pubtator_empty", Fmt::kPubtator, "", "f.pubtator: ", "empty file"},
      {"pubtator_only_blank_lines", Fmt::kPubtator, "\n\n",
       "f.pubtator: ", "at least one document"},
      {"pubtator_no_title", Fmt::kPubtator, "1|a|x\n\n",
       "f.pubtator:1:1: ", "expected a title line"},
      {"pubtator_truncated_after_title", Fmt::kPubtator, "1|t|Aspirin\n",
       "f.pubtator:2:1: ", "abstract line"},
      {"pubtator_abstract_other_pmid", Fmt::kPubtator, "1|t|A\n2|a|B\n\n",
       "f.pubtator:2:1: ", "expected PMID '1'"},
      {"pubtator_offset_past_text", Fmt::kPubtator, kTitle + "1\t30\t40\tpain\tDisease\tD1\n\n",
       "f.pubtator:3:", "past the end of the text"},
      {"pubtator_text_disagrees", Fmt::kPubtator, kTitle + "1\t0\t7\taspirin\tChemical\tC1\n\n",
       "f.pubtator:3:", "disagrees with the text"},
      {"pubtator_end_before_start", Fmt::kPubtator, kTitle + "1\t7\t3\tx\tChemical\tC1\n\n",
       "f.pubtator:3:", "expected end > start"},
      {"pubtator_offset_not_a_number", Fmt::kPubtator,
       kTitle + "1\tx\t7\tAspirin\tChemical\tC1\n\n",
       "f.pubtator:3:3: ", "expected a start offset"},
      {"pubtator_negative_offset", Fmt::kPubtator, kTitle + "1\t-1\t7\tAspirin\tChemical\tC1\n\n",
       "f.pubtator:3:3: ", "expected a start offset"},
      {"pubtator_wrong_column_count", Fmt::kPubtator, kTitle + "1\t0\t7\tAspirin\tChemical\n\n",
       "f.pubtator:3:1: ", "expected 6 or 7 tab-separated columns"},
      {"pubtator_truncated_mention_line", Fmt::kPubtator, kTitle + "1\t0\t7\tAspi\n\n",
       "f.pubtator:3:1: ", "for a mention line"},
      {"pubtator_unknown_relation", Fmt::kPubtator,
       kTitle +
           "1\t0\t7\tAspirin\tChemical\tC1\n1\t12\t16\tpain\tDisease\tD1\n1\tTREATS\tC1\tD1\n\n",
       "f.pubtator:5:3: ", "unknown relation type 'TREATS'"},
      {"pubtator_relation_id_without_mention", Fmt::kPubtator,
       kTitle + "1\t0\t7\tAspirin\tChemical\tC1\n1\tCID\tC1\tD9\n\n",
       "f.pubtator:4:", "'D9' appears in a relation but in no mention"},
      {"pubtator_mention_of_other_document", Fmt::kPubtator,
       kTitle + "2\t0\t7\tAspirin\tChemical\tC1\n\n", "f.pubtator:3:1: ", "expected PMID '1'"},
      {"pubtator_bad_composite_id", Fmt::kPubtator, kTitle + "1\t0\t7\tAspirin\tChemical\tC1|\n\n",
       "f.pubtator:3:", "entity ids separated by '|'"},
      {"pubtator_entity_with_two_types", Fmt::kPubtator,
       kTitle + "1\t0\t7\tAspirin\tChemical\tC1\n1\t12\t16\tpain\tDisease\tC1\n\n",
       "f.pubtator:4:", "has type 'Chemical' on an earlier line"},
      {"pubtator_non_utf8", Fmt::kPubtator, "1|t|Asp\xFFrin\n1|a|x\n\n",
       "f.pubtator:1:8: ", "invalid byte 0xFF"},
      {"pubtator_crlf", Fmt::kPubtator, "1|t|A\r\n1|a|B\r\n\r\n",
       "f.pubtator:1:6: ", "carriage return"},
      {"pubtator_missing_final_newline", Fmt::kPubtator, kTitle + "1\t0\t7\tAspirin\tChemical\tC1",
       "f.pubtator:3:", "truncated file"},
      {"pubtator_duplicate_document", Fmt::kPubtator, kTitle + "\n" + kTitle + "\n",
       "f.pubtator:4:1: ", "appears twice"},
      {"pubtator_missing_blank_line", Fmt::kPubtator, kTitle + "2|t|B\n2|a|C\n\n",
       "f.pubtator:3:1: ", "blank line before the next document"},
      {"pubtator_blank_mention", Fmt::kPubtator, "1|t|A B\n1|a|C\n1\t1\t2\t \tChemical\tC1\n\n",
       "f.pubtator:3:", "non-space text"},
      // Invisible characters and gold that contradicts itself.
      {"pubtator_nul_in_text", Fmt::kPubtator, std::string("1|t|A\0B\n1|a|C\n\n", 15),
       "f.pubtator:1:6: ", "invisible control character U+0000 (NUL)"},
      {"pubtator_repeated_mention_line", Fmt::kPubtator,
       kTitle + "1\t0\t7\tAspirin\tChemical\tC1\n1\t0\t7\tAspirin\tChemical\tC1\n\n",
       "f.pubtator:4:1: ", "listed twice (first at line 3)"},
      {"pubtator_relation_to_itself", Fmt::kPubtator,
       kTitle + "1\t0\t7\tAspirin\tChemical\tC1\n1\tCID\tC1\tC1\n\n",
       "f.pubtator:4:", "two different entities, found 'C1' to itself"},
      {"pubtator_cid_disease_first", Fmt::kPubtator,
       kTitle + "1\t0\t7\tAspirin\tChemical\tC1\n1\t12\t16\tpain\tDisease\tD1\n1\tCID\tD1\tC1\n\n",
       "f.pubtator:5:", "from a Chemical to a Disease"},
      // ---------------- SemEval XML
      {"xml_empty", Fmt::kSemevalXml, "", "f.xml:1:1: ", "empty file"},
      {"xml_unclosed_element", Fmt::kSemevalXml, "<doc><text id=\"a\"><title>x</title>",
       "f.xml:1:", "expected the closing tag"},
      {"xml_mismatched_tag", Fmt::kSemevalXml,
       "<doc>\n<text id=\"a\"><title>x</abstract></text></doc>",
       "f.xml:2:", "start and end tags differ"},
      {"xml_unknown_entity_reference", Fmt::kSemevalXml,
       "<doc><text id=\"a\"><title>&nbsp;</title><abstract/></text></doc>",
       "f.xml:1:", "unknown entity reference '&nbsp;'"},
      {"xml_attribute_without_quotes", Fmt::kSemevalXml, "<doc><text id=a></text></doc>",
       "f.xml:1:", "quoted value for an attribute"},
      {"xml_wrong_root", Fmt::kSemevalXml, "<corpus/>", "f.xml:1:1: ", "root element <doc>"},
      {"xml_text_without_id", Fmt::kSemevalXml, "<doc><text><title/><abstract/></text></doc>",
       "f.xml:1:6: ", "id attribute on <text>"},
      {"xml_missing_title", Fmt::kSemevalXml,
       "<doc><text id=\"a\"><abstract>x</abstract></text></doc>",
       "f.xml:1:19: ", "expected <title>, found <abstract>"},
      {"xml_unknown_element_in_abstract", Fmt::kSemevalXml,
       "<doc><text id=\"a\"><title>x</title><abstract>a <b>bold</b></abstract></text></doc>",
       "f.xml:1:47: ", "expected text, <entity> or <SectionTitle> inside <abstract>, found <b>"},
      {"xml_abstract_with_text_outside_text", Fmt::kSemevalXml,
       "<doc><text id=\"a\"><title>x</title></text><abstract>stray</abstract></doc>",
       "f.xml:1:42: ", "an <abstract> with content outside <text>"},
      {"xml_second_title", Fmt::kSemevalXml,
       "<doc><text id=\"a\"><title>x</title><title>y</title></text></doc>",
       "f.xml:1:35: ", "expected <abstract> or </text>, found <title>"},
      {"xml_duplicate_entity_id", Fmt::kSemevalXml,
       "<doc><text id=\"a\"><title><entity id=\"a.1\">x</entity> <entity id=\"a.1\">y</entity>"
       "</title><abstract/></text></doc>",
       "f.xml:1:", "entity id 'a.1' already used"},
      {"xml_entity_id_with_comma", Fmt::kSemevalXml,
       "<doc><text id=\"a\"><title><entity id=\"a,1\">x</entity></title><abstract/></text></doc>",
       "f.xml:1:", "without ',', '(', ')'"},
      {"xml_trailing_garbage", Fmt::kSemevalXml, kXml + "<doc/>",
       "f.xml:2:1: ", "end of the file after the root element"},
      {"xml_non_utf8", Fmt::kSemevalXml, "<doc>\n<text id=\"\xC3\x28\"/></doc>",
       "f.xml:2:11: ", "invalid byte 0xC3"},
      {"xml_doctype", Fmt::kSemevalXml, "<!DOCTYPE doc><doc/>", "f.xml:1:1: ", "DOCTYPE"},
      // ---------------- SemEval relations
      {"relations_empty", Fmt::kSemevalRelations, "", "f.relations.txt: ", "empty file"},
      {"relations_unknown_type", Fmt::kSemevalRelations, "USES(D.1,D.2)\n",
       "f.relations.txt:1:1: ", "unknown relation type 'USES'"},
      {"relations_unknown_entity", Fmt::kSemevalRelations, "USAGE(D.1,D.9)\n",
       "f.relations.txt:1:11: ", "'D.9' appears in a relation but in no <entity>"},
      {"relations_bad_flag", Fmt::kSemevalRelations, "USAGE(D.1,D.2,BACKWARD)\n",
       "f.relations.txt:1:7: ", "optional REVERSE"},
      {"relations_no_parenthesis", Fmt::kSemevalRelations, "USAGE D.1 D.2\n",
       "f.relations.txt:1:1: ", "expected a relation line"},
      {"relations_duplicate", Fmt::kSemevalRelations, "USAGE(D.1,D.2)\nTOPIC(D.2,D.1)\n",
       "f.relations.txt:2:1: ", "already listed"},
      // A file cut short is said so first, not by whatever its cut last line breaks.
      {"relations_truncated", Fmt::kSemevalRelations, "USAGE(D.1,D.2)\nTOPIC(D.1",
       "f.relations.txt:2:10: ", "truncated file?"},
      // ---------------- BRAN TSV
      {"bran_empty", Fmt::kBran, "", "f.tsv: ", "empty file"},
      {"bran_wrong_column_count", Fmt::kBran, "a\tb\tc\n",
       "f.tsv:1:1: ", "expected 13 tab-separated columns"},
      {"bran_offset_past_text", Fmt::kBran, bran("Null", "0", "9"),
       "f.tsv:1:", "a token end after its start"},
      {"bran_unequal_starts_ends", Fmt::kBran, bran("Null", "0:1", "1"),
       "f.tsv:1:", "as many ends as starts"},
      {"bran_unknown_label", Fmt::kBran, bran("treats"),
       "f.tsv:1:", "unknown relation label 'treats'"},
      {"bran_empty_token", Fmt::kBran, bran("Null", "0", "1", "aspirin  and pain"),
       "f.tsv:1:", "single spaces"},
      {"bran_entity_changes_mentions", Fmt::kBran, bran() + bran("Null", "1", "2"),
       "f.tsv:2:1: ", "different type or different mentions than on line 1"},
      {"bran_non_utf8", Fmt::kBran, bran("Null", "0", "1", "aspirin \x80nd pain"),
       "f.tsv:1:", "invalid byte 0x80"},
      {"bran_blank_line", Fmt::kBran, bran() + "\n", "f.tsv:2:1: ", "found a blank line"},
      {"bran_byte_order_mark", Fmt::kBran, "\xEF\xBB\xBF" + bran(),
       "f.tsv:1:1: ", "invisible character U+FEFF (a byte-order mark"},
      {"bran_nul_in_id", Fmt::kBran, std::string("C\0", 2) + bran().substr(1),
       "f.tsv:1:2: ", "U+0000 (NUL)"},
      {"bran_mention_text_not_at_its_offsets", Fmt::kBran,
       "C1\tChemical\tpain\t0\t1\tD1\tDisease\tpain\t2\t3\tdoc\tNull\taspirin and pain\n",
       "f.tsv:1:13: ", "is the text of none of its spans"},
      {"bran_cut_short_in_its_text", Fmt::kBran, bran() + bran().substr(0, bran().size() - 6),
       "f.tsv:2:", "truncated file?"},
      {"pubtator_cut_short_in_a_mention", Fmt::kPubtator, kTitle + "1\t0\t7\tAspi",
       "f.pubtator:3:", "truncated file?"},
      {"bran_null_and_a_relation", Fmt::kBran, bran() + bran("CID"),
       "f.tsv:2:", "'Null' at line 1 and 'CID' here"},
      {"bran_label_twice", Fmt::kBran, bran("CID") + bran("CID"),
       "f.tsv:2:1: ", "listed twice (first at line 1)"},
      // ---------------- word2vec text
      {"w2v_text_empty", Fmt::kW2vText, "", "f.txt: ", "empty file"},
      {"w2v_text_bad_header", Fmt::kW2vText, "3\nthe 1 2\n", "f.txt:1:1: ", "header 'V D'"},
      {"w2v_text_fewer_rows_than_header", Fmt::kW2vText, "3 2\nthe 1 2\ncat 3 4\n",
       "f.txt:4:1: ", "the header says 3 rows but the file ends after 2"},
      {"w2v_text_more_rows_than_header", Fmt::kW2vText, "1 2\nthe 1 2\ncat 3 4\n",
       "f.txt:3:1: ", "more lines follow"},
      {"w2v_text_wrong_dimension", Fmt::kW2vText, "1 3\nthe 1 2\n",
       "f.txt:2:1: ", "expected 3 values after the word"},
      {"w2v_text_not_a_number", Fmt::kW2vText, "1 2\nthe 1 x2\n",
       "f.txt:2:7: ", "expected a finite number, found 'x2'"},
      {"w2v_text_nan", Fmt::kW2vText, "1 2\nthe 1 nan\n", "f.txt:2:7: ", "finite number"},
      {"w2v_text_duplicate_word", Fmt::kW2vText, "2 1\nthe 1\nthe 2\n",
       "f.txt:3:1: ", "appears twice"},
      {"w2v_text_non_utf8", Fmt::kW2vText, "1 1\nth\xE9 1\n", "f.txt:2:3: ", "invalid byte 0xE9"},
      {"w2v_text_zero_dimension", Fmt::kW2vText, "1 0\nthe\n", "f.txt:1:3: ", "the dimension D"},
      {"w2v_text_unterminated_row", Fmt::kW2vText, "1 1\nthe 1", "f.txt:2:", "truncated file"},
      // ---------------- word2vec binary
      {"w2v_bin_empty", Fmt::kW2vBinary, "", "f.bin: ", "empty file"},
      {"w2v_bin_header_larger_than_file", Fmt::kW2vBinary, "1000 300\nthe " + floats({1, 2}),
       "f.bin: ", "more than the"},
      {"w2v_bin_truncated_row", Fmt::kW2vBinary,
       "2 2\nthe " + floats({1, 2}) + "\ncat " + floats({1}) + std::string(2, 'x'),
       "f.bin: ", "row 2"},
      {"w2v_bin_trailing_bytes", Fmt::kW2vBinary, "1 1\nthe " + floats({1}) + "\nextra",
       "f.bin: ", "more bytes follow"},
      {"w2v_bin_nan", Fmt::kW2vBinary,
       "1 1\nthe " + floats({std::numeric_limits<float>::quiet_NaN()}),
       "f.bin: ", "not a finite number"},
      {"w2v_bin_non_utf8_word", Fmt::kW2vBinary, "1 1\n\xFF " + floats({1}),
       "f.bin: ", "invalid byte 0xFF"},
  };
}

// Readable parameter in test listings and failure messages (ctest shows it).
void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, IsRejectedWithLocationAndExpectation) {
  const BadCase& c = GetParam();
  try {
    load(c.format, c.content);
    FAIL() << c.name << ": loaded without an error";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(c.location, 0), 0u) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.phrase), std::string::npos) << c.name << ": " << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Loaders, BadInput, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(BadInputSuite, HasAtLeastThirtyCases) {
  EXPECT_GE(cases().size(), 30u);
}

TEST(BadInputSuite, MissingFileNamesThePath) {
  try {
    load_pubtator("/nonexistent/x.pubtator");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.pubtator: cannot open"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace mare::data
