// `trainwatch keys` (create, list and revoke API keys) and `trainwatch audit` (read the audit log),
// against a running server (its admin API, --server URL with an admin --api-key) or a stopped data
// directory (--data-dir DIR).
#pragma once

#include <string>
#include <vector>

namespace trainwatch::tools {

// argv after "keys"; returns the process exit code.
int KeysCommand(const std::vector<std::string>& args);
// argv after "audit".
int AuditCommand(const std::vector<std::string>& args);

}  // namespace trainwatch::tools
