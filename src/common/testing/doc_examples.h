// The byte examples of the format documents (docs/format/*.md), read so that tests can check them
// against the real encoders and decoders: a document whose example drifts from the code fails a
// test.
//
// An example is the fenced code block that follows a line `<!-- example: NAME -->`. In it, a line
// that starts, unindented, with a word and a colon ("key:", "value:") begins a part; every other
// line holds bytes: an optional "offset:" label, then two-digit uppercase hex bytes separated by
// single spaces, then, after two or more spaces, a comment. Lines without bytes are ignored.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::test {

// An example's parts, by name ("" for bytes before any part line), as raw bytes.
using DocExample = std::map<std::string, std::string>;

// Parses every example of `markdown`, by name. InvalidArgument for a marker without a code block,
// a name used twice, or a byte line that cannot be read.
Result<std::map<std::string, DocExample>> ParseDocExamples(std::string_view markdown);
// Reads `path` and parses it.
Result<std::map<std::string, DocExample>> ReadDocExamples(const std::string& path);

// The bytes in the documents' layout, 16 per line, each line indented by two spaces (for failure
// messages that show what the document should say).
std::string HexLines(std::string_view bytes);

}  // namespace trainwatch::test
