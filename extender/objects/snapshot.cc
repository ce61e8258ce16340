#include "extender/objects/snapshot.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/json/fast_json.h"

namespace phalanx::extender {
namespace {

Status AddItem(const json::Json& item, std::string_view kind, const std::string& where, Snapshot& out) {
  if (kind == "Node") {
    auto node = ParseNode(item);
    if (!node.ok()) return InvalidArgumentError(fmt::format("{}: {}", where, node.status().message()));
    out.nodes.push_back(std::move(*node));
  } else if (kind == "Pod") {
    auto pod = ParsePod(item);
    if (!pod.ok()) return InvalidArgumentError(fmt::format("{}: {}", where, pod.status().message()));
    out.pods.push_back(std::move(*pod));
  } else if (kind == "TrainingJob") {
    auto job = ParseTrainingJob(item);
    if (!job.ok()) return InvalidArgumentError(fmt::format("{}: {}", where, job.status().message()));
    out.training_jobs.push_back(std::move(*job));
  } else {
    out.skipped++;
  }
  return OkStatus();
}

}  // namespace

// The file is walked with simdjson on-demand and only one item at a time becomes a DOM: a
// 100,000-pod snapshot (~50 MB) as one nlohmann document peaked above 500 MB RSS, and the
// freed DOM stayed in the daemon's heap (bench/RESULTS.md, Extender).
Result<Snapshot> ParseSnapshot(std::string_view text) {
  json::FastJsonParser parser;
  PHX_ASSIGN_OR_RETURN(simdjson::ondemand::document * doc, parser.Iterate(text));
  simdjson::ondemand::object root;
  if (doc->get_object().get(root)) return InvalidArgumentError("snapshot: expected a JSON object");
  Snapshot out;
  bool have_items = false;
  for (auto field : root) {
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) return json::SimdjsonError(err, "snapshot");
    const char* kind = key == "items"          ? ""
                       : key == "nodes"        ? "Node"
                       : key == "pods"         ? "Pod"
                       : key == "trainingJobs" ? "TrainingJob"
                                               : nullptr;
    if (kind == nullptr) continue;  // apiVersion, kind, metadata, ...
    if (have_items && *kind != '\0') continue;  // a List's items win over the object form
    const std::string where_key(key);
    simdjson::ondemand::value value;
    if (auto err = field.value().get(value)) return json::SimdjsonError(err, "snapshot." + where_key);
    simdjson::ondemand::json_type type;
    if (auto err = value.type().get(type)) return json::SimdjsonError(err, "snapshot." + where_key);
    if (type == simdjson::ondemand::json_type::null) continue;
    if (type != simdjson::ondemand::json_type::array) {
      if (*kind == '\0') continue;  // the old reader ignored a non-array "items"
      return InvalidArgumentError(fmt::format("snapshot.{}: expected an array", where_key));
    }
    if (*kind == '\0') have_items = true;
    simdjson::ondemand::array list;
    if (auto err = value.get_array().get(list)) return json::SimdjsonError(err, "snapshot." + where_key);
    size_t i = 0;
    for (auto element : list) {
      const size_t at = i++;
      simdjson::ondemand::value item_value;
      if (auto err = element.get(item_value)) {
        return json::SimdjsonError(err, fmt::format("snapshot.{}[{}]", where_key, at));
      }
      simdjson::ondemand::object object;
      std::string_view raw;
      if (item_value.get_object().get(object) || object.raw_json().get(raw)) {
        if (*kind == '\0') {
          out.skipped++;  // not an object: no kind
          continue;
        }
        return InvalidArgumentError(fmt::format("{}[{}]: expected an object", where_key, at));
      }
      if (!parser.Contains(raw)) return InvalidArgumentError(fmt::format("{}[{}]: malformed JSON", where_key, at));
      auto item = json::Parse(raw);
      if (!item.ok()) return InvalidArgumentError(fmt::format("{}[{}]: {}", where_key, at, item.status().message()));
      std::string item_kind = kind;
      if (item_kind.empty() && item->contains("kind") && (*item)["kind"].is_string()) {
        item_kind = (*item)["kind"].get<std::string>();
      }
      const std::string where = *kind == '\0'
                                    ? fmt::format("items[{}] ({})", at, item_kind.empty() ? "no kind" : item_kind)
                                    : fmt::format("{}[{}]", where_key, at);
      PHX_RETURN_IF_ERROR(AddItem(*item, item_kind, where, out));
    }
  }
  return out;
}

Result<Snapshot> LoadSnapshotFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("--cluster-snapshot {}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  auto snap = ParseSnapshot(ss.str());
  if (!snap.ok()) return InvalidArgumentError(fmt::format("--cluster-snapshot {}: {}", path, snap.status().message()));
  return snap;
}

}  // namespace phalanx::extender
