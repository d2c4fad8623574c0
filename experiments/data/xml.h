// A small strict XML reader for the subset SemEval 2018 Task 7 uses.
//
// Supported: an optional <?xml ...?> declaration, comments, elements with attributes
// (single or double quotes), self-closing tags, character data, the five named
// entities (&amp; &lt; &gt; &quot; &apos;) and numeric references (&#N; &#xN;), and
// CDATA sections. Not supported (an error, never skipped): DOCTYPE, processing
// instructions after the declaration, other named entities. Rule: every error names
// the file, line and column and what was expected; nesting depth is capped so that
// hostile input cannot exhaust the stack. No external dependency: the format is
// small, and the line/column reporting is what a researcher needs.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mare::data::xml {

struct Node {
  bool is_text = false;
  std::string name;  // element name (empty for text)
  std::vector<std::pair<std::string, std::string>> attributes;
  std::string text;  // decoded character data (text nodes only)
  std::vector<Node> children;
  std::size_t line = 0;
  std::size_t column = 0;

  // Value of an attribute, or nullptr.
  const std::string* attribute(std::string_view key) const;
};

// Parses a whole document; returns its root element.
Node parse(std::string_view content, std::string_view file);

// Escapes &, <, > (and " in attributes) for writing.
std::string escape(std::string_view text, bool attribute = false);

}  // namespace mare::data::xml
