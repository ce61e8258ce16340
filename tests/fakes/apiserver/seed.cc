#include "tests/fakes/apiserver/seed.h"

#include <fstream>
#include <sstream>

#include "tests/fakes/apiserver/patch.h"

namespace phalanx::fakes::apiserver {
namespace {

Status Flatten(json::Json doc, std::vector<json::Json>* out) {
  if (doc.is_null()) return OkStatus();  // empty YAML document
  if (doc.is_array()) {
    for (auto& item : doc) PHX_RETURN_IF_ERROR(Flatten(std::move(item), out));
    return OkStatus();
  }
  if (!doc.is_object()) return InvalidArgumentError("seed: expected objects, got " + std::string(json::TypeName(doc)));
  if (doc.contains("items") && doc["items"].is_array() && doc.value("kind", "").ends_with("List")) {
    for (auto& item : doc["items"]) PHX_RETURN_IF_ERROR(Flatten(std::move(item), out));
    return OkStatus();
  }
  out->push_back(std::move(doc));
  return OkStatus();
}

}  // namespace

Result<std::vector<json::Json>> ParseSeedDocument(std::string_view text) {
  std::vector<json::Json> out;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    auto parsed = json::Parse(text);
    if (!parsed.ok()) return parsed.status().WithContext("seed");
    PHX_RETURN_IF_ERROR(Flatten(std::move(parsed).value(), &out));
    return out;
  }
  auto docs = YamlDocumentsToJson(text);
  if (!docs.ok()) return docs.status().WithContext("seed");
  for (auto& doc : *docs) PHX_RETURN_IF_ERROR(Flatten(std::move(doc), &out));
  return out;
}

Result<std::vector<json::Json>> LoadSeedFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("seed file " + path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto objects = ParseSeedDocument(buffer.str());
  if (!objects.ok()) return objects.status().WithContext(path);
  return objects;
}

}  // namespace phalanx::fakes::apiserver
