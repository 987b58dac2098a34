#include "keys_command.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "auth/audit_log.h"
#include "auth/key_store.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/file_system.h"
#include "common/json.h"
#include "flags.h"
#include "import_export_http.h"
#include "import_options.h"
#include "notify/notification.h"
#include "server/data_dir_lock.h"

namespace trainwatch::tools {
namespace {

constexpr const char* kKeysSynopsis =
    "usage: trainwatch keys create --name NAME [--scope read|write|admin] [--project P]... "
    "[--expires 30d]\n"
    "                              [--allow-from CIDR[,CIDR...]]\n"
    "       trainwatch keys list\n"
    "       trainwatch keys revoke NAME\n";
constexpr const char* kKeysDescription =
    "where: --server URL --api-key ADMIN_KEY (a running server)\n"
    "       [--tls-ca FILE] (the CA of an https:// server)\n"
    "   or: --data-dir DIR (a stopped server's data directory)\n"
    "create prints the new key once; only its hash is kept.\n";

// keys and audit have no default server (--server or --data-dir) and no default project.
ServerFlags NoDefaults() {
  ServerFlags link;
  link.project.clear();
  link.server.clear();
  return link;
}

struct KeysFlags {
  std::string action, name, scope = "read", expires, data_dir, allow_from;
  std::string revoke_name;  // `keys revoke NAME`
  std::vector<std::string> projects;
  ServerFlags link = NoDefaults();
};

// Where the keys are: a running server or a stopped server's data directory.
void AddLocationFlags(FlagSet* set, ServerFlags* link, std::string* data_dir) {
  AddServerFlags(set, link, /*with_project=*/false);
  set->Add(StringFlag("--data-dir", "DIR", "a stopped server's data directory, instead of --server",
                      data_dir));
}

void AddKeysFlags(FlagSet* set, KeysFlags* f) {
  set->SetSynopsis(kKeysSynopsis);
  set->AddPositional("ACTION", &f->action);
  set->AddPositional("NAME", &f->revoke_name, /*required=*/false);
  set->Add(StringFlag("--name", "NAME", "the key's name (create; revoke takes it as NAME too)",
                      &f->name));
  set->Add(StringFlag("--scope", "SCOPE", "read, write or admin (default read)", &f->scope));
  set->Add(ListFlag("--project", "P",
                    "a project the key may use; repeatable (default: every project)",
                    &f->projects));
  set->Add(StringFlag("--expires", "D",
                      "the key expires after this long, e.g. 30d (default: never)", &f->expires));
  set->Add(StringFlag("--allow-from", "CIDR[,CIDR...]",
                      "networks the key may be used from (default: any)", &f->allow_from));
  AddLocationFlags(set, &f->link, &f->data_dir);
}

// What the table cannot say: which action takes which argument, and that a place is needed.
Status CheckKeysFlags(KeysFlags* flags) {
  KeysFlags& f = *flags;
  if (f.action != "create" && f.action != "list" && f.action != "revoke") {
    return Status::InvalidArgument("unknown action '" + f.action + "'");
  }
  if (!f.revoke_name.empty()) {
    if (f.action != "revoke" || !f.name.empty()) {
      return Status::InvalidArgument("unexpected argument '" + f.revoke_name + "'");
    }
    f.name = f.revoke_name;
  }
  if ((f.action == "create" || f.action == "revoke") && f.name.empty()) {
    return Status::InvalidArgument(f.action + " needs a key name");
  }
  if (f.data_dir.empty() && f.link.server.empty())
    return Status::InvalidArgument("give --server URL or --data-dir DIR");
  return Status::Ok();
}

std::string FormatTime(double unix_seconds) {
  return unix_seconds > 0 ? notify::FormatRfc3339(unix_seconds) : "never";
}

void PrintKey(const std::string& name, const std::string& scope,
              const std::vector<std::string>& projects, double expires_at) {
  std::string list;
  for (const std::string& p : projects) list += (list.empty() ? "" : ",") + p;
  std::printf("%-24s %-6s projects=%-20s expires=%s\n", name.c_str(), scope.c_str(),
              list.empty() ? "*" : list.c_str(), FormatTime(expires_at).c_str());
}

// A stopped data directory: the lock proves no server holds it. Changes are audited as the
// server would (key "(local)", address "cli").
Status OnDataDir(const KeysFlags& f) {
  TW_ASSIGN_OR_RETURN(auto lock, server::DataDirLock::Acquire(f.data_dir));
  SystemClock clock;
  Logger logger(LogLevel::kError);
  TW_ASSIGN_OR_RETURN(
      auto keys, auth::KeyStore::Open(PosixFileSystem(), auth::KeyFilePath(f.data_dir), clock));
  TW_ASSIGN_OR_RETURN(
      auto audit,
      auth::AuditLog::Open(PosixFileSystem(), auth::AuditDir(f.data_dir), clock, logger, 0));
  auto record = [&](const std::string& action, const std::string& target, const Status& outcome) {
    return audit->AppendNow({0, "(local)", "cli", action, target, outcome.ok() ? 200 : 400,
                             outcome.ok() ? "" : outcome.message()});
  };
  if (f.action == "list") {
    for (const auth::KeyRecord& k : keys->List())
      PrintKey(k.name, std::string(auth::ScopeName(k.scope)), k.projects, k.expires_at);
    return Status::Ok();
  }
  if (f.action == "revoke") {
    Status revoked = keys->Revoke(f.name);
    TW_RETURN_IF_ERROR(record("keys.revoke", "key=" + f.name, revoked));
    TW_RETURN_IF_ERROR(revoked);
    std::printf("revoked %s\n", f.name.c_str());
    return Status::Ok();
  }
  auth::Scope scope;
  if (!auth::ParseScope(f.scope, &scope))
    return Status::InvalidArgument("--scope must be read, write or admin");
  double expires_at = 0;
  if (!f.expires.empty()) {
    TW_ASSIGN_OR_RETURN(double seconds, ParseDuration(f.expires));
    expires_at = clock.NowUnixSeconds() + seconds;
  }
  Result<CidrList> networks = CidrList::Parse(f.allow_from);
  if (!networks.ok()) return networks.status().WithContext("--allow-from");
  Result<auth::NewKey> created =
      keys->Create(f.name, scope, f.projects, expires_at, std::move(*networks));
  TW_RETURN_IF_ERROR(
      record("keys.create", "key=" + f.name + " scope=" + f.scope, created.status()));
  if (!created.ok()) return created.status();
  std::printf("%s\n", created->key.c_str());
  return Status::Ok();
}

Result<nlohmann::json> Answer(const Result<HttpReply>& reply, const std::string& what) {
  if (!reply.ok()) return reply.status();
  Result<nlohmann::json> doc = ParseJson(reply->body);
  if (reply->status != 200) {
    std::string why = doc.ok() && doc->is_object() && (*doc)["error"].is_string()
                          ? (*doc)["error"].get<std::string>()
                          : reply->body;
    return Status::InvalidArgument(what + ": HTTP " + std::to_string(reply->status) + ": " + why);
  }
  return doc;
}

// A running server, through its admin API.
Status OnServer(const KeysFlags& f) {
  HttpClient http(f.link.server, f.link.api_key, f.link.tls_ca_file);
  if (f.action == "list") {
    TW_ASSIGN_OR_RETURN(nlohmann::json doc, Answer(http.Get("/api/v1/keys"), "listing keys"));
    for (const nlohmann::json& k : doc["keys"]) {
      PrintKey(k["name"], k["scope"], k["projects"],
               k["expires_at"].is_number() ? k["expires_at"].get<double>() : 0);
    }
    return Status::Ok();
  }
  if (f.action == "revoke") {
    TW_RETURN_IF_ERROR(
        Answer(http.Post("/api/v1/keys/revoke", nlohmann::json{{"name", f.name}}.dump()),
               "revoking " + f.name)
            .status());
    std::printf("revoked %s\n", f.name.c_str());
    return Status::Ok();
  }
  nlohmann::json body = {{"name", f.name}, {"scope", f.scope}, {"projects", f.projects}};
  if (!f.expires.empty()) body["expires"] = f.expires;
  if (!f.allow_from.empty()) body["allow_from"] = f.allow_from;
  TW_ASSIGN_OR_RETURN(nlohmann::json doc,
                      Answer(http.Post("/api/v1/keys", body.dump()), "creating " + f.name));
  std::printf("%s\n", doc["key"].get<std::string>().c_str());
  return Status::Ok();
}

constexpr const char* kAuditDescription =
    "where: --server URL --api-key ADMIN_KEY [--tls-ca FILE],\n"
    "   or: --data-dir DIR (a stopped server's data directory)\n"
    "Prints the audit log, newest first: time, key, client address, action, target, outcome.\n";

struct AuditFlags {
  auth::AuditQuery query;
  int64_t limit = 100;
  std::string data_dir;
  ServerFlags link = NoDefaults();
};

void AddAuditFlags(FlagSet* set, AuditFlags* f) {
  set->Add(StringFlag("--key", "NAME", "only what this key did", &f->query.key));
  set->Add(StringFlag("--action", "PREFIX",
                      "only actions that start with PREFIX (keys., runs.delete, ...)",
                      &f->query.action));
  set->Add(SwitchFlag("--failures", "only refusals and failures", &f->query.failures_only));
  set->Add(IntegerFlag("--limit", "N", "at most N entries (default 100)", &f->limit, 0));
  AddLocationFlags(set, &f->link, &f->data_dir);
}

void PrintEntry(const auth::AuditEntry& e) {
  std::printf("%s  %-16s %-15s %-32s %-24s %d%s%s\n", FormatTime(e.time).c_str(),
              e.key.empty() ? "-" : e.key.c_str(), e.remote.c_str(), e.action.c_str(),
              e.target.empty() ? "-" : e.target.c_str(), e.outcome, e.detail.empty() ? "" : "  ",
              e.detail.c_str());
}

Status Audit(AuditFlags f) {
  auth::AuditQuery& q = f.query;
  q.limit = static_cast<size_t>(std::max<int64_t>(1, f.limit));
  const std::string& data_dir = f.data_dir;
  if (!data_dir.empty()) {
    TW_ASSIGN_OR_RETURN(auto lock, server::DataDirLock::Acquire(data_dir));
    SystemClock clock;
    Logger logger(LogLevel::kError);
    TW_ASSIGN_OR_RETURN(
        auto audit,
        auth::AuditLog::Open(PosixFileSystem(), auth::AuditDir(data_dir), clock, logger, 0));
    TW_ASSIGN_OR_RETURN(std::vector<auth::AuditEntry> entries, audit->Read(q));
    for (const auth::AuditEntry& e : entries) PrintEntry(e);
    return Status::Ok();
  }
  if (f.link.server.empty()) return Status::InvalidArgument("give --server URL or --data-dir DIR");
  HttpClient http(f.link.server, f.link.api_key, f.link.tls_ca_file);
  std::string path =
      "/api/v1/audit?limit=" + std::to_string(q.limit) + (q.failures_only ? "&failures=1" : "");
  if (!q.key.empty()) path += "&key=" + UrlEncode(q.key);
  if (!q.action.empty()) path += "&action=" + UrlEncode(q.action);
  TW_ASSIGN_OR_RETURN(nlohmann::json doc, Answer(http.Get(path), "reading the audit log"));
  for (const nlohmann::json& j : doc["entries"]) {
    PrintEntry(auth::AuditEntry{j["time"], j["key"], j["remote"], j["action"], j["target"],
                                j["outcome"], j.value("detail", "")});
  }
  return Status::Ok();
}

}  // namespace

int AuditCommand(const std::vector<std::string>& args) {
  AuditFlags flags;
  FlagSet set("audit", kAuditDescription);
  AddAuditFlags(&set, &flags);
  if (auto exit_code = ParseCommandLine(set, args)) return *exit_code;
  Status s = Audit(std::move(flags));
  if (!s.ok()) {
    std::fprintf(stderr, "trainwatch audit: %s\n%s", s.message().c_str(),
                 s.code() == StatusCode::kInvalidArgument ? set.Usage().c_str() : "");
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

int KeysCommand(const std::vector<std::string>& args) {
  KeysFlags flags;
  FlagSet set("keys", kKeysDescription);
  AddKeysFlags(&set, &flags);
  if (auto exit_code = ParseCommandLine(set, args)) return *exit_code;
  if (Status s = CheckKeysFlags(&flags); !s.ok()) {
    std::fprintf(stderr, "trainwatch keys: %s\n%s", s.message().c_str(), set.Usage().c_str());
    return 2;
  }
  Status s = flags.data_dir.empty() ? OnServer(flags) : OnDataDir(flags);
  if (!s.ok()) {
    std::fprintf(stderr, "trainwatch keys: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace trainwatch::tools
