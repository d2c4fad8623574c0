#include "reports/src/index.h"

#include "reports/src/util.h"

namespace mare::report {

namespace fs = std::filesystem;

namespace {

// A path relative to the index, as a URL: '/' separators, spaces and the few characters
// that would end or break the attribute percent-encoded.
std::string href(const fs::path& p) {
  std::string out;
  for (char c : p.generic_string()) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || c == '"' || c == '%' || c == '#' || c == '?' || c == '<' || c == '>' ||
        c == '\'' || u >= 0x7f) {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

std::string md_link(const fs::path& p) {
  return "[" + p.filename().string() + "](" + href(p) + ")";
}

const fs::path* picture(const Artifact& a) {
  const fs::path* png = nullptr;
  for (const fs::path& f : a.files) {
    if (f.extension() == ".svg") return &f;
    if (f.extension() == ".png" && !png) png = &f;
  }
  return png;
}

// The links to an item's files (none: no line) and its provenance line, in HTML.
std::string files_and_provenance_html(const Artifact& a) {
  std::string s;
  if (!a.files.empty()) {
    s += "<p>Files:";
    for (const fs::path& f : a.files)
      s += " <a href=\"" + href(f) + "\">" + html_escape(f.filename().string()) + "</a>";
    s += "</p>\n";
  }
  const std::string prov = provenance_line(a.provenance);
  if (!prov.empty()) s += "<p class=\"prov\">" + html_escape(prov) + "</p>\n";
  return s;
}

// An artifact's entry in index.md: its title, then its files and provenance, or why it
// was not made (and, with `show_kept`, the files a failed figure kept).
std::string artifact_markdown(const std::string& title, const Artifact& a, bool show_kept) {
  std::string s = "- **" + title + "**";
  auto files = [&] {
    for (const fs::path& f : a.files) s += " " + md_link(f);
    s += "\n";
  };
  if (!a.missing.empty()) {
    s += " — not made: " + a.missing + "\n";
    if (show_kept && !a.files.empty()) {
      s += "  - kept:";
      files();
    }
    return s;
  }
  s += ":";
  files();
  const std::string prov = provenance_line(a.provenance);
  if (!prov.empty()) s += "  - " + prov + "\n";
  return s;
}

}  // namespace

std::string index_markdown(const IndexContent& c) {
  std::string s = "# " + c.title +
                  "\n\nWritten by `mare report`. Every table is in Markdown, CSV and LaTeX "
                  "(booktabs) under `tables/`, every figure as SVG and PNG with its data and "
                  "gnuplot script under `figures/`; [index.html](index.html) shows them on one "
                  "page.\n\n";
  if (!c.inputs.empty()) {
    s += "## Inputs\n\n";
    for (const std::string& i : c.inputs) s += "- " + md_cell(i) + "\n";
    s += "\n";
  }
  for (const std::string& n : c.notes) s += n + "\n\n";
  s += "## Tables\n\n";
  for (const Artifact& a : c.table_files) s += artifact_markdown(a.title, a, false);
  s += "\n## Figures\n\n";
  for (const Artifact& a : c.figures)
    s += artifact_markdown(a.title.empty() ? a.id : a.title, a, true);
  return s;
}

std::string index_html(const IndexContent& c) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>" +
      html_escape(c.title) +
      "</title>\n"
      "<style>body{font-family:sans-serif;max-width:80em;margin:1em auto;padding:0 1em} "
      "table{border-collapse:collapse;margin:.5em 0;font-size:90%} "
      "th,td{border:1px solid #bbb;padding:.2em .5em;text-align:left} "
      "caption{text-align:left;font-weight:bold} .missing{color:#a00} "
      ".prov{color:#555;font-size:85%} img{max-width:100%}</style>\n</head>\n<body>\n"
      "<h1>" +
      html_escape(c.title) +
      "</h1>\n<p>Written by <code>mare report</code>. The same content in Markdown: "
      "<a href=\"index.md\">index.md</a>.</p>\n";
  if (!c.inputs.empty()) {
    s += "<h2>Inputs</h2>\n<ul>\n";
    for (const std::string& i : c.inputs) s += "<li>" + html_escape(i) + "</li>\n";
    s += "</ul>\n";
  }
  for (const std::string& n : c.notes) s += "<p>" + html_escape(n) + "</p>\n";
  s += "<h2>Tables</h2>\n";
  for (std::size_t i = 0; i < c.table_files.size(); ++i) {
    const Artifact& a = c.table_files[i];
    s += "<section id=\"" + html_escape(a.id) + "\">\n<h3>" + html_escape(a.title) + "</h3>\n";
    if (!a.missing.empty()) {
      s += "<p class=\"missing\">Not made: " + html_escape(a.missing) + "</p>\n</section>\n";
      continue;
    }
    if (i < c.tables.size()) {
      s += table_html(c.tables[i]);
      for (const std::string& n : c.tables[i].notes) s += "<p>" + html_escape(n) + "</p>\n";
    }
    s += files_and_provenance_html(a) + "</section>\n";
  }
  s += "<h2>Figures</h2>\n";
  for (const Artifact& a : c.figures) {
    const std::string title = a.title.empty() ? a.id : a.title;
    s += "<section id=\"" + html_escape(a.id) + "\">\n<h3>" + html_escape(title) + "</h3>\n";
    if (!a.missing.empty())
      s += "<p class=\"missing\">Not made: " + html_escape(a.missing) + "</p>\n";
    if (const fs::path* pic = a.missing.empty() ? picture(a) : nullptr)
      s += "<p><img src=\"" + href(*pic) + "\" alt=\"" + html_escape(title) + "\"></p>\n";
    s += files_and_provenance_html(a) + "</section>\n";
  }
  s += "</body>\n</html>\n";
  return s;
}

void write_index(const IndexContent& c, const fs::path& dir) {
  write_file_atomic(dir / "index.md", index_markdown(c));
  write_file_atomic(dir / "index.html", index_html(c));
}

}  // namespace mare::report
