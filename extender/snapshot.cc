#include "extender/snapshot.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

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

Result<Snapshot> ParseSnapshot(std::string_view text) {
  PHX_ASSIGN_OR_RETURN(json::Json doc, json::Parse(text, size_t{4} << 30));
  if (!doc.is_object()) return InvalidArgumentError("snapshot: expected a JSON object");
  Snapshot out;
  if (auto items = doc.find("items"); items != doc.end() && items->is_array()) {
    for (size_t i = 0; i < items->size(); ++i) {
      const json::Json& item = (*items)[i];
      const std::string kind = item.is_object() && item.contains("kind") && item["kind"].is_string()
                                   ? item["kind"].get<std::string>()
                                   : "";
      PHX_RETURN_IF_ERROR(AddItem(item, kind, fmt::format("items[{}] ({})", i, kind.empty() ? "no kind" : kind), out));
    }
    return out;
  }
  for (const auto& [key, kind] : {std::pair<const char*, const char*>{"nodes", "Node"}, {"pods", "Pod"},
                                  {"trainingJobs", "TrainingJob"}}) {
    auto list = doc.find(key);
    if (list == doc.end() || list->is_null()) continue;
    if (!list->is_array()) return InvalidArgumentError(fmt::format("snapshot.{}: expected an array", key));
    for (size_t i = 0; i < list->size(); ++i) {
      PHX_RETURN_IF_ERROR(AddItem((*list)[i], kind, fmt::format("{}[{}]", key, i), out));
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
