#include "extender/wire.h"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace phalanx::extender {
namespace {

using simdjson::ondemand::json_type;

Status WireError(std::string_view where, simdjson::error_code code) {
  return InvalidArgumentError(fmt::format("{}: {}", where, simdjson::error_message(code)));
}

Result<PodInfo> PodFromRaw(std::string_view raw) {
  PHX_ASSIGN_OR_RETURN(json::Json pod, json::Parse(raw));
  return ParsePod(pod);
}

// An empty body is the most common client mistake (a proxy or a test sending nothing);
// say so instead of the parser's "no JSON found".
Status RequireBody(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgumentError("request body is empty: expected a JSON object");
  }
  return OkStatus();
}

}  // namespace

namespace {

// Whether any of the 8 bytes may need escaping (a control byte, '"' or '\\'): false for most
// words of a node name, so the scan below takes 8 bytes a step. May say true for a word that
// needs nothing (borrows between bytes); never false for one that does.
bool MayNeedEscape(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto zero_byte = [&](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
  return ((w - kOnes * 0x20) & ~w & kHigh) | zero_byte(w ^ (kOnes * '"')) | zero_byte(w ^ (kOnes * '\\'));
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  // Node names never need escaping: copy runs of plain bytes at once (this loop is per name
  // of a 5,000-name reply), test 8 bytes a step, and escape only what must be.
  size_t run = 0, i = 0;
  while (i < s.size()) {
    if (i + 8 <= s.size()) {
      uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if (!MayNeedEscape(word)) {
        i += 8;
        continue;
      }
    }
    const char c = s[i];
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) {
      ++i;
      continue;
    }
    out.append(s.data() + run, i - run);
    run = ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += fmt::format("\\u{:04x}", static_cast<int>(c));
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

Result<FilterArgs> ParseFilterArgs(std::string_view body, json::FastJsonParser& parser) {
  PHX_RETURN_IF_ERROR(RequireBody(body));
  PHX_ASSIGN_OR_RETURN(simdjson::ondemand::document * doc, parser.Iterate(body));
  simdjson::ondemand::object root;
  if (auto err = doc->get_object().get(root)) return WireError("request body: expected an object", err);
  FilterArgs args;
  bool have_pod = false, have_names = false;
  for (auto field : root) {
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) return WireError("request body", err);
    simdjson::ondemand::value value;
    if (auto err = field.value().get(value)) return WireError(key, err);
    json_type type;
    if (auto err = value.type().get(type)) return WireError(key, err);
    if (key == "Pod") {
      if (type == json_type::null) return InvalidArgumentError("Pod: missing or null");
      if (type != json_type::object) return InvalidArgumentError("Pod: expected an object");
      simdjson::ondemand::object pod;
      if (auto err = value.get_object().get(pod)) return WireError("Pod", err);
      std::string_view raw;
      if (auto err = pod.raw_json().get(raw)) return WireError("Pod", err);
      PHX_ASSIGN_OR_RETURN(args.pod, PodFromRaw(raw));
      have_pod = true;
    } else if (key == "NodeNames") {
      if (type == json_type::null) continue;
      if (type != json_type::array) return InvalidArgumentError("NodeNames: expected an array of strings or null");
      simdjson::ondemand::array names;
      if (auto err = value.get_array().get(names)) return WireError("NodeNames", err);
      // A quoted name and its comma are rarely under 12 bytes: one allocation, not ~13 regrowths.
      args.node_names.reserve(body.size() / 12);
      for (auto item : names) {
        std::string_view name;
        if (auto err = item.get_string().get(name)) return WireError("NodeNames[]: expected a string", err);
        args.node_names.push_back(name);
      }
      have_names = true;
    } else if (key == "Nodes") {
      if (type == json_type::null) continue;
      if (type != json_type::object) return InvalidArgumentError("Nodes: expected a NodeList object or null");
      simdjson::ondemand::object list;
      if (auto err = value.get_object().get(list)) return WireError("Nodes", err);
      for (auto lf : list) {
        std::string_view lk;
        if (auto err = lf.unescaped_key().get(lk)) return WireError("Nodes", err);
        if (lk != "items") continue;
        simdjson::ondemand::value items_value;
        if (auto err = lf.value().get(items_value)) return WireError("Nodes.items", err);
        json_type items_type;
        if (auto err = items_value.type().get(items_type)) return WireError("Nodes.items", err);
        if (items_type == json_type::null) continue;
        simdjson::ondemand::array items;
        if (auto err = items_value.get_array().get(items)) return WireError("Nodes.items: expected an array", err);
        for (auto item : items) {
          simdjson::ondemand::object node;
          if (auto err = item.get_object().get(node)) return WireError("Nodes.items[]: expected an object", err);
          std::string_view raw;
          if (auto err = node.raw_json().get(raw)) return WireError("Nodes.items[]", err);
          args.raw_nodes.push_back(raw);
        }
      }
      args.full_nodes = true;
    }
    // Unknown keys are ignored (newer schedulers may add fields).
  }
  if (!have_pod) return InvalidArgumentError("Pod: missing or null");
  if (args.full_nodes && !have_names) {
    // Node names of the full list: read each item's metadata.name.
    for (std::string_view raw : args.raw_nodes) {
      auto node = json::Parse(raw);
      if (!node.ok()) return InvalidArgumentError(fmt::format("Nodes.items[]: {}", node.status().message()));
      const auto* meta = node->contains("metadata") ? &(*node)["metadata"] : nullptr;
      if (!meta || !meta->is_object() || !meta->contains("name") || !(*meta)["name"].is_string()) {
        return InvalidArgumentError("Nodes.items[].metadata.name: missing");
      }
      // Views must outlive the temporary: find the name inside the raw text instead.
      const std::string name = (*meta)["name"].get<std::string>();
      const std::string quoted = "\"" + name + "\"";
      const size_t pos = raw.find(quoted);
      if (pos == std::string_view::npos) return InvalidArgumentError("Nodes.items[].metadata.name: escaped names are not supported");
      args.node_names.push_back(raw.substr(pos + 1, name.size()));
    }
  }
  return args;
}

Result<PreemptArgs> ParsePreemptArgs(std::string_view body) {
  PHX_RETURN_IF_ERROR(RequireBody(body));
  PHX_ASSIGN_OR_RETURN(json::Json doc, json::Parse(body));
  if (!doc.is_object()) return InvalidArgumentError("request body: expected an object");
  PreemptArgs args;
  auto pod = doc.find("Pod");
  if (pod == doc.end() || pod->is_null()) return InvalidArgumentError("Pod: missing or null");
  PHX_ASSIGN_OR_RETURN(args.pod, ParsePod(*pod));
  auto read_map = [&](const char* key, bool meta) -> Status {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) return OkStatus();
    if (!it->is_object()) return InvalidArgumentError(fmt::format("{}: expected an object or null", key));
    args.meta = meta;
    for (const auto& [node, victims] : it->items()) {
      auto& uids = args.victims[node];
      if (!victims.is_object()) return InvalidArgumentError(fmt::format("{}.{}: expected an object", key, node));
      if (auto n = victims.find("NumPDBViolations"); n != victims.end() && n->is_number_integer()) {
        args.pdb_violations[node] = n->get<int>();
      }
      auto pods = victims.find("Pods");
      if (pods == victims.end() || pods->is_null()) continue;
      if (!pods->is_array()) return InvalidArgumentError(fmt::format("{}.{}.Pods: expected an array", key, node));
      for (const auto& p : *pods) {
        std::string uid;
        if (meta) {
          if (!p.is_object() || !p.contains("UID") || !p["UID"].is_string()) {
            return InvalidArgumentError(fmt::format("{}.{}.Pods[].UID: missing", key, node));
          }
          uid = p["UID"].get<std::string>();
        } else {
          PHX_ASSIGN_OR_RETURN(PodInfo victim, ParsePod(p));
          uid = victim.uid.str();
          args.raw_pods.insert(uid);
        }
        uids.push_back(std::move(uid));
      }
    }
    return OkStatus();
  };
  PHX_RETURN_IF_ERROR(read_map("NodeNameToVictims", false));
  PHX_RETURN_IF_ERROR(read_map("NodeNameToMetaVictims", true));
  return args;
}

Result<BindArgs> ParseBindArgs(std::string_view body) {
  PHX_RETURN_IF_ERROR(RequireBody(body));
  PHX_ASSIGN_OR_RETURN(json::Json doc, json::Parse(body));
  if (!doc.is_object()) return InvalidArgumentError("request body: expected an object");
  BindArgs args;
  auto get = [&](const char* key, std::string& out, bool required) -> Status {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
      return required ? InvalidArgumentError(fmt::format("{}: missing", key)) : OkStatus();
    }
    if (!it->is_string()) return InvalidArgumentError(fmt::format("{}: expected a string", key));
    out = it->get<std::string>();
    if (required && out.empty()) return InvalidArgumentError(fmt::format("{}: empty", key));
    return OkStatus();
  };
  PHX_RETURN_IF_ERROR(get("PodName", args.pod_name, true));
  PHX_RETURN_IF_ERROR(get("PodNamespace", args.pod_namespace, true));
  PHX_RETURN_IF_ERROR(get("PodUID", args.pod_uid, false));
  PHX_RETURN_IF_ERROR(get("Node", args.node, true));
  return args;
}

