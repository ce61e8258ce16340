#include "operator/api/field_reader.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace phalanx::op {

FieldReader::FieldReader(const json::Json* object, std::string path)
    : object_(object), path_(std::move(path)) {
  if (object_ != nullptr && object_->is_null()) object_ = nullptr;
  if (object_ != nullptr && !object_->is_object()) {
    Fail(fmt::format("{}: expected object, got {}", path_.empty() ? "<root>" : path_,
                     json::TypeName(*object_)));
    object_ = nullptr;
  }
}

void FieldReader::Fail(std::string message) {
  if (status_.ok()) status_ = InvalidArgumentError(std::move(message));
}

const json::Json* FieldReader::Find(std::string_view key) {
  if (object_ == nullptr) return nullptr;
  auto it = object_->find(key);
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<int64_t> FieldReader::Int(std::string_view key) {
  const json::Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(u);
  }
  // JSON from some clients writes 3.0 for 3; accept whole floats only.
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
  }
  Fail(fmt::format("{}: expected integer, got {}", Path(key), json::TypeName(*v)));
  return std::nullopt;
}

std::optional<std::string> FieldReader::String(std::string_view key) {
  const json::Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  Fail(fmt::format("{}: expected string, got {}", Path(key), json::TypeName(*v)));
  return std::nullopt;
}

std::optional<bool> FieldReader::Bool(std::string_view key) {
  const json::Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  Fail(fmt::format("{}: expected boolean, got {}", Path(key), json::TypeName(*v)));
  return std::nullopt;
}

std::optional<double> FieldReader::Number(std::string_view key) {
  const json::Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  Fail(fmt::format("{}: expected number, got {}", Path(key), json::TypeName(*v)));
  return std::nullopt;
}

const json::Json* FieldReader::Object(std::string_view key) {
  const json::Json* v = Find(key);
  if (v == nullptr) return nullptr;
  if (v->is_object()) return v;
  Fail(fmt::format("{}: expected object, got {}", Path(key), json::TypeName(*v)));
  return nullptr;
}

const json::Json* FieldReader::Raw(std::string_view key) { return Find(key); }

void FieldReader::RejectUnknown(std::initializer_list<std::string_view> known) {
  if (object_ == nullptr) return;
  for (auto it = object_->begin(); it != object_->end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      Fail(fmt::format("{}: unknown field", Path(it.key())));
      return;
    }
  }
}

}  // namespace phalanx::op
