// `trainwatch import LOGDIR`: TensorBoard event files into a server (docs/tensorboard.md).
#pragma once

#include <string>
#include <vector>

namespace trainwatch::tools {

// argv after "import"; returns the process exit code.
int ImportCommand(const std::vector<std::string>& args);

}  // namespace trainwatch::tools
