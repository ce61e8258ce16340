#include "tests/fakes/apiserver/crd_schema.h"

#include <cmath>
#include <functional>
#include <map>
#include <regex>

#include <fmt/format.h>

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;

// A CEL rule the fake knows: `self` -> whether it holds. Evaluated only when the value is
// present (as kube-apiserver: rules of an absent field do not run).
using CelRule = std::function<bool(const Json& self)>;

bool Has(const Json& o, const char* key) { return o.is_object() && o.contains(key) && !o[key].is_null(); }

// GPUs with at most 3 decimals (milli-GPUs): |x*1000 - round(x*1000)| <= 1e-6, written in base
// CEL as int()/double() conversions (phalanx.io_gpuqueues.yaml).
bool AtMostThreeDecimals(const Json& self) {
  if (!self.is_number()) return false;
  const double milli = self.get<double>() * 1000.0;
  // CEL int() of a double out of int64 range is an evaluation error: the rule fails.
  if (!std::isfinite(milli) || std::abs(milli) > 9.2e18) return false;
  const double rounded = static_cast<double>(static_cast<int64_t>(milli + 0.5));
  return milli - rounded <= 0.000001 && rounded - milli <= 0.000001;
}

const std::map<std::string, CelRule>& KnownRules() {
  static const std::map<std::string, CelRule> rules = {
      // phalanx.io_gpuqueues.yaml
      {"self * 1000.0 - double(int(self * 1000.0 + 0.5)) <= 0.000001 && double(int(self * 1000.0 + 0.5)) - "
       "self * 1000.0 <= 0.000001",
       AtMostThreeDecimals},
      {"!has(self.lendingLimit) || self.lendingLimit <= self.nominal",
       [](const Json& s) {
         return !Has(s, "lendingLimit") || (s["lendingLimit"].is_number() && Has(s, "nominal") &&
                                            s["lendingLimit"].get<double>() <= s["nominal"].get<double>());
       }},
      {"!has(self.parent) || !has(self.cohort)", [](const Json& s) { return !Has(s, "parent") || !Has(s, "cohort"); }},
      {"!has(self.spec.parent) || self.spec.parent != self.metadata.name",
       [](const Json& s) {
         if (!Has(s, "spec") || !Has(s["spec"], "parent")) return true;
         return !Has(s, "metadata") || s["metadata"].value("name", "") != s["spec"]["parent"];
       }},
      {"(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
       [](const Json& s) {
         const std::string op = s.value("operator", "");
         const bool set_op = op == "In" || op == "NotIn";
         return set_op == (Has(s, "values") && s["values"].is_array() && !s["values"].empty());
       }},
  };
  return rules;
}

// How kube-openapi prints a value in "Invalid value: ..." (Go's %#v of the decoded value).
std::string GoValue(const Json& v) {
  if (v.is_string()) return json::Dump(v);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == std::floor(d) && std::abs(d) < 1e21) return fmt::format("{}", static_cast<int64_t>(d));
    return fmt::format("{}", d);
  }
  if (v.is_object()) return "\"object\"";
  if (v.is_array()) return "\"array\"";
  return json::Dump(v);
}

std::string Number(double d) { return fmt::format("{}", d); }

bool IsDateTime(const std::string& s) {
  static const std::regex rfc3339(R"(^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$)");
  return std::regex_match(s, rfc3339);
}

class Validator {
 public:
  std::vector<SchemaError> errors;

