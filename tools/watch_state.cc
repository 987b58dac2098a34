#include "watch_state.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/crc32c.h"
#include "common/file_system.h"
#include "common/json.h"

namespace trainwatch::tools {
namespace {

using nlohmann::json;
constexpr int kVersion = 1;

}  // namespace

Result<WatchState> LoadWatchState(const std::string& path) {
  FileSystem& fs = PosixFileSystem();
  if (!fs.Exists(path)) return Status::NotFound(path);
  TW_ASSIGN_OR_RETURN(std::string text, fs.ReadFile(path));
  json doc = ParseJsonOrDiscarded(text);  // anything but an object is refused below
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("watch state " + path + ": " + why +
                                   " (remove it to start over)");
  };
  if (!doc.is_object()) return bad("not a JSON object");
  if (doc.value("version", 0) != kVersion) return bad("version is not " + std::to_string(kVersion));
  WatchState state;
  try {
    state.logdir = doc.at("logdir").get<std::string>();
    state.server = doc.at("server").get<std::string>();
    state.project = doc.at("project").get<std::string>();
    for (const json& f : doc.at("files")) {
      WatchedFile w;
      w.path = f.at("path").get<std::string>();
      w.run = f.at("run").get<std::string>();
      w.dev = f.at("dev").get<uint64_t>();
      w.ino = f.at("ino").get<uint64_t>();
      w.head_len = f.at("head_len").get<uint32_t>();
      w.head_crc = f.at("head_crc").get<uint32_t>();
      w.offset = f.at("offset").get<uint64_t>();
      state.files[w.path] = std::move(w);
    }
    for (const auto& [id, r] : doc.at("runs").items()) {
      WatchedRun run;
      run.start_time_set = r.at("start_time_set").get<bool>();
      for (const auto& [tag, plugin] : r.at("tags").items()) {
        run.tags[tag] = {plugin.at("plugin").get<std::string>(),
                         plugin.at("data_class").get<int>()};
      }
      // Written since the per-tag purge; a state file from before has none (nothing goes back then
      // until each tag has been sent again).
      if (auto steps = r.find("steps"); steps != r.end()) {
        for (const auto& [tag, step] : steps->items()) run.steps[tag] = step.get<int64_t>();
      }
      state.runs[id] = std::move(run);
    }
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  return state;
}

Status SaveWatchState(const std::string& path, const WatchState& state) {
  json doc = {{"version", kVersion},
              {"logdir", state.logdir},
              {"server", state.server},
              {"project", state.project}};
  json files = json::array();
  for (const auto& [key, f] : state.files) {
    files.push_back({{"path", f.path},
                     {"run", f.run},
                     {"dev", f.dev},
                     {"ino", f.ino},
                     {"head_len", f.head_len},
                     {"head_crc", f.head_crc},
                     {"offset", f.offset}});
  }
  doc["files"] = std::move(files);
  json runs = json::object();
  for (const auto& [id, r] : state.runs) {
    json tags = json::object();
    for (const auto& [tag, plugin] : r.tags)
      tags[tag] = {{"plugin", plugin.first}, {"data_class", plugin.second}};
    runs[id] = {{"start_time_set", r.start_time_set},
                {"tags", std::move(tags)},
                {"steps", json(r.steps)}};
  }
  doc["runs"] = std::move(runs);
  FileSystem& fs = PosixFileSystem();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (!dir.empty()) TW_RETURN_IF_ERROR(fs.CreateDirs(dir));
  // File names are bytes: invalid UTF-8 is replaced (such a file is then read again after a
  // restart).
  return WriteFileAtomic(fs, path, doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
}

std::string DefaultWatchStatePath(const std::string& abs_logdir, const std::string& server,
                                  const std::string& project) {
  std::string base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::string(home) + "/.cache";
  } else {
    base = "/tmp";
  }
  const std::string key = abs_logdir + "\n" + server + "\n" + project;
  char hash[17];
  // Two CRCs over the key, for 64 bits: a name, not a security property.
  std::snprintf(hash, sizeof hash, "%08x%08x", crc32c::Value(key),
                crc32c::Extend(0x9e3779b9u, key.data(), key.size()));
  return base + "/trainwatch/watch/" + hash + ".json";
}

}  // namespace trainwatch::tools
