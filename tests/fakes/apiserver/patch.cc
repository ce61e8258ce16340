#include "tests/fakes/apiserver/patch.h"

#include <cstdlib>
#include <map>
#include <string>

#include <yaml-cpp/yaml.h>

namespace phalanx::fakes::apiserver {
namespace {

// Strategic-merge keys of the list fields Phalanx components patch.
const std::map<std::string, std::string, std::less<>>& MergeKeys() {
  static const auto* keys = new std::map<std::string, std::string, std::less<>>{
      {"conditions", "type"},      {"containers", "name"},      {"initContainers", "name"},
      {"ephemeralContainers", "name"}, {"volumes", "name"},     {"env", "name"},
      {"ports", "containerPort"},  {"volumeMounts", "mountPath"}, {"ownerReferences", "uid"},
      {"containerStatuses", "name"}, {"tolerations", "key"},  {"schedulingGates", "name"}};
  return *keys;
}

bool AllObjectsWithKey(const json::Json& list, const std::string& key) {
  for (const auto& item : list) {
    if (!item.is_object() || !item.contains(key)) return false;
  }
  return true;
}

void MergeList(json::Json& target, const json::Json& patch, const std::string& key) {
  for (const auto& item : patch) {
    bool merged = false;
    for (auto& existing : target) {
      if (existing[key] == item[key]) {
        MergeInto(existing, item, true);
        merged = true;
        break;
      }
    }
    if (!merged) target.push_back(item);
  }
}

json::Json YamlNodeToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json::Json out = json::Json::array();
      for (const auto& item : node) out.push_back(YamlNodeToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json::Json out = json::Json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = YamlNodeToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted: always a string
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      if (s == "null" || s == "~") return nullptr;
      if (!s.empty()) {
        char* end = nullptr;
        const long long i = std::strtoll(s.c_str(), &end, 10);
        if (*end == '\0') return i;
        const double d = std::strtod(s.c_str(), &end);
        if (*end == '\0' && s.find_first_of("0123456789") != std::string::npos) return d;
      }
      return s;
    }
  }
  return nullptr;
}

}  // namespace

Result<PatchType> PatchTypeFromContentType(std::string_view content_type) {
  const auto semi = content_type.find(';');
  std::string_view base = content_type.substr(0, semi);
  while (!base.empty() && base.back() == ' ') base.remove_suffix(1);
  if (base == "application/merge-patch+json") return PatchType::kMerge;
  if (base == "application/json-patch+json") return PatchType::kJson;
  if (base == "application/strategic-merge-patch+json") return PatchType::kStrategic;
  if (base == "application/apply-patch+yaml") return PatchType::kApply;
  return InvalidArgumentError("the server does not support the patch content type \"" +
                              std::string(content_type) + "\"");
}

void RemoveDroppedFields(json::Json& target, const json::Json& before, const json::Json& now) {
  if (!target.is_object() || !before.is_object()) return;
  for (const auto& [key, old_value] : before.items()) {
    auto target_it = target.find(key);
    if (target_it == target.end()) continue;
    auto now_it = now.is_object() ? now.find(key) : now.end();
    if (!now.is_object() || now_it == now.end()) {
      target.erase(key);
    } else if (old_value.is_object() && now_it->is_object()) {
      RemoveDroppedFields(*target_it, old_value, *now_it);
    }
  }
}

void MergeInto(json::Json& target, const json::Json& patch, bool strategic) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::Json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
      continue;
    }
    auto it = target.find(key);
    if (strategic && value.is_array() && it != target.end() && it->is_array()) {
      if (key == "finalizers") {
        for (const auto& f : value) {
          if (std::find(it->begin(), it->end(), f) == it->end()) it->push_back(f);
        }
        continue;
      }
      auto mk = MergeKeys().find(key);
      if (mk != MergeKeys().end() && AllObjectsWithKey(value, mk->second) &&
          AllObjectsWithKey(*it, mk->second)) {
        MergeList(*it, value, mk->second);
        continue;
      }
    }
    if (value.is_object() && it != target.end() && it->is_object()) {
      MergeInto(*it, value, strategic);
    } else if (value.is_object()) {
      json::Json fresh = json::Json::object();
      MergeInto(fresh, value, strategic);
      target[key] = std::move(fresh);
    } else {
      target[key] = value;
    }
  }
}

Result<json::Json> YamlToJson(std::string_view text) {
  try {
    return YamlNodeToJson(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("invalid YAML: ") + e.what());
  }
}

Result<std::vector<json::Json>> YamlDocumentsToJson(std::string_view text) {
  try {
    std::vector<json::Json> out;
    for (const auto& node : YAML::LoadAll(std::string(text))) out.push_back(YamlNodeToJson(node));
    return out;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("invalid YAML: ") + e.what());
  }
}

Result<json::Json> ApplyPatch(const json::Json& target, PatchType type, std::string_view body) {
  json::Json patch;
  if (type == PatchType::kApply) {
    PHX_ASSIGN_OR_RETURN(patch, YamlToJson(body));
  } else {
    auto parsed = json::Parse(body);
    if (!parsed.ok()) return InvalidArgumentError("invalid patch: " + parsed.status().message());
    patch = std::move(parsed).value();
  }
  switch (type) {
    case PatchType::kJson: {
      if (!patch.is_array()) return InvalidArgumentError("json patch must be an array of operations");
      try {
        return target.patch(patch);
      } catch (const json::Json::exception& e) {
        return FailedPreconditionError(std::string("the json patch could not be applied: ") +
                                       e.what());
      }
    }
    case PatchType::kMerge: {
      if (!patch.is_object()) return InvalidArgumentError("merge patch must be a JSON object");
      json::Json out = target;
      MergeInto(out, patch, false);
      return out;
    }
    case PatchType::kStrategic:
    case PatchType::kApply: {
      if (!patch.is_object()) return InvalidArgumentError("patch must be an object");
      json::Json out = target;
      MergeInto(out, patch, true);
      return out;
    }
  }
  return InvalidArgumentError("unknown patch type");
}

}  // namespace phalanx::fakes::apiserver
