// Shared by the fuzz targets (docs/development.md "Fuzzing"). A target is one
// LLVMFuzzerTestOneInput that feeds the input to a real decoder and checks its contract:
// it returns (never crashes, never lets an exception out), in bounded time and memory, and
// where an encoder exists, what it decodes survives a round trip. A broken contract aborts
// through FUZZ_CHECK so libFuzzer and the standalone smoke driver both report it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <unistd.h>

namespace phalanx::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void Fail(const char* file, int line, const char* what, std::string_view detail) {
  std::fprintf(stderr, "%s:%d: fuzz contract broken: %s\n  %.*s\n", file, line, what,
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// Readers that take a path (the trace readers) get the input through a file of this process's
// own, rewritten for every input.
inline const std::string& WriteTempFile(std::string_view bytes) {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    static std::string p = std::string(dir && *dir ? dir : "/tmp") + "/phalanx-fuzz-" + std::to_string(::getpid()) + ".in";
    std::atexit([] { ::unlink(p.c_str()); });
    return p;
  }();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) Fail(__FILE__, __LINE__, "cannot write the input file", path);
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    Fail(__FILE__, __LINE__, "short write of the input file", path);
  }
  std::fclose(f);
  return path;
}

}  // namespace phalanx::fuzz

#define FUZZ_CHECK(cond, detail) \
  do {                           \
    if (!(cond)) ::phalanx::fuzz::Fail(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
