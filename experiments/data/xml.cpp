// A small strict XML reader (see xml.h).
//
// Rule: the reader consumes the input left to right exactly once and reports the
// position of the first thing that is not well-formed.
#include "experiments/data/xml.h"

#include <cstdint>

#include "experiments/data/error.h"

namespace mare::data::xml {

namespace {

// XML's five predefined entities: the reader decodes them, escape writes them.
struct Entity {
  char c;
  const char* name;
};
constexpr Entity kEntities[] = {
    {'&', "amp"}, {'<', "lt"}, {'>', "gt"}, {'"', "quot"}, {'\'', "apos"}};

const char* named_character(std::string_view name) {
  for (const Entity& e : kEntities)
    if (name == e.name) return &e.c;
  return nullptr;
}

const char* entity_name(char c) {
  for (const Entity& e : kEntities)
    if (c == e.c) return e.name;
  return nullptr;
}

constexpr int kMaxDepth = 64;

class Reader {
 public:
  Reader(std::string_view s, std::string_view file) : s_(s), file_(file) {}

  Node document() {
    check_utf8(s_, file_);
    if (s_.empty()) error("expected an XML document, found an empty file");
    if (starts("\xEF\xBB\xBF")) advance(3);
    if (starts("<?xml")) {
      const std::size_t end = s_.find("?>", pos_);
      if (end == std::string_view::npos) error("expected '?>' to close the XML declaration");
      advance(end + 2 - pos_);
    }
    misc();
    if (eof()) error("expected a root element, found the end of the file");
    if (starts("<!DOCTYPE")) error("DOCTYPE declarations are not supported");
    if (!starts("<")) error("expected '<' to open the root element, found " + here());
    Node root = element(0);
    misc();
    if (!eof()) error("expected the end of the file after the root element, found " + here());
    return root;
  }

 private:
  std::string_view s_;
  std::string_view file_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  std::size_t col_ = 1;

