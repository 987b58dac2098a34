// The server's version: the project() version of the top-level CMakeLists.txt.
#pragma once

namespace trainwatch::server {

inline constexpr const char* kVersion = TRAINWATCH_VERSION;

}  // namespace trainwatch::server
