#include "core/kube/raw_object.h"

#include <fmt/format.h>

namespace phalanx::kube {
namespace {

using simdjson::ondemand::object;

Status Fail(simdjson::error_code e, std::string_view what) { return json::SimdjsonError(e, what); }

// raw_json() keeps the whitespace that follows a value.
std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

Result<ObjectMeta> RawObjectReader::Meta(std::string_view object_json) {
  PHX_ASSIGN_OR_RETURN(simdjson::ondemand::document * doc, object_parser_.Iterate(object_json));
  object root;
  if (auto e = doc->get_object().get(root)) return Fail(e, "object");
  object meta;
  if (auto e = root.find_field_unordered("metadata").get_object().get(meta)) return Fail(e, "object metadata");
  ObjectMeta out;
  for (auto field : meta) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return Fail(e, "metadata key");
    std::string* dest = key == "namespace"         ? &out.ns
                        : key == "name"            ? &out.name
                        : key == "resourceVersion" ? &out.resource_version
                                                   : nullptr;
    if (dest == nullptr) continue;  // skipped without parsing
    std::string_view v;
    if (auto e = field.value().get_string().get(v)) return Fail(e, fmt::format("metadata.{}", key));
    dest->assign(v);
  }
  return out;
}

Result<RawListPage> RawObjectReader::ForEachItem(std::string_view page_json,
                                                 const std::function<void(std::string_view)>& fn) {
  PHX_ASSIGN_OR_RETURN(simdjson::ondemand::document * doc, page_parser_.Iterate(page_json));
  object root;
  if (auto e = doc->get_object().get(root)) return Fail(e, "list");
  RawListPage page;
  bool saw_items = false;
  for (auto field : root) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return Fail(e, "list key");
    if (key == "metadata") {
      object meta;
      if (auto e = field.value().get_object().get(meta)) return Fail(e, "list metadata");
      for (auto m : meta) {
        std::string_view k, v;
        if (auto e = m.unescaped_key().get(k)) return Fail(e, "list metadata key");
        if (k != "resourceVersion" && k != "continue") continue;
        if (auto e = m.value().get_string().get(v)) return Fail(e, fmt::format("list metadata.{}", k));
        (k == "continue" ? page.continue_token : page.resource_version).assign(v);
      }
    } else if (key == "items") {
      saw_items = true;
      simdjson::ondemand::value items_value;
      if (auto e = field.value().get(items_value)) return Fail(e, "items");
      simdjson::ondemand::json_type type;
      if (auto e = items_value.type().get(type)) return Fail(e, "items");
      if (type == simdjson::ondemand::json_type::null) continue;  // "items": null (empty list)
      simdjson::ondemand::array items;
      if (auto e = items_value.get_array().get(items)) return Fail(e, "items");
      for (auto item : items) {
        object obj;
        if (auto e = item.get_object().get(obj)) return Fail(e, "list item");
        std::string_view raw;
        if (auto e = obj.raw_json().get(raw)) return Fail(e, "list item");
        if (!page_parser_.Contains(raw)) return InvalidArgumentError("list item: malformed JSON");
        fn(TrimRight(raw));
      }
    }
  }
  if (!saw_items) return InvalidArgumentError("list: no items field");
  return page;
}

Status RawObjectReader::WatchLine(std::string_view line, std::string& type, std::string& object_json) {
  PHX_ASSIGN_OR_RETURN(simdjson::ondemand::document * doc, page_parser_.Iterate(line));
  object root;
  if (auto e = doc->get_object().get(root)) return Fail(e, "watch event");
  type.clear();
  object_json.clear();
  bool saw_object = false;
  for (auto field : root) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return Fail(e, "watch event key");
    if (key == "type") {
      std::string_view v;
      if (auto e = field.value().get_string().get(v)) return Fail(e, "watch event type");
      type.assign(v);
    } else if (key == "object") {
      object obj;
      if (auto e = field.value().get_object().get(obj)) return Fail(e, "watch event object");
      std::string_view raw;
      if (auto e = obj.raw_json().get(raw)) return Fail(e, "watch event object");
      if (!page_parser_.Contains(raw)) return InvalidArgumentError("watch event object: malformed JSON");
      object_json.assign(TrimRight(raw));
      saw_object = true;
    }
  }
  if (!saw_object) return InvalidArgumentError(fmt::format("watch event {} has no object", type));
  return OkStatus();
}

}  // namespace phalanx::kube