std::string EncodeFilterResult(const FilterResult& r) {
  std::string out;
  size_t size = 64 + r.passed.size() * 24;
  for (const auto* entries : {&r.failed, &r.unresolvable})
    for (const auto& [node, reason] : *entries) size += node.size() + reason.str().size() + 8;
  out.reserve(size);
  // Each distinct reason escaped once (entries share a handful of them); past a few
  // distinct ones the lookup would cost more than the escape.
  std::vector<std::pair<const void*, std::string>> escaped;
  auto append_reason = [&](const FailReason& reason) {
    for (const auto& [id, text] : escaped) {
      if (id == reason.id()) {
        out += text;
        return;
      }
    }
    if (escaped.size() >= 8) return AppendJsonString(out, reason.str());
    std::string text;
    AppendJsonString(text, reason.str());
    out += text;
    escaped.emplace_back(reason.id(), std::move(text));
  };
  auto map = [&](const char* key, const std::vector<std::pair<std::string_view, FailReason>>& entries) {
    out += '"';
    out += key;
    out += "\":{";
    bool first = true;
    for (const auto& [node, reason] : entries) {
      if (!first) out += ',';
      first = false;
      AppendJsonString(out, node);
      out += ':';
      append_reason(reason);
    }
    out += '}';
  };
  out += '{';
  if (r.full_nodes) {
    out += "\"Nodes\":{\"metadata\":{},\"items\":[";
    for (size_t i = 0; i < r.passed_raw.size(); ++i) {
      if (i) out += ',';
      out += r.passed_raw[i];
    }
    out += "]},\"NodeNames\":null,";
  } else {
    out += "\"Nodes\":null,\"NodeNames\":[";
    for (size_t i = 0; i < r.passed.size(); ++i) {
      if (i) out += ',';
      AppendJsonString(out, r.passed[i]);
    }
    out += "],";
  }
  map("FailedNodes", r.failed);
  out += ',';
  map("FailedAndUnresolvableNodes", r.unresolvable);
  out += ",\"Error\":";
  AppendJsonString(out, r.error);
  out += '}';
  return out;
}