  void Walk(const Json& schema, const Json& value, const std::string& path, bool in_metadata_root = false) {
    if (!schema.is_object()) return;
    if (value.is_null()) {
      if (!schema.value("nullable", false)) {
        Add(path, fmt::format("{}: Invalid value: \"null\": {} in body must be of type {}: \"null\"", path, path,
                              schema.value("type", "object")));
      }
      return;
    }
    if (!CheckType(schema, value, path)) return;  // nothing else means anything on a wrong type
    CheckScalar(schema, value, path);
    if (value.is_object()) {
      const bool metadata = in_metadata_root;
      if (schema.contains("required") && schema["required"].is_array()) {
        for (const Json& r : schema["required"]) {
          if (r.is_string() && !value.contains(r.get<std::string>())) {
            Add(Join(path, r.get<std::string>()), fmt::format("{}: Required value", Join(path, r.get<std::string>())));
          }
        }
      }
      const Json* props = schema.contains("properties") && schema["properties"].is_object() ? &schema["properties"]
                                                                                             : nullptr;
      const Json* additional = schema.contains("additionalProperties") && schema["additionalProperties"].is_object()
                                   ? &schema["additionalProperties"]
                                   : nullptr;
      for (const auto& [key, child] : value.items()) {
        if (metadata && key != "name" && key != "generateName") continue;  // the API server owns metadata
        if (props != nullptr && props->contains(key)) {
          Walk((*props)[key], child, Join(path, key), path.empty() && key == "metadata");
        } else if (additional != nullptr) {
          Walk(*additional, child, Join(path, key));
        }
      }
    } else if (value.is_array() && schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) Walk(schema["items"], value[i], fmt::format("{}[{}]", path, i));
    }
    // CEL rules run only on a value that passed the OpenAPI checks above it.
    if (schema.contains("x-kubernetes-validations") && schema["x-kubernetes-validations"].is_array()) {
      for (const Json& rule : schema["x-kubernetes-validations"]) {
        const std::string text = rule.value("rule", "");
        auto known = KnownRules().find(text);
        if (known == KnownRules().end() || known->second(value)) continue;
        const std::string message = rule.value("message", "failed rule: " + text);
        const std::string where = path.empty() ? "<nil>" : path;
        Add(path, fmt::format("{}: Invalid value: \"{}\": {}", where, TypeName(schema, value), message));
      }
    }
  }

 private:
  static std::string Join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

  static std::string TypeName(const Json& schema, const Json& value) {
    if (schema.contains("type") && schema["type"].is_string()) return schema["type"].get<std::string>();
    return value.is_object() ? "object" : value.is_array() ? "array" : value.is_string() ? "string" : "number";
  }

  void Add(const std::string& field, std::string message) { errors.push_back({field, std::move(message)}); }

  bool CheckType(const Json& schema, const Json& value, const std::string& path) {
    if (schema.value("x-kubernetes-int-or-string", false)) {
      if (value.is_string() || value.is_number_integer()) return true;
      Add(path, fmt::format("{}: Invalid value: {}: {} in body must be of type int-or-string", path, GoValue(value), path));
      return false;
    }
    if (!schema.contains("type") || !schema["type"].is_string()) return true;
    const std::string type = schema["type"].get<std::string>();
    bool ok = true;
    if (type == "object") ok = value.is_object();
    if (type == "array") ok = value.is_array();
    if (type == "string") ok = value.is_string();
    if (type == "boolean") ok = value.is_boolean();
    if (type == "number") ok = value.is_number();
    if (type == "integer") {
      ok = value.is_number_integer() ||
           (value.is_number_float() && value.get<double>() == std::floor(value.get<double>()));
    }
    if (!ok) {
      const std::string got = value.is_string()           ? "string"
                              : value.is_boolean()        ? "boolean"
                              : value.is_object()         ? "object"
                              : value.is_array()          ? "array"
                              : value.is_number_integer() ? "integer"
                                                          : "number";
      Add(path, fmt::format("{}: Invalid value: \"{}\": {} in body must be of type {}: \"{}\"", path, got, path, type, got));
    }
    return ok;
  }

  void CheckScalar(const Json& schema, const Json& value, const std::string& path) {
    if (value.is_number()) {
      const double v = value.get<double>();
      if (schema.contains("minimum") && schema["minimum"].is_number()) {
        const double min = schema["minimum"].get<double>();
        const bool exclusive = schema.value("exclusiveMinimum", false);
        if (exclusive ? v <= min : v < min) {
          Add(path, fmt::format("{}: Invalid value: {}: {} in body should be greater than {}{}", path, GoValue(value), path,
                                exclusive ? "" : "or equal to ", Number(min)));
        }
      }
      if (schema.contains("maximum") && schema["maximum"].is_number()) {
        const double max = schema["maximum"].get<double>();
        const bool exclusive = schema.value("exclusiveMaximum", false);
        if (exclusive ? v >= max : v > max) {
          Add(path, fmt::format("{}: Invalid value: {}: {} in body should be less than {}{}", path, GoValue(value), path,
                                exclusive ? "" : "or equal to ", Number(max)));
        }
      }
    }
    if (value.is_string()) {
      const std::string s = value.get<std::string>();
      if (schema.contains("maxLength") && schema["maxLength"].is_number_integer() &&
          static_cast<int64_t>(s.size()) > schema["maxLength"].get<int64_t>()) {
        Add(path, fmt::format("{}: Too long: may not be longer than {}", path, schema["maxLength"].get<int64_t>()));
      }
      if (schema.contains("minLength") && schema["minLength"].is_number_integer() &&
          static_cast<int64_t>(s.size()) < schema["minLength"].get<int64_t>()) {
        Add(path, fmt::format("{}: Invalid value: {}: {} in body should be at least {} chars long", path, GoValue(value), path,
                              schema["minLength"].get<int64_t>()));
      }
      if (schema.contains("pattern") && schema["pattern"].is_string()) {
        const std::string pattern = schema["pattern"].get<std::string>();
        if (!std::regex_search(s, std::regex(pattern))) {
          Add(path, fmt::format("{}: Invalid value: {}: {} in body should match '{}'", path, GoValue(value), path, pattern));
        }
      }
      if (schema.value("format", "") == "date-time" && !IsDateTime(s)) {
        Add(path, fmt::format("{}: Invalid value: {}: {} in body must be of type date-time: {}", path, GoValue(value),
                              path, GoValue(value)));
      }
    }
    if (value.is_array()) {
      if (schema.contains("maxItems") && schema["maxItems"].is_number_integer() &&
          static_cast<int64_t>(value.size()) > schema["maxItems"].get<int64_t>()) {
        Add(path, fmt::format("{}: Too many: {}: must have at most {} items", path, value.size(),
                              schema["maxItems"].get<int64_t>()));
      }
      if (schema.contains("minItems") && schema["minItems"].is_number_integer() &&
          static_cast<int64_t>(value.size()) < schema["minItems"].get<int64_t>()) {
        Add(path, fmt::format("{}: Invalid value: {}: {} in body should have at least {} items", path, value.size(), path,
                              schema["minItems"].get<int64_t>()));
      }
    }
    if (schema.contains("enum") && schema["enum"].is_array()) {
      bool found = false;
      std::string supported;
      for (const Json& e : schema["enum"]) {
        found |= e == value;
        supported += (supported.empty() ? "" : ", ") + json::Dump(e);
      }
      if (!found) Add(path, fmt::format("{}: Unsupported value: {}: supported values: {}", path, GoValue(value), supported));
    }
  }
};

}  // namespace

