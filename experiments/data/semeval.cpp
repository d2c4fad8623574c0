// SemEval 2018 Task 7 reader and writer (see semeval.h).
//
// Rule: the XML is checked element by element; anything outside the expected shape is
// an error naming file, line and column.
#include "experiments/data/semeval.h"

#include <algorithm>
#include <map>

#include "experiments/data/error.h"
#include "experiments/data/tokenizer.h"
#include "experiments/data/xml.h"

namespace mare::data {

namespace {

bool is_blank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
  return true;
}

// Appends the content of <title> or <abstract> to doc.text, adding entity mentions.
void read_segment(const xml::Node& seg, Document& doc, std::string_view file,
                  std::map<std::string, std::pair<std::size_t, std::size_t>>& ids) {
  for (const xml::Node& child : seg.children) {
    if (child.is_text) {
      doc.text += child.text;
      continue;
    }
    if (child.name != "entity")
      fail(file, child.line, child.column,
           "expected text or <entity> inside <" + seg.name + ">, found <" + child.name + ">");
    const std::string* id = child.attribute("id");
    if (!id || id->empty())
      fail(file, child.line, child.column, "expected an id attribute on <entity>");
    if (id->find_first_of(",() \t\n\r") != std::string::npos)
      fail(file, child.line, child.column,
           "expected an entity id without ',', '(', ')' or whitespace (relation lines could "
           "not name it), found " +
               quote(*id));
    if (auto it = ids.find(*id); it != ids.end())
      fail(file, child.line, child.column,
           "entity id " + quote(*id) + " already used at line " + std::to_string(it->second.first));
    ids[*id] = {child.line, child.column};
    std::string text;
    for (const xml::Node& t : child.children) {
      if (!t.is_text)
        fail(file, t.line, t.column,
             "expected only text inside <entity id=\"" + *id + "\">, found <" + t.name + ">");
      text += t.text;
    }
    if (tokenize(text).empty())
      fail(file, child.line, child.column, "entity " + quote(*id) + " has no text");
    Mention m;
    m.char_begin = static_cast<int>(doc.text.size());
    doc.text += text;
    m.char_end = static_cast<int>(doc.text.size());
    m.text = text;
    m.type = "Entity";
    m.entities.push_back(static_cast<int>(doc.entities.size()));
    doc.entities.push_back({*id, "Entity", {static_cast<int>(doc.mentions.size())}});
    doc.mentions.push_back(std::move(m));
  }
}

const xml::Node& only_child(const xml::Node& parent, std::size_t& k, const char* name,
                            std::string_view file) {
  while (k < parent.children.size() && parent.children[k].is_text &&
         is_blank(parent.children[k].text))
    ++k;
  if (k >= parent.children.size())
    fail(file, parent.line, parent.column,
         std::string("expected <") + name + "> inside <" + parent.name + ">");
  const xml::Node& c = parent.children[k];
  if (c.is_text || c.name != name)
    fail(file, c.line, c.column,
         std::string("expected <") + name + ">, found " +
             (c.is_text ? "text " + quote(c.text) : "<" + c.name + ">"));
  ++k;
  return c;
}

}  // namespace

std::vector<Document> parse_semeval_xml(std::string_view content, std::string_view file) {
  const xml::Node root = xml::parse(content, file);
  if (root.name != "doc")
    fail(file, root.line, root.column,
         "expected the root element <doc>, found <" + root.name + ">");
  std::vector<Document> docs;
  std::map<std::string, std::pair<std::size_t, std::size_t>> entity_ids;
  std::map<std::string, std::size_t> doc_ids;
  for (const xml::Node& t : root.children) {
    if (t.is_text) {
      if (!is_blank(t.text))
        fail(file, t.line, t.column,
             "expected <text> elements in <doc>, found text " + quote(t.text));
      continue;
    }
    if (t.name != "text")
      fail(file, t.line, t.column, "expected <text> in <doc>, found <" + t.name + ">");
    const std::string* id = t.attribute("id");
    if (!id || id->empty()) fail(file, t.line, t.column, "expected an id attribute on <text>");
    if (auto it = doc_ids.find(*id); it != doc_ids.end())
      fail(file, t.line, t.column,
           "document id " + quote(*id) + " already used at line " + std::to_string(it->second));
    doc_ids[*id] = t.line;
    Document doc;
    doc.id = *id;
    std::size_t k = 0;
    const xml::Node& title = only_child(t, k, "title", file);
    read_segment(title, doc, file, entity_ids);
    doc.segments.push_back({"title", 0, static_cast<int>(doc.text.size())});
    doc.text += "\n";
    const xml::Node& abstract = only_child(t, k, "abstract", file);
    const int abstract_begin = static_cast<int>(doc.text.size());
    read_segment(abstract, doc, file, entity_ids);
    doc.segments.push_back({"abstract", abstract_begin, static_cast<int>(doc.text.size())});
    for (; k < t.children.size(); ++k) {
      const xml::Node& c = t.children[k];
      if (!c.is_text || !is_blank(c.text))
        fail(file, c.line, c.column,
             "expected </text> after <abstract>, found " +
                 (c.is_text ? "text " + quote(c.text) : "<" + c.name + ">"));
    }
    try {
      annotate_tokens(doc);
    } catch (const std::logic_error& e) {  // defensive: the checks above should prevent it
      fail(file, t.line, t.column, std::string("cannot map entities to tokens: ") + e.what());
    }
    docs.push_back(std::move(doc));
  }
  if (docs.empty()) fail(file, root.line, root.column, "expected at least one <text> in <doc>");
  return docs;
}

