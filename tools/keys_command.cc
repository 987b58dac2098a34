#include "keys_command.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <nlohmann/json.hpp>

#include "auth/key_store.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/file_system.h"
#include "common/json.h"
#include "import_export_http.h"
#include "server/data_dir_lock.h"

namespace trainwatch::tools {
namespace {

constexpr const char* kUsage =
    "usage: trainwatch keys create --name NAME [--scope read|write|admin] [--project P]... [--expires 30d]\n"
    "       trainwatch keys list\n"
    "       trainwatch keys revoke NAME\n"
    "where: --server URL --api-key ADMIN_KEY (a running server; TRAINWATCH_SERVER, TRAINWATCH_API_KEY)\n"
    "   or: --data-dir DIR (a stopped server's data directory)\n"
    "create prints the new key once; only its hash is kept.\n";

struct KeysFlags {
  std::string action, name, scope = "read", expires, server, api_key, data_dir;
  std::vector<std::string> projects;
};

Result<KeysFlags> ParseFlags(const std::vector<std::string>& args) {
  KeysFlags f;
  if (const char* s = std::getenv("TRAINWATCH_SERVER")) f.server = s;
  if (const char* k = std::getenv("TRAINWATCH_API_KEY")) f.api_key = k;
  if (args.empty()) return Status::InvalidArgument("missing action (create, list or revoke)");
  f.action = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string* value = a == "--name" ? &f.name : a == "--scope" ? &f.scope : a == "--expires" ? &f.expires
                       : a == "--server" ? &f.server : a == "--api-key" ? &f.api_key
                       : a == "--data-dir" ? &f.data_dir : nullptr;
    if (a == "--project") {
      if (i + 1 >= args.size()) return Status::InvalidArgument("--project needs a value");
      f.projects.push_back(args[++i]);
    } else if (value) {
      if (i + 1 >= args.size()) return Status::InvalidArgument(a + " needs a value");
      *value = args[++i];
    } else if (f.action == "revoke" && f.name.empty() && !a.starts_with("--")) {
      f.name = a;
    } else {
      return Status::InvalidArgument("unknown argument '" + a + "'");
    }
  }
  if (f.action != "create" && f.action != "list" && f.action != "revoke") {
    return Status::InvalidArgument("unknown action '" + f.action + "'");
  }
  if ((f.action == "create" || f.action == "revoke") && f.name.empty()) {
    return Status::InvalidArgument(f.action + " needs a key name");
  }
  if (f.data_dir.empty() && f.server.empty()) return Status::InvalidArgument("give --server URL or --data-dir DIR");
  return f;
}

std::string FormatTime(double unix_seconds) {
  if (unix_seconds <= 0) return "never";
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void PrintKey(const std::string& name, const std::string& scope, const std::vector<std::string>& projects,
              double expires_at) {
  std::string list;
  for (const std::string& p : projects) list += (list.empty() ? "" : ",") + p;
  std::printf("%-24s %-6s projects=%-20s expires=%s\n", name.c_str(), scope.c_str(),
              list.empty() ? "*" : list.c_str(), FormatTime(expires_at).c_str());
}

// A stopped data directory: the lock proves no server holds it.
Status OnDataDir(const KeysFlags& f) {
  TW_ASSIGN_OR_RETURN(auto lock, server::DataDirLock::Acquire(f.data_dir));
  SystemClock clock;
  TW_ASSIGN_OR_RETURN(auto keys, auth::KeyStore::Open(PosixFileSystem(), auth::KeyFilePath(f.data_dir), clock));
  if (f.action == "list") {
    for (const auth::KeyRecord& k : keys->List()) PrintKey(k.name, std::string(auth::ScopeName(k.scope)), k.projects, k.expires_at);
    return Status::Ok();
  }
  if (f.action == "revoke") {
    TW_RETURN_IF_ERROR(keys->Revoke(f.name));
    std::printf("revoked %s\n", f.name.c_str());
    return Status::Ok();
  }
  auth::Scope scope;
  if (!auth::ParseScope(f.scope, &scope)) return Status::InvalidArgument("--scope must be read, write or admin");
  double expires_at = 0;
  if (!f.expires.empty()) {
    TW_ASSIGN_OR_RETURN(double seconds, ParseDuration(f.expires));
    expires_at = clock.NowUnixSeconds() + seconds;
  }
  TW_ASSIGN_OR_RETURN(std::string key, keys->Create(f.name, scope, f.projects, expires_at));
  std::printf("%s\n", key.c_str());
  return Status::Ok();
}

Result<nlohmann::json> Answer(const Result<HttpReply>& reply, const std::string& what) {
  if (!reply.ok()) return reply.status();
  Result<nlohmann::json> doc = ParseJson(reply->body);
  if (reply->status != 200) {
    std::string why = doc.ok() && doc->is_object() && (*doc)["error"].is_string() ? (*doc)["error"].get<std::string>()
                                                                                  : reply->body;
    return Status::InvalidArgument(what + ": HTTP " + std::to_string(reply->status) + ": " + why);
  }
  return doc;
}

// A running server, through its admin API.
Status OnServer(const KeysFlags& f) {
  HttpClient http(f.server, f.api_key);
  if (f.action == "list") {
    TW_ASSIGN_OR_RETURN(nlohmann::json doc, Answer(http.Get("/api/v1/keys"), "listing keys"));
    for (const nlohmann::json& k : doc["keys"]) {
      PrintKey(k["name"], k["scope"], k["projects"], k["expires_at"].is_number() ? k["expires_at"].get<double>() : 0);
    }
    return Status::Ok();
  }
  if (f.action == "revoke") {
    TW_RETURN_IF_ERROR(Answer(http.Post("/api/v1/keys/revoke", nlohmann::json{{"name", f.name}}.dump()),
                              "revoking " + f.name)
                           .status());
    std::printf("revoked %s\n", f.name.c_str());
    return Status::Ok();
  }
  nlohmann::json body = {{"name", f.name}, {"scope", f.scope}, {"projects", f.projects}};
  if (!f.expires.empty()) body["expires"] = f.expires;
  TW_ASSIGN_OR_RETURN(nlohmann::json doc, Answer(http.Post("/api/v1/keys", body.dump()), "creating " + f.name));
  std::printf("%s\n", doc["key"].get<std::string>().c_str());
  return Status::Ok();
}

}  // namespace

int KeysCommand(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  Result<KeysFlags> flags = ParseFlags(args);
  if (!flags.ok()) {
    std::fprintf(stderr, "trainwatch keys: %s\n%s", flags.status().message().c_str(), kUsage);
    return 2;
  }
  Status s = flags->data_dir.empty() ? OnServer(*flags) : OnDataDir(*flags);
  if (!s.ok()) {
    std::fprintf(stderr, "trainwatch keys: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace trainwatch::tools