std::vector<SchemaError> ValidateAgainstSchema(const Json& schema, const Json& object) {
  Validator v;
  v.Walk(schema, object, "");
  return std::move(v.errors);
}

bool IsKnownCelRule(const std::string& rule) { return KnownRules().contains(rule); }

std::optional<ApiError> ValidateCustomResource(const KindInfo& kind, const Json& object) {
  if (kind.schemas.empty()) return std::nullopt;
  // The schema of the version the object is written in (the fake does no conversion).
  std::string version = kind.version;
  if (object.contains("apiVersion") && object["apiVersion"].is_string()) {
    const std::string api_version = object["apiVersion"].get<std::string>();
    version = api_version.substr(api_version.find('/') + 1);
  }
  auto schema = kind.schemas.find(version);
  if (schema == kind.schemas.end()) schema = kind.schemas.find(kind.version);
  if (schema == kind.schemas.end()) return std::nullopt;
  const std::vector<SchemaError> errors = ValidateAgainstSchema(*schema->second, object);
  if (errors.empty()) return std::nullopt;
  std::string name;
  if (object.contains("metadata") && object["metadata"].is_object()) name = object["metadata"].value("name", "");
  std::string why;
  std::vector<StatusCause> causes;
  for (const SchemaError& e : errors) {
    why += (why.empty() ? "" : ", ") + e.message;
    std::string detail = e.message.substr(std::min(e.message.size(), e.message.find(": ") + 2));
    causes.push_back({detail.rfind("Required value", 0) == 0 ? "FieldValueRequired" : "FieldValueInvalid", detail, e.field});
  }
  if (errors.size() > 1) why = "[" + why + "]";
  ApiError error = Invalid(kind.group, kind.kind, name, why);
  error.message = fmt::format("{}.{} \"{}\" is invalid: {}", kind.kind, kind.group, name, why);
  error.causes = std::move(causes);
  return error;
}

}  // namespace phalanx::fakes::apiserver
