// SemEval 2018 Task 7 reader and writer (see semeval.h).
//
// Rule: the XML is parsed by pugixml (well-formedness, references, encodings), then
// checked element by element against the shape the task's files have; anything outside
// it is an error naming file, line and column.
#include "experiments/data/semeval.h"

#include <algorithm>
#include <map>

#include <pugixml.hpp>

#include "experiments/data/error.h"
#include "experiments/data/tokenizer.h"

namespace mare::data {

namespace {

bool is_blank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
  return true;
}

// 1-based line and column (in bytes) of a byte offset of the content.
struct Position {
  std::size_t line = 1, column = 1;
};
Position position_of(std::string_view content, std::ptrdiff_t offset) {
  Position p;
  const std::size_t end = std::min<std::size_t>(offset < 0 ? 0 : offset, content.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (content[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

struct Reader {
  std::string_view content;
  std::string_view file;
  std::map<std::string, std::size_t> entity_lines;  // entity id -> line of its first use
  std::vector<std::size_t> line_starts;             // byte offset where each line begins

  Reader(std::string_view c, std::string_view f) : content(c), file(f) {
    line_starts.push_back(0);
    for (std::size_t i = 0; i < content.size(); ++i)
      if (content[i] == '\n') line_starts.push_back(i + 1);
  }

  // position_of by the line index: every entity's line is recorded, and a scan from the
  // start of the file for each would make a load quadratic in the file's size.
  Position position(std::ptrdiff_t offset) const {
    const std::size_t end = std::min<std::size_t>(offset < 0 ? 0 : offset, content.size());
    const auto it = std::upper_bound(line_starts.begin(), line_starts.end(), end) - 1;
    return {static_cast<std::size_t>(it - line_starts.begin()) + 1, end - *it + 1};
  }

  // A node's position: pugixml gives the offset of its name (after '<'); the column
  // points at the '<'.
  Position at(const pugi::xml_node& n) const {
    std::ptrdiff_t offset = n.offset_debug();
    if (n.type() != pugi::node_pcdata && n.type() != pugi::node_cdata)
      while (offset > 0 && offset <= static_cast<std::ptrdiff_t>(content.size()) &&
             content[offset - 1] != '<')
        --offset;
    if (n.type() != pugi::node_pcdata && n.type() != pugi::node_cdata && offset > 0) --offset;
    return position(offset);
  }
  [[noreturn]] void fail_at(const pugi::xml_node& n, const std::string& what) const {
    const Position p = at(n);
    fail(file, p.line, p.column, what);
  }

  // Appends the character content of `node` (title, abstract, entity, SectionTitle) to
  // doc.text; every <entity> on the way becomes an entity with one mention, nested ones
  // included (each is an argument of the task in its own right).
  void read_content(const pugi::xml_node& node, Document& doc) {
    for (const pugi::xml_node& child : node.children()) {
      if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata) {
        doc.text += child.value();
        continue;
      }
      if (child.type() != pugi::node_element) continue;  // comments, processing instructions
      const std::string name = child.name();
      if (name == "SectionTitle") {  // a section heading inside an abstract: its text
        read_content(child, doc);
        continue;
      }
      if (name != "entity")
        fail_at(child, "expected text, <entity> or <SectionTitle> inside <" +
                           std::string(node.name()) + ">, found <" + name + ">");
      read_entity(child, doc);
    }
  }

  void read_entity(const pugi::xml_node& e, Document& doc) {
    const pugi::xml_attribute id_attr = e.attribute("id");
    const std::string id = id_attr.value();
    if (!id_attr || id.empty()) fail_at(e, "expected an id attribute on <entity>");
    if (id.find_first_of(",() \t\n\r") != std::string::npos)
      fail_at(e,
              "expected an entity id without ',', '(', ')' or whitespace (relation lines could "
              "not name it), found " +
                  quote(id));
    if (auto it = entity_lines.find(id); it != entity_lines.end())
      fail_at(e, "entity id " + quote(id) + " already used at line " + std::to_string(it->second));
    entity_lines[id] = at(e).line;
    // The entity and its mention come in the order of their opening tags.
    const int entity = static_cast<int>(doc.entities.size());
    const int mention = static_cast<int>(doc.mentions.size());
    doc.entities.push_back({id, "Entity", {mention}});
    doc.mentions.emplace_back();
    const int begin = static_cast<int>(doc.text.size());
    read_content(e, doc);
    Mention& m = doc.mentions[mention];
    m.char_begin = begin;
    m.char_end = static_cast<int>(doc.text.size());
    m.text = doc.text.substr(begin);
    m.type = "Entity";
    m.entities = {entity};
    if (tokenize(m.text).empty()) fail_at(e, "entity " + quote(id) + " has no text");
  }

  std::vector<Document> read(const pugi::xml_document& xml) {
    pugi::xml_node root;
    for (const pugi::xml_node& n : xml.children()) {
      if (n.type() == pugi::node_doctype)
        fail_at(
            n, "expected no DOCTYPE (the task's files have none; entity definitions are not read)");
      if (n.type() != pugi::node_element) continue;
      if (root) fail_at(n, "expected the end of the file after the root element <doc>");
      root = n;
    }
    if (!root) fail(file, 1, 1, "expected the root element <doc>, found none");
    if (std::string_view(root.name()) != "doc")
      fail_at(root, "expected the root element <doc>, found <" + std::string(root.name()) + ">");
    std::vector<Document> docs;
    std::map<std::string, std::size_t> doc_lines;
    for (const pugi::xml_node& t : root.children()) {
      if (t.type() == pugi::node_pcdata || t.type() == pugi::node_cdata) {
        if (!is_blank(t.value()))
          fail_at(t, "expected <text> elements in <doc>, found text " + quote(t.value()));
        continue;
      }
      if (t.type() != pugi::node_element) continue;
      const std::string name = t.name();
      if (name == "abstract") {
        // 1.2.text.xml has, after each of two <text> elements that lack an abstract,
        // an empty <abstract></abstract> of its own between the texts (and six more
        // after complete texts): an empty abstract adds nothing, whatever it follows.
        if (!is_blank(t.child_value()) || t.first_child().type() == pugi::node_element)
          fail_at(t, "expected <text> in <doc>, found an <abstract> with content outside <text>");
        continue;
      }
      if (name != "text") fail_at(t, "expected <text> in <doc>, found <" + name + ">");
      const std::string id = t.attribute("id").value();
      if (id.empty()) fail_at(t, "expected an id attribute on <text>");
      if (auto it = doc_lines.find(id); it != doc_lines.end())
        fail_at(t,
                "document id " + quote(id) + " already used at line " + std::to_string(it->second));
      doc_lines[id] = at(t).line;
      Document doc;
      doc.id = id;
      pugi::xml_node title, abstract;
      for (const pugi::xml_node& c : t.children()) {
        if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) {
          if (!is_blank(c.value()))
            fail_at(c, "expected <title> and <abstract> in <text>, found text " + quote(c.value()));
          continue;
        }
        if (c.type() != pugi::node_element) continue;
        const std::string cn = c.name();
        if (cn == "title" && !title && !abstract) {
          title = c;
        } else if (cn == "abstract" && title && !abstract) {
          abstract = c;
        } else {
          fail_at(c, std::string("expected ") +
                         (!title      ? "<title>"
                          : !abstract ? "<abstract> or </text>"
                                      : "</text>") +
                         ", found <" + cn + ">");
        }
      }
      if (!title) fail_at(t, "expected <title> inside <text id=\"" + id + "\">");
      read_content(title, doc);
      doc.segments.push_back({"title", 0, static_cast<int>(doc.text.size())});
      doc.text += "\n";
      const int abstract_begin = static_cast<int>(doc.text.size());
      if (abstract) read_content(abstract, doc);  // two texts of 1.2.text.xml have none
      doc.segments.push_back({"abstract", abstract_begin, static_cast<int>(doc.text.size())});
      try {
        annotate_tokens(doc);
      } catch (const std::logic_error& e) {  // defensive: the checks above should prevent it
        fail_at(t, std::string("cannot map entities to tokens: ") + e.what());
      }
      docs.push_back(std::move(doc));
    }
    if (docs.empty()) fail_at(root, "expected at least one <text> in <doc>");
    return docs;
  }
};

// Refuses a '&' that does not start one of XML's five named references or a numeric
// one: pugixml keeps such text as it is, which would load "&nbsp;" as data.
void check_references(std::string_view content, std::string_view file) {
  std::size_t i = 0;
  while ((i = content.find_first_of("&<", i)) != std::string_view::npos) {
    if (content.compare(i, 4, "<!--") == 0) {
      const std::size_t end = content.find("-->", i + 4);
      i = end == std::string_view::npos ? content.size() : end + 3;
      continue;
    }
    if (content.compare(i, 9, "<![CDATA[") == 0) {
      const std::size_t end = content.find("]]>", i + 9);
      i = end == std::string_view::npos ? content.size() : end + 3;
      continue;
    }
    if (content[i] == '<') {
      ++i;
      continue;
    }
    const std::size_t semi = content.find(';', i);
    const std::string_view ref = semi == std::string_view::npos || semi - i > 12
                                     ? content.substr(i, 1)
                                     : content.substr(i, semi - i + 1);
    bool ok =
        ref == "&amp;" || ref == "&lt;" || ref == "&gt;" || ref == "&quot;" || ref == "&apos;";
    if (!ok && ref.size() > 3 && ref[1] == '#') {
      const bool hex = ref[2] == 'x';
      const std::string_view digits = ref.substr(hex ? 3 : 2, ref.size() - (hex ? 4 : 3));
      ok = !digits.empty() && std::all_of(digits.begin(), digits.end(), [&](char c) {
        return (c >= '0' && c <= '9') ||
               (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
      });
    }
    if (!ok) {
      const Position p = position_of(content, static_cast<std::ptrdiff_t>(i));
      fail(file, p.line, p.column,
           "unknown entity reference " + quote(ref) +
               " (expected &amp; &lt; &gt; &quot; &apos; or a numeric reference)");
    }
    i += ref.size();
  }
}

std::string escape(std::string_view text, bool attribute = false) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += attribute ? "&quot;" : "\"";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<Document> parse_semeval_xml(std::string_view content, std::string_view file) {
  if (content.empty()) fail(file, 1, 1, "expected an XML document, found an empty file");
  check_utf8(content, file);
  check_references(content, file);
  pugi::xml_document xml;
  const unsigned flags = pugi::parse_default | pugi::parse_ws_pcdata | pugi::parse_doctype;
  const pugi::xml_parse_result parsed =
      xml.load_buffer(content.data(), content.size(), flags, pugi::encoding_utf8);
  if (!parsed) {
    const Position p = position_of(content, parsed.offset);
    std::string what;
    switch (parsed.status) {
      case pugi::status_end_element_mismatch:
        what =
            "expected the closing tag of the open element (start and end tags differ, or "
            "the file ends before it)";
        break;
      case pugi::status_bad_attribute:
        what = "expected a quoted value for an attribute";
        break;
      case pugi::status_bad_start_element:
      case pugi::status_bad_end_element:
      case pugi::status_unrecognized_tag:
        what = "expected a well-formed tag";
        break;
      default:
        what = "expected well-formed XML";
    }
    fail(file, p.line, p.column, what + " (" + parsed.description() + ")");
  }
  Reader reader(content, file);
  return reader.read(xml);
}

std::vector<SemevalPairLine> parse_semeval_pair_lines(std::string_view content,
                                                      std::string_view file, LabelRule rule,
                                                      const std::set<std::string>& labels) {
  if (content.empty()) fail(file, 0, 0, "expected relation lines, found an empty file");
  check_utf8(content, file);
  const std::vector<Line> lines = split_lines(content, file);
  const std::string expected =
      rule == LabelRule::none ? "expected a pair line '(E1,E2)' or '(E1,E2,REVERSE)'"
                              : "expected a relation line 'TYPE(E1,E2)' or 'TYPE(E1,E2,REVERSE)'";
  std::vector<SemevalPairLine> out;
  for (const Line& ln : lines) {
    if (ln.text.empty()) continue;
    const std::size_t open = ln.text.find('(');
    if (open == std::string_view::npos || ln.text.back() != ')')
      fail(file, ln.number, 1, expected + ", found " + quote(ln.text));
    SemevalPairLine p;
    p.line = ln.number;
    p.label = std::string(ln.text.substr(0, open));
    if (rule == LabelRule::none && !p.label.empty())
      fail(file, ln.number, 1, expected + " (no relation type), found " + quote(ln.text));
    if (rule == LabelRule::required && !labels.count(p.label)) {
      std::string known;
      for (const auto& t : labels) known += (known.empty() ? "" : ", ") + t;
      fail(file, ln.number, 1,
           (p.label.empty() ? std::string("missing relation type")
                            : "unknown relation type " + quote(p.label)) +
               " (expected one of: " + known + ")");
    }
    const std::string_view inner = ln.text.substr(open + 1, ln.text.size() - open - 2);
    const std::vector<std::string_view> args = split(inner, ',');
    if (args.size() < 2 || args.size() > 3 || (args.size() == 3 && args[2] != "REVERSE") ||
        args[0].empty() || args[1].empty())
      fail(file, ln.number, open + 2,
           expected + ": two entity ids and an optional REVERSE, found " + quote(inner));
    p.e1 = std::string(args[0]);
    p.e2 = std::string(args[1]);
    p.reverse = args.size() == 3;
    p.column_e1 = open + 2;
    p.column_e2 = open + 2 + args[0].size() + 1;
    out.push_back(std::move(p));
  }
  return out;
}

void parse_semeval_relations(std::vector<Document>& docs, std::string_view content,
                             std::string_view file, const SemevalOptions& options) {
  std::map<std::string, std::pair<int, int>> where;  // entity id -> (doc, entity)
  for (std::size_t d = 0; d < docs.size(); ++d)
    for (std::size_t e = 0; e < docs[d].entities.size(); ++e)
      where[docs[d].entities[e].id] = {static_cast<int>(d), static_cast<int>(e)};
  const LabelRule rule = options.unlabelled ? LabelRule::none : LabelRule::required;
  for (const SemevalPairLine& p :
       parse_semeval_pair_lines(content, file, rule, options.relation_types)) {
    std::pair<int, int> ends[2];
    const std::string* ids[2] = {&p.e1, &p.e2};
    const std::size_t cols[2] = {p.column_e1, p.column_e2};
    for (int k = 0; k < 2; ++k) {
      auto it = where.find(*ids[k]);
      if (it == where.end())
        fail(
            file, p.line, cols[k],
            "entity id " + quote(*ids[k]) + " appears in a relation but in no <entity> of the XML");
      ends[k] = it->second;
    }
    if (ends[0].first != ends[1].first)
      fail(file, p.line, p.column_e1,
           "entities " + quote(p.e1) + " and " + quote(p.e2) + " are in different documents");
    if (ends[0].second == ends[1].second)
      fail(file, p.line, p.column_e1, "a relation needs two different entities");
    Document& doc = docs[ends[0].first];
    for (const Relation& r : doc.relations)
      if ((r.head == ends[0].second && r.tail == ends[1].second) ||
          (r.head == ends[1].second && r.tail == ends[0].second))
        fail(file, p.line, 1,
             "a relation between " + quote(p.e1) + " and " + quote(p.e2) + " is already listed");
    doc.relations.push_back({p.label, ends[0].second, ends[1].second, p.reverse});
  }
}

std::vector<Document> load_semeval(const std::string& xml_path, const std::string& relations_path,
                                   const SemevalOptions& options) {
  std::vector<Document> docs = parse_semeval_xml(read_file(xml_path), xml_path);
  if (!relations_path.empty())
    parse_semeval_relations(docs, read_file(relations_path), relations_path, options);
  return docs;
}

std::string semeval_relations_path(const std::string& xml_path) {
  std::string stem = xml_path;
  for (const char* suffix : {".xml", ".text"})
    if (stem.size() >= std::string(suffix).size() &&
        stem.compare(stem.size() - std::string(suffix).size(), std::string::npos, suffix) == 0)
      stem.resize(stem.size() - std::string(suffix).size());
  return stem + ".relations.txt";
}

std::string write_semeval_xml(const std::vector<Document>& docs) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<doc>\n";
  for (const Document& doc : docs) {
    // Mentions by start, the enclosing one first: nested entities are written nested.
    std::vector<int> order(doc.mentions.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const Mention &x = doc.mentions[a], &y = doc.mentions[b];
      return x.char_begin != y.char_begin ? x.char_begin < y.char_begin : x.char_end > y.char_end;
    });
    const std::string_view text(doc.text);
    auto segment = [&](const Segment& seg) {
      std::string s = "<" + seg.name + ">";
      int pos = seg.begin;
      std::vector<int> open;  // char_end of each open <entity>, innermost last
      auto close_until = [&](int upto) {
        while (!open.empty() && open.back() <= upto) {
          s += escape(text.substr(pos, open.back() - pos)) + "</entity>";
          pos = open.back();
          open.pop_back();
        }
      };
      for (int m : order) {
        const Mention& men = doc.mentions[m];
        if (men.char_begin < seg.begin || men.char_end > seg.end) continue;
        close_until(men.char_begin);
        // A mention that crosses an open one cannot be written as XML (the reader never
        // makes one); it is left out.
        if (men.char_begin < pos || (!open.empty() && men.char_end > open.back())) continue;
        s += escape(text.substr(pos, men.char_begin - pos));
        const std::string id = men.entities.empty() ? "" : doc.entities[men.entities[0]].id;
        s += "<entity id=\"" + escape(id, true) + "\">";
        pos = men.char_begin;
        open.push_back(men.char_end);
      }
      close_until(seg.end);
      s += escape(text.substr(pos, seg.end - pos));
      return s + "</" + seg.name + ">\n";
    };
    out += "<text id=\"" + escape(doc.id, true) + "\">\n";
    for (const Segment& seg : doc.segments) out += segment(seg);
    out += "</text>\n";
  }
  return out + "</doc>\n";
}

std::string write_semeval_relations(const std::vector<Document>& docs) {
  std::string out;
  for (const Document& doc : docs)
    for (const Relation& r : doc.relations)
      out += r.type + "(" + doc.entities[r.head].id + "," + doc.entities[r.tail].id +
             (r.reverse ? ",REVERSE" : "") + ")\n";
  return out;
}

}  // namespace mare::data
