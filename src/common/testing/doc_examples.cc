#include "common/testing/doc_examples.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace trainwatch::test {
namespace {

constexpr std::string_view kMarker = "<!-- example: ";

// The bytes of one line: `[offset:] XX XX ...` then nothing or two spaces and a comment.
bool ParseByteLine(const std::string& line, std::string* out) {
  static const std::regex kLine(
      R"(^\s*(?:[0-9]+:\s*)?((?:[0-9A-F]{2} )*[0-9A-F]{2})(?:\s{2,}.*)?\s*$)");
  std::smatch m;
  if (!std::regex_match(line, m, kLine)) return false;
  const std::string hex = m[1].str();
  for (size_t i = 0; i < hex.size(); i += 3) {
    out->push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return true;
}

bool IsPartLine(const std::string& line, std::string* name) {
  static const std::regex kPart(R"(^([a-z_]+):\s*(.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, kPart)) return false;
  *name = m[1].str();
  return true;
}

}  // namespace

Result<std::map<std::string, DocExample>> ParseDocExamples(std::string_view markdown) {
  std::map<std::string, DocExample> examples;
  std::istringstream in{std::string(markdown)};
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(kMarker);
    if (at == std::string::npos) continue;
    const size_t end = line.find(" -->", at);
    if (end == std::string::npos) return Status::InvalidArgument("unterminated marker: " + line);
    const std::string name = line.substr(at + kMarker.size(), end - at - kMarker.size());
    if (examples.count(name)) return Status::InvalidArgument("example '" + name + "' twice");
    if (!std::getline(in, line) || !line.starts_with("```")) {
      return Status::InvalidArgument("example '" + name + "' has no code block after its marker");
    }
    DocExample& example = examples[name];
    std::string part;
    while (std::getline(in, line) && !line.starts_with("```")) {
      std::string next;
      if (IsPartLine(line, &next)) {
        part = next;
        example[part];
        continue;
      }
      if (line.find_first_not_of(' ') == std::string::npos) continue;
      if (!ParseByteLine(line, &example[part])) {
        return Status::InvalidArgument("example '" + name + "': no bytes in line '" + line + "'");
      }
    }
  }
  return examples;
}

Result<std::map<std::string, DocExample>> ReadDocExamples(const std::string& path) {
  std::ifstream file(path);
  if (!file) return Status::NotFound("cannot read " + path);
  std::stringstream text;
  text << file.rdbuf();
  Result<std::map<std::string, DocExample>> examples = ParseDocExamples(text.str());
  if (!examples.ok()) return examples.status().WithContext("reading " + path);
  return examples;
}

std::string HexLines(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    out += i % 16 == 0 ? (i == 0 ? "  " : "\n  ") : " ";
    const auto b = static_cast<unsigned char>(bytes[i]);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace trainwatch::test
