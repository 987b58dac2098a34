// `trainwatch watch LOGDIR`: tails TensorBoard event files into a server (docs/tensorboard.md).
#pragma once

#include <string>
#include <vector>

namespace trainwatch::tools {

// argv after "watch"; returns the process exit code.
int WatchCommand(const std::vector<std::string>& args);

}  // namespace trainwatch::tools
