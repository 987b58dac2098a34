// `trainwatch export RUN --tfevents DIR`: a run as a TensorBoard event file (docs/tensorboard.md).
#pragma once

#include <string>
#include <vector>

namespace trainwatch::tools {

// argv after "export"; returns the process exit code.
int ExportCommand(const std::vector<std::string>& args);

}  // namespace trainwatch::tools