  [[noreturn]] void error(const std::string& what) { fail(file_, line_, col_, what); }
  bool eof() const { return pos_ >= s_.size(); }
  bool starts(std::string_view p) const { return s_.substr(pos_, p.size()) == p; }
  std::string here() const {
    if (eof()) return "the end of the file";
    return quote(s_.substr(pos_, 12));
  }
  void advance(std::size_t n) {
    for (std::size_t k = 0; k < n && pos_ < s_.size(); ++k, ++pos_) {
      if (s_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else if ((static_cast<unsigned char>(s_[pos_]) & 0xC0) != 0x80) {
        ++col_;
      }
    }
  }
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  void skip_space() {
    while (!eof() && is_space(s_[pos_])) advance(1);
  }
  // whitespace and comments outside the root element
  void misc() {
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        comment();
      } else {
        return;
      }
    }
  }
  void comment() {
    const std::size_t end = s_.find("-->", pos_ + 4);
    if (end == std::string_view::npos) error("expected '-->' to close this comment");
    advance(end + 3 - pos_);
  }
  static bool name_char(char c, bool first) {
    const auto u = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || u >= 0x80)
      return true;
    return !first && ((c >= '0' && c <= '9') || c == '-' || c == '.');
  }
  std::string name() {
    const std::size_t start = pos_;
    if (eof() || !name_char(s_[pos_], true)) error("expected a name, found " + here());
    while (!eof() && name_char(s_[pos_], false)) advance(1);
    return std::string(s_.substr(start, pos_ - start));
  }
  // Decodes one reference starting at '&' and appends it.
  void reference(std::string& out) {
    const std::size_t end = s_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 12)
      error("expected an entity reference such as '&amp;', found " + here());
    const std::string_view ref = s_.substr(pos_ + 1, end - pos_ - 1);
    if (const char* c = named_character(ref)) {
      out += *c;
    } else if (ref.size() >= 2 && ref[0] == '#') {
      std::uint32_t cp = 0;
      const bool hex = ref[1] == 'x';
      const std::string_view digits = ref.substr(hex ? 2 : 1);
      if (digits.empty()) error("expected digits in the character reference " + quote(ref));
      for (char c : digits) {
        int d = -1;
        if (c >= '0' && c <= '9') d = c - '0';
        if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
        if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
        if (d < 0) error("expected digits in the character reference " + quote(ref));
        cp = cp * (hex ? 16 : 10) + static_cast<std::uint32_t>(d);
        if (cp > 0x10FFFF) error("character reference " + quote(ref) + " is past U+10FFFF");
      }
      if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
        error("character reference " + quote(ref) + " is not a valid character");
      if (cp < 0x80) {
        out += static_cast<char>(cp);
      } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      }
    } else {
      error("unknown entity reference '&" + std::string(ref) +
            ";' (expected &amp; &lt; &gt; &quot; &apos; or &#N;)");
    }
    advance(end + 1 - pos_);
  }
  Node element(int depth) {
    if (depth >= kMaxDepth) error("elements nested deeper than 64 levels");
    Node node;
    node.line = line_;
    node.column = col_;
    advance(1);  // '<'
    node.name = name();
    for (;;) {
      const bool had_space = !eof() && is_space(s_[pos_]);
      skip_space();
      if (eof())
        error("expected '>' to close the tag <" + node.name + ">, found the end of the file");
      if (starts("/>")) {
        advance(2);
        return node;
      }
      if (starts(">")) {
        advance(1);
        break;
      }
      if (!had_space)
        error("expected a space, '>' or '/>' in the tag <" + node.name + ">, found " + here());
      const std::size_t aline = line_, acol = col_;
      std::string key = name();
      skip_space();
      if (!starts("=")) error("expected '=' after the attribute name " + quote(key));
      advance(1);
      skip_space();
      if (eof() || (s_[pos_] != '"' && s_[pos_] != '\''))
        error("expected a quoted value for the attribute " + quote(key) + ", found " + here());
      const char q = s_[pos_];
      advance(1);
      std::string value;
      while (!eof() && s_[pos_] != q) {
        if (s_[pos_] == '<') error("expected no '<' inside an attribute value");
        if (s_[pos_] == '&') {
          reference(value);
        } else {
          value += s_[pos_];
          advance(1);
        }
      }
      if (eof()) error("expected the closing quote of the attribute " + quote(key));
      advance(1);
      if (node.attribute(key))
        fail(file_, aline, acol, "attribute " + quote(key) + " appears twice");
      node.attributes.emplace_back(std::move(key), std::move(value));
    }
    // content
    std::string text;
    std::size_t tline = line_, tcol = col_;
    auto flush = [&]() {
      if (!text.empty()) {
        Node t;
        t.is_text = true;
        t.text = std::move(text);
        t.line = tline;
        t.column = tcol;
        node.children.push_back(std::move(t));
        text.clear();
      }
    };
    for (;;) {
      if (eof())
        error("expected the closing tag </" + node.name + "> (opened at line " +
              std::to_string(node.line) + "), found the end of the file");
      if (text.empty()) {
        tline = line_;
        tcol = col_;
      }
      if (starts("</")) {
        flush();
        advance(2);
        const std::size_t cl = line_, cc = col_;
        const std::string close = name();
        skip_space();
        if (!starts(">")) error("expected '>' to end the closing tag </" + close + ">");
        if (close != node.name)
          fail(file_, cl, cc,
               "expected the closing tag </" + node.name + "> (opened at line " +
                   std::to_string(node.line) + "), found </" + close + ">");
        advance(1);
        return node;
      }
      if (starts("<!--")) {
        comment();
        continue;
      }
      if (starts("<![CDATA[")) {
        const std::size_t end = s_.find("]]>", pos_);
        if (end == std::string_view::npos) error("expected ']]>' to close this CDATA section");
        text += s_.substr(pos_ + 9, end - pos_ - 9);
        advance(end + 3 - pos_);
        continue;
      }
      if (starts("<?") || starts("<!"))
        error("expected an element, text or comment, found " + here());
      if (starts("<")) {
        flush();
        node.children.push_back(element(depth + 1));
        continue;
      }
      if (s_[pos_] == '&') {
        reference(text);
        continue;
      }
      if (starts("]]>")) error("']]>' is not allowed in text");
      text += s_[pos_];
      advance(1);
    }
  }
};

}  // namespace

const std::string* Node::attribute(std::string_view key) const {
  for (const auto& [k, v] : attributes)
    if (k == key) return &v;
  return nullptr;
}

Node parse(std::string_view content, std::string_view file) {
  return Reader(content, file).document();
}

std::string escape(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    // & < > always, " in attributes (written between double quotes), ' never.
    const bool escaped = c != '\'' && (attribute || c != '"');
    if (const char* name = escaped ? entity_name(c) : nullptr)
      out.append("&").append(name).append(";");
    else
      out += c;
  }
  return out;
}

}  // namespace mare::data::xml
