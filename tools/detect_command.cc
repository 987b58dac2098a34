#include "detect_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alerting/run_monitor.h"
#include "flags.h"
#include "ingest/json_lines.h"
#include "ingest/limits.h"
#include "rules/rule_file.h"

namespace trainwatch::tools {
namespace {

constexpr const char* kDetectDescription =
    "Runs the server's anomaly detectors (docs/detectors.md) and alert rules (docs/rules.md) over\n"
    "records in the /write JSON-lines format (the server's parser: a line /write refuses is\n"
    "refused here, with its number and why),\n"
    "  {\"project\":..,\"run\":..,\"step\":..,\"time\":..,\"metrics\":{..}}\n"
    "(NaN, Infinity and -Infinity allowed), each run in file order, and prints one JSON alert\n"
    "per line:\n"
    "  "
    "{\"run\",\"kind\",\"metric\",\"step\",\"time\",\"value\",\"severity\",\"message\",\"name\"}\n"
    "(kind \"rule\" and name the rule's alert for rule alerts). `stalled` uses the gaps between\n"
    "record times.\n";

// Files are read, and their whole lines handed to the server's /write parser, in blocks of this
// size.
constexpr size_t kChunkBytes = 4 << 20;

}  // namespace

int DetectCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string rules_path;
  bool show_resolved = false;
  FlagSet set("detect", kDetectDescription);
  set.AddPositionalList("FILE.jsonl", &files);
  set.Add(StringFlag(
      "--rules", "FILE",
      "the alerting file the server uses (detector settings and rules; receivers ignored)",
      &rules_path));
  set.Add(
      SwitchFlag("--resolved",
                 "also print when an incident clears (the same fields plus \"state\":\"resolved\")",
                 &show_resolved));
  if (auto exit_code = ParseCommandLine(set, args)) return *exit_code;
  auto rule_set = rules::LoadRules(rules_path);
  if (!rule_set.ok()) {
    std::fprintf(stderr, "trainwatch detect: %s\n", rule_set.status().message().c_str());
    return 2;
  }
  auto rules = std::make_shared<const rules::RuleSet>(std::move(*rule_set));
  std::map<std::string, std::unique_ptr<alerting::RunMonitor>, std::less<>> runs;
  std::vector<alerting::AlertEvent> events;
  const ingest::IngestLimits limits;
  int bad_lines = 0;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "trainwatch detect: cannot open %s\n", path.c_str());
      return 1;
    }
    uint64_t first_line = 0;  // lines before the chunk
    // Whole lines go to the parser; a file is read a block at a time, never held in memory whole.
    auto detect = [&](std::string_view chunk) {
      // A record without "time" has none (NaN): the time detectors skip it.
      ingest::ParsedLines parsed = ingest::ParseJsonLines(chunk, NAN, limits);
      for (const ingest::LineError& e : parsed.errors) {
        std::fprintf(stderr, "trainwatch detect: %s:%llu: %s\n", path.c_str(),
                     static_cast<unsigned long long>(first_line + e.line), e.message.c_str());
        ++bad_lines;
      }
      for (const v1::RunBatch& batch : parsed.request.runs()) {
        const std::string key = batch.project() + '\x1f' + batch.run();
        auto it = runs.find(key);
        if (it == runs.end()) {
          it = runs.emplace(key, std::make_unique<alerting::RunMonitor>(batch.project(),
                                                                        batch.run(), rules))
                   .first;
        }
        events.clear();
        it->second->ObserveBatch(batch, &events);
        for (const alerting::AlertEvent& e : events) {
          if (e.type == alerting::AlertEvent::Type::kResolved && !show_resolved) continue;
          std::printf("%s\n", alerting::AlertEventToJson(batch.run(), e).c_str());
        }
      }
      first_line += static_cast<uint64_t>(std::count(chunk.begin(), chunk.end(), '\n'));
    };
    std::string buffer;
    std::vector<char> block(kChunkBytes);
    while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
      buffer.append(block.data(), static_cast<size_t>(in.gcount()));
      const size_t last_newline = buffer.rfind('\n');
      if (last_newline == std::string::npos) continue;  // a line longer than a block: read on
      detect(std::string_view(buffer).substr(0, last_newline + 1));
      buffer.erase(0, last_newline + 1);
    }
    if (!buffer.empty()) detect(buffer);  // the last line had no newline
  }
  return bad_lines == 0 ? 0 : 1;
}

}  // namespace trainwatch::tools