std::string EncodeHostPriorities(const std::vector<HostScore>& scores) {
  std::string out;
  out.reserve(2 + scores.size() * 40);
  out += '[';
  for (size_t i = 0; i < scores.size(); ++i) {
    if (i) out += ',';
    out += "{\"Host\":";
    AppendJsonString(out, scores[i].host);
    out += ",\"Score\":";
    const int score = scores[i].score;
    if (score >= 0 && score <= 9) out += static_cast<char>('0' + score);  // 0..10: no allocation
    else out += std::to_string(score);
    out += '}';
  }
  out += ']';
  return out;
}

std::string EncodePreemptResult(const PreemptResult& r, const PreemptArgs& args) {
  // kube-scheduler reads only NodeNameToMetaVictims from the reply, whatever nodeCacheCapable
  // says (HTTPExtender.ProcessPreemption: "Extender will always return NodeNameToMetaVictims"),
  // and resolves each UID against its own cache of the node. In full mode only pods it sent for
  // that node are named, as before.
  std::string out = "{\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":{";
  bool first_node = true;
  for (const auto& [node, uids] : r.victims) {
    if (!first_node) out += ',';
    first_node = false;
    AppendJsonString(out, node);
    out += ":{\"Pods\":[";
    bool first = true;
    for (const std::string& uid : uids) {
      if (!r.meta && !args.raw_pods.contains(uid)) continue;  // not offered by the scheduler
      if (!first) out += ',';
      first = false;
      out += "{\"UID\":";
      AppendJsonString(out, uid);
      out += '}';
    }
    auto pdb = r.pdb_violations.find(node);
    out += "],\"NumPDBViolations\":";
    out += std::to_string(pdb == r.pdb_violations.end() ? 0 : pdb->second);
    out += '}';
  }
  out += "}}";
  return out;
}

std::string EncodeBindResult(std::string_view error) {
  std::string out = "{\"Error\":";
  AppendJsonString(out, error);
  out += '}';
  return out;
}

}  // namespace phalanx::extender
