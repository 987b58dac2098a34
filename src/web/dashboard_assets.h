// The web dashboard (web/dist, or a placeholder page when it was not built), embedded at build
// time. Defined in a source file that cmake/embed_assets.py generates into the build directory.
#pragma once

#include <span>

#include "web/embedded_asset.h"

namespace trainwatch::web {

// Every file, sorted by path; includes "/index.html". Valid for the whole program.
std::span<const EmbeddedAsset> DashboardAssets();

// True when the binary holds the "dashboard not built" placeholder instead of the app.
bool DashboardIsPlaceholder();

}  // namespace trainwatch::web
