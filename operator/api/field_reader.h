// FieldReader: reads the fields of one JSON object with its path, rejecting unknown keys
// and wrong types with messages such as "spec.failurePolicy.maxFailures: expected integer,
// got string". Used by the TrainingJob codec; the first error wins. Not thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/json/json.h"

namespace phalanx::op {

class FieldReader {
 public:
  // `object` may be null (absent): every read then yields nothing.
  FieldReader(const json::Json* object, std::string path);

  bool present() const { return object_ != nullptr; }
  const std::string& path() const { return path_; }
  std::string Path(std::string_view key) const { return json::JoinPath(path_, key); }

  std::optional<int64_t> Int(std::string_view key);
  std::optional<std::string> String(std::string_view key);
  std::optional<bool> Bool(std::string_view key);
  std::optional<double> Number(std::string_view key);
  // Present object (or null when absent); an error when present but not an object.
  const json::Json* Object(std::string_view key);
  const json::Json* Raw(std::string_view key);

  // Records an error for every key not in `known`.
  void RejectUnknown(std::initializer_list<std::string_view> known);
  void Fail(std::string message);

  const Status& status() const { return status_; }

 private:
  const json::Json* Find(std::string_view key);

  const json::Json* object_;
  std::string path_;
  Status status_;
};

}  // namespace phalanx::op
