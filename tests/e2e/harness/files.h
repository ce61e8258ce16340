// Small file helpers for end-to-end tests: a temporary directory removed on destruction (short
// paths under /tmp: unix sockets must stay under 108 characters), whole-file read and write.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>

namespace phalanx::e2e {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/phx-e2e-XXXXXX";
    if (const char* made = mkdtemp(tmpl)) path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty() && !keep_) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Keep the directory (logs) after the test, e.g. when it failed.
  void Keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

inline std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline bool WriteFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << content;
    if (!out.flush()) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

}  // namespace phalanx::e2e
