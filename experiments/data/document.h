// The in-memory document model that every loader produces and every writer reads.
//
// Rule: character offsets are byte offsets into Document::text (UTF-8), end-exclusive;
// token spans are token indices, end-exclusive. Loaders convert their format's
// offsets (PubTator counts code points, BRAN counts tokens) into these on the way in
// and back on the way out. A mention belongs to zero entities (PubTator id "-1"), one,
// or several (composite ids "D1|D2"); an entity lists all its mentions; relations link
// entity indices and hold only annotated (non-NULL) relations.
#pragma once

#include <string>
#include <vector>

namespace mare::data {

struct Token {
  std::string text;
  int begin = 0;  // byte offset into Document::text
  int end = 0;    // exclusive
};

struct Span {
  int begin = 0;  // token index
  int end = 0;    // exclusive
  bool operator==(const Span&) const = default;
};

struct Mention {
  int char_begin = 0;          // byte offset into Document::text
  int char_end = 0;            // exclusive
  std::string text;            // == Document::text.substr(char_begin, char_end - char_begin)
  std::string type;            // e.g. Chemical, Disease, Gene, Entity
  std::vector<int> entities;   // indices into Document::entities (empty for PubTator "-1")
  Span tokens;                 // token span covering exactly [char_begin, char_end)
  std::string extra;           // PubTator's optional 7th column, kept for the round trip
  bool has_extra = false;      // the line had a 7th column (the release has empty ones too)
  std::string ids_as_written;  // PubTator's id column as in the file (round trip); may be empty
};

struct Entity {
  std::string id;             // e.g. MeSH D003630, SemEval H01-1001.3
  std::string type;           // the type of its mentions
  std::vector<int> mentions;  // indices into Document::mentions, in file order
};

struct Relation {
  std::string type;      // e.g. CID, USAGE, increase_expression
  int head = 0;          // entity index (PubTator: chemical; SemEval: first argument)
  int tail = 0;          // entity index
  bool reverse = false;  // SemEval's REVERSE flag: the relation goes tail -> head
};

// A pair that a pair-level format (BRAN TSV) listed, in file order, with its label as
// written ("Null" included) and its mention columns as written.
struct ListedPair {
  int head = 0;
  int tail = 0;
  std::string label;
  std::string head_text;
  std::string tail_text;
};

// A named character range of the text: PubTator and SemEval have "title" and "abstract".
struct Segment {
  std::string name;
  int begin = 0;
  int end = 0;
};

struct Document {
  std::string id;
  std::string text;
  std::vector<Segment> segments;    // in text order; empty when the format has none
  std::vector<Token> tokens;        // (T)
  std::vector<Span> sentences;      // token spans covering all tokens, in order
  std::vector<std::string> pos;     // (T) part-of-speech tags, or empty when unknown
  std::vector<Mention> mentions;    // in file order
  std::vector<Entity> entities;     // in order of first appearance
  std::vector<Relation> relations;  // annotated relations, in file order
  std::vector<ListedPair> pairs;    // BRAN TSV only

  // Index of the entity with this id, or -1.
  int find_entity(const std::string& entity_id) const;
};

// Tokenizes doc.text (splitting tokens at every mention and segment boundary so that
// each mention covers whole tokens), fills Mention::tokens and the sentences.
void annotate_tokens(Document& doc);

// Fills Mention::tokens from char offsets given doc.tokens as they are (BRAN's given
// tokens); throws std::logic_error if a boundary falls inside a token.
void map_mentions_to_tokens(Document& doc);

}  // namespace mare::data
