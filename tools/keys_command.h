// `trainwatch keys`: create, list and revoke API keys, against a running server (its admin API,
// --server URL with an admin --api-key) or a stopped data directory (--data-dir DIR).
#pragma once

#include <string>
#include <vector>

namespace trainwatch::tools {

// argv after "keys"; returns the process exit code.
int KeysCommand(const std::vector<std::string>& args);

}  // namespace trainwatch::tools
