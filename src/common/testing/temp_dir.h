// A scratch directory for tests.
#pragma once

#include <string>
#include <string_view>

namespace trainwatch::test {

// Creates a fresh, empty directory under $TMPDIR (or /tmp) and removes it, with everything in
// it, on destruction. Aborts the process if the directory cannot be created: tests only.
// Not thread-safe; path() may be read from any thread.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Join(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace trainwatch::test