void parse_semeval_relations(std::vector<Document>& docs, std::string_view content,
                             std::string_view file, const SemevalOptions& options) {
  if (content.empty()) fail(file, 0, 0, "expected relation lines, found an empty file");
  check_utf8(content, file);
  bool unterminated = false;
  const std::vector<Line> lines = split_lines(content, file, &unterminated);
  std::map<std::string, std::pair<int, int>> where;  // entity id -> (doc, entity)
  for (std::size_t d = 0; d < docs.size(); ++d)
    for (std::size_t e = 0; e < docs[d].entities.size(); ++e)
      where[docs[d].entities[e].id] = {static_cast<int>(d), static_cast<int>(e)};
  const std::string expected = "expected a relation line 'TYPE(E1,E2)' or 'TYPE(E1,E2,REVERSE)'";
  for (const Line& ln : lines) {
    if (ln.text.empty()) continue;
    const std::size_t open = ln.text.find('(');
    if (open == std::string_view::npos || ln.text.back() != ')')
      fail(file, ln.number, 1, expected + ", found " + quote(ln.text));
    const std::string type(ln.text.substr(0, open));
    if (!options.relation_types.count(type)) {
      std::string known;
      for (const auto& t : options.relation_types) known += (known.empty() ? "" : ", ") + t;
      fail(file, ln.number, 1,
           "unknown relation type " + quote(type) + " (expected one of: " + known + ")");
    }
    const std::string_view inner = ln.text.substr(open + 1, ln.text.size() - open - 2);
    const std::vector<std::string_view> args = split(inner, ',');
    if (args.size() < 2 || args.size() > 3 || (args.size() == 3 && args[2] != "REVERSE"))
      fail(file, ln.number, open + 2,
           expected + ": two entity ids and an optional REVERSE, found " + quote(inner));
    std::pair<int, int> ends[2];
    std::size_t col = open + 2;
    for (int k = 0; k < 2; ++k) {
      auto it = where.find(std::string(args[k]));
      if (it == where.end())
        fail(
            file, ln.number, col,
            "entity id " + quote(args[k]) + " appears in a relation but in no <entity> of the XML");
      ends[k] = it->second;
      col += args[k].size() + 1;
    }
    if (ends[0].first != ends[1].first)
      fail(file, ln.number, open + 2,
           "entities " + quote(args[0]) + " and " + quote(args[1]) + " are in different documents");
    if (ends[0].second == ends[1].second)
      fail(file, ln.number, open + 2, "a relation needs two different entities");
    Document& doc = docs[ends[0].first];
    for (const Relation& r : doc.relations)
      if ((r.head == ends[0].second && r.tail == ends[1].second) ||
          (r.head == ends[1].second && r.tail == ends[0].second))
        fail(file, ln.number, 1,
             "a relation between " + quote(args[0]) + " and " + quote(args[1]) +
                 " is already listed");
    doc.relations.push_back({type, ends[0].second, ends[1].second, args.size() == 3});
  }
  require_final_newline(file, lines, unterminated);
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
    std::vector<int> order(doc.mentions.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return doc.mentions[a].char_begin < doc.mentions[b].char_begin;
    });
    auto segment = [&](const Segment& seg) {
      std::string s = "<" + seg.name + ">";
      int pos = seg.begin;
      for (int m : order) {
        const Mention& men = doc.mentions[m];
        if (men.char_begin < seg.begin || men.char_end > seg.end || men.char_begin < pos) continue;
        s += xml::escape(std::string_view(doc.text).substr(pos, men.char_begin - pos));
        const std::string id = men.entities.empty() ? "" : doc.entities[men.entities[0]].id;
        s += "<entity id=\"" + xml::escape(id, true) + "\">" + xml::escape(men.text) + "</entity>";
        pos = men.char_end;
      }
      s += xml::escape(std::string_view(doc.text).substr(pos, seg.end - pos));
      return s + "</" + seg.name + ">\n";
    };
    out += "<text id=\"" + xml::escape(doc.id, true) + "\">\n";
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
