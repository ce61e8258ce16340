#include "core/json/json.h"

#include <fmt/format.h>

namespace phalanx::json {

Result<Json> Parse(std::string_view text, size_t max_bytes) {
  if (text.size() > max_bytes) {
    return InvalidArgumentError(
        fmt::format("JSON document of {} bytes exceeds the limit of {} bytes", text.size(), max_bytes));
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.what() already names the byte offset and the offending token.
    return InvalidArgumentError(fmt::format("malformed JSON: {}", e.what()));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("malformed JSON: {}", e.what()));
  }
}

std::string Dump(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::string_view TypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "object";
    case Json::value_t::array: return "array";
    case Json::value_t::string: return "string";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer: return "integer";
    case Json::value_t::number_unsigned: return "unsigned integer";
    case Json::value_t::number_float: return "number";
    case Json::value_t::binary: return "binary";
    case Json::value_t::discarded: return "discarded";
  }
  return "unknown";
}

std::string JoinPath(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

const Json* Member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

namespace {

Result<const Json*> Find(const Json& object, std::string_view key, std::string_view path) {
  if (!object.is_object()) {
    return InvalidArgumentError(fmt::format("{}: expected object, got {}",
                                            path.empty() ? "<root>" : path, TypeName(object)));
  }
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return InvalidArgumentError(fmt::format("{}: required field missing", JoinPath(path, key)));
  }
  return &*it;
}

Status WrongType(std::string_view path, std::string_view key, std::string_view want, const Json& got) {
  return InvalidArgumentError(
      fmt::format("{}: expected {}, got {}", JoinPath(path, key), want, TypeName(got)));
}

}  // namespace

Result<std::string> GetString(const Json& object, std::string_view key, std::string_view path) {
  PHX_ASSIGN_OR_RETURN(const Json* v, Find(object, key, path));
  if (!v->is_string()) return WrongType(path, key, "string", *v);
  return v->get<std::string>();
}

Result<int64_t> GetInt(const Json& object, std::string_view key, std::string_view path) {
  PHX_ASSIGN_OR_RETURN(const Json* v, Find(object, key, path));
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) {
      return InvalidArgumentError(fmt::format("{}: {} is out of range", JoinPath(path, key), u));
    }
    return static_cast<int64_t>(u);
  }
  return WrongType(path, key, "integer", *v);
}

Result<uint64_t> GetUint(const Json& object, std::string_view key, std::string_view path) {
  PHX_ASSIGN_OR_RETURN(const Json* v, Find(object, key, path));
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) {
    return InvalidArgumentError(
        fmt::format("{}: expected a non-negative integer, got {}", JoinPath(path, key), v->get<int64_t>()));
  }
  return WrongType(path, key, "unsigned integer", *v);
}

Result<double> GetNumber(const Json& object, std::string_view key, std::string_view path) {
  PHX_ASSIGN_OR_RETURN(const Json* v, Find(object, key, path));
  if (!v->is_number()) return WrongType(path, key, "number", *v);
  return v->get<double>();
}

Result<bool> GetBool(const Json& object, std::string_view key, std::string_view path) {
  PHX_ASSIGN_OR_RETURN(const Json* v, Find(object, key, path));
  if (!v->is_boolean()) return WrongType(path, key, "boolean", *v);
  return v->get<bool>();
}

Result<const Json*> GetOptional(const Json& object, std::string_view key, std::string_view path,
                                Json::value_t type) {
  if (!object.is_object()) {
    return InvalidArgumentError(fmt::format("{}: expected object, got {}",
                                            path.empty() ? "<root>" : path, TypeName(object)));
  }
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return static_cast<const Json*>(nullptr);
  bool matches = it->type() == type ||
                 (type == Json::value_t::number_integer && it->is_number_unsigned()) ||
                 (type == Json::value_t::number_float && it->is_number());
  if (!matches) {
    Json want(type);
    return WrongType(path, key, TypeName(want), *it);
  }
  return &*it;
}

Result<const Json*> GetArray(const Json& object, std::string_view key, std::string_view path) {
  PHX_ASSIGN_OR_RETURN(const Json* v, Find(object, key, path));
  if (!v->is_array()) return WrongType(path, key, "array", *v);
  return v;
}

Result<const Json*> GetObject(const Json& object, std::string_view key, std::string_view path) {
  PHX_ASSIGN_OR_RETURN(const Json* v, Find(object, key, path));
  if (!v->is_object()) return WrongType(path, key, "object", *v);
  return v;
}

}  // namespace phalanx::json
