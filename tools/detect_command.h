// `trainwatch detect`: the server's detectors and rules over JSON-lines files, offline.
#pragma once

#include <string>
#include <vector>

namespace trainwatch::tools {

// argv after "detect"; returns the process exit code.
int DetectCommand(const std::vector<std::string>& args);

}  // namespace trainwatch::tools
