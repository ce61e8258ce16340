#include "extender/verbs/wire.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>

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

// The text of a JSON string token (`"name"` and any spaces after it, as simdjson's
// raw_json_token gives it) when it has no escape sequence; nullopt otherwise (not a string,
// or escaped: the parser unescapes those).
std::optional<std::string_view> PlainStringToken(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' || token.back() == '\t')) {
    token.remove_suffix(1);
  }
  if (token.size() < 2 || token.front() != '"' || token.back() != '"') return std::nullopt;
  token = token.substr(1, token.size() - 2);
  if (token.find('\\') != std::string_view::npos) return std::nullopt;
  return token;
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

// Whether `s` goes into JSON as it is, between quotes: no control byte, '"' or '\\'. Words
// of 8 bytes (the last one overlapping the one before) answer for most names; a flagged
// word, or a name under 8 bytes, is decided byte by byte.
inline bool IsPlainJson(std::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  if (n >= 8) {
    uint64_t flagged = 0, word;
    for (size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&word, p + i, 8);
      flagged |= MayNeedEscape(word);
    }
    std::memcpy(&word, p + n - 8, 8);
    flagged |= MayNeedEscape(word);
    if (!flagged) return true;
  }
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return true;
}

// A reply whose size is counted before any byte is written: one allocation and no capacity
// check or call per piece. A 5,000-entry reply is ~15,000 pieces; appending them one by one
// to a std::string was ~10 % of a no-fit filter's server time (bench/RESULTS.md).
class SizedWriter {
 public:
  explicit SizedWriter(size_t size) : out_(size, '\0'), p_(out_.data()) {}
  void Put(std::string_view s) {
    Copy(p_, s.data(), s.size());
    p_ += s.size();
  }
  void Put(char c) { *p_++ = c; }
  void Quoted(std::string_view plain) {
    *p_++ = '"';
    Put(plain);
    *p_++ = '"';
  }
  // Everything counted must have been written: a mismatch is a bug, not a short reply.
  std::string Take() && {
    if (static_cast<size_t>(p_ - out_.data()) != out_.size()) std::abort();
    return std::move(out_);
  }

 private:
  std::string out_;
  char* p_;

  // Names and reasons are mostly 4..32 bytes: two fixed-size, overlapping moves each (inlined)
  // instead of a memcpy call per piece, three or four pieces per entry.
  static void Copy(char* dst, const char* src, size_t n) {
    if (n > 32) {
      std::memcpy(dst, src, n);
    } else if (n >= 16) {
      std::memcpy(dst, src, 16);
      std::memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
      std::memcpy(dst, src, 8);
      std::memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
      std::memcpy(dst, src, 4);
      std::memcpy(dst + n - 4, src + n - 4, 4);
    } else {
      for (size_t i = 0; i < n; ++i) dst[i] = src[i];
    }
  }
};

// Each distinct FailReason's JSON text (quotes included), escaped once. Entries come in runs
// of one reason, so the last one answers almost every call.
class EscapedReasons {
 public:
  const std::string& Of(const FailReason& reason) {
    if (last_ && last_->first == reason.id()) [[likely]] return last_->second;
    return Find(reason);
  }

 private:
  const std::string& Find(const FailReason& reason) {
    auto it = std::find_if(texts_.begin(), texts_.end(), [&](const auto& e) { return e.first == reason.id(); });
    if (it == texts_.end()) {
      std::string text;
      AppendJsonString(text, reason.str());
      it = texts_.emplace(texts_.end(), reason.id(), std::move(text));
    }
    last_ = &*it;
    return it->second;
  }
  std::deque<std::pair<const void*, std::string>> texts_;  // stable addresses for last_
  const std::pair<const void*, std::string>* last_ = nullptr;
};

constexpr std::string_view kNamesHead = "{\"Nodes\":null,\"NodeNames\":[";
constexpr std::string_view kFailedHead = "],\"FailedNodes\":{";
constexpr std::string_view kUnresolvableHead = "},\"FailedAndUnresolvableNodes\":{";
constexpr std::string_view kErrorHead = "},\"Error\":";

// NodeNames mode with every name plain (what kube-scheduler sends: DNS names): counted,
// then written. nullopt when a name needs escaping (the appending encoder handles it).
std::optional<std::string> EncodePlainFilterResult(const FilterResult& r) {
  using Entries = std::vector<std::pair<std::string_view, FailReason>>;
  EscapedReasons reasons;
  std::string error;
  AppendJsonString(error, r.error);
  size_t size = kNamesHead.size() + kFailedHead.size() + kUnresolvableHead.size() + kErrorHead.size() + error.size() + 1;
  for (std::string_view name : r.passed) {
    if (!IsPlainJson(name)) return std::nullopt;
    size += name.size() + 3;  // quotes, comma
  }
  for (const Entries* entries : {&r.failed, &r.unresolvable}) {
    for (const auto& [node, why] : *entries) {
      if (!IsPlainJson(node)) return std::nullopt;
      size += node.size() + 4 + reasons.Of(why).size();  // quotes, colon, comma
    }
  }
  // Each list counted one comma too many.
  for (size_t n : {r.passed.size(), r.failed.size(), r.unresolvable.size()}) size -= n > 0 ? 1 : 0;
  SizedWriter out(size);
  out.Put(kNamesHead);
  for (size_t i = 0; i < r.passed.size(); ++i) {
    if (i) out.Put(',');
    out.Quoted(r.passed[i]);
  }
  auto map = [&](const Entries& entries) {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out.Put(',');
      out.Quoted(entries[i].first);
      out.Put(':');
      out.Put(reasons.Of(entries[i].second));
    }
  };
  out.Put(kFailedHead);
  map(r.failed);
  out.Put(kUnresolvableHead);
  map(r.unresolvable);
  out.Put(kErrorHead);
  out.Put(error);
  out.Put('}');
  return std::move(out).Take();
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
      if (!parser.Contains(raw)) return InvalidArgumentError("Pod: malformed JSON");
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
        simdjson::ondemand::value v;
        if (auto err = item.get(v)) return WireError("NodeNames[]", err);
        // A name without escapes is the text between its quotes, viewed in place: no
        // unescaping copy into the parser's buffer, 5,000 times a request.
        const std::string_view token = v.raw_json_token();
        if (!parser.Contains(token)) return InvalidArgumentError("NodeNames[]: malformed JSON");
        if (auto name = PlainStringToken(token)) {
          args.node_names.push_back(*name);
          continue;
        }
        std::string_view name;
        if (auto err = v.get_string().get(name)) return WireError("NodeNames[]: expected a string", err);
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
          if (!parser.Contains(raw)) return InvalidArgumentError("Nodes.items[]: malformed JSON");
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
  if (r.encoded) return *r.encoded;
  if (!r.full_nodes) {
    if (auto plain = EncodePlainFilterResult(r)) return std::move(*plain);
  }
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
  // Counted, then written (SizedWriter); a name that needs escaping takes the appending path.
  constexpr std::string_view kHost = "{\"Host\":\"", kScore = "\",\"Score\":";
  auto digits = [](int score, char* buf) {
    return static_cast<size_t>(std::to_chars(buf, buf + 12, score).ptr - buf);
  };
  char buf[12];
  size_t size = 2;
  bool plain = true;
  for (const HostScore& s : scores) {
    if (!IsPlainJson(s.host)) {
      plain = false;
      break;
    }
    size += kHost.size() + s.host.size() + kScore.size() + digits(s.score, buf) + 2;  // '}' and ','
  }
  if (plain) {
    if (!scores.empty()) --size;  // no comma after the last
    SizedWriter out(size);
    out.Put('[');
    for (size_t i = 0; i < scores.size(); ++i) {
      if (i) out.Put(',');
      out.Put(kHost);
      out.Put(scores[i].host);
      out.Put(kScore);
      out.Put(std::string_view(buf, digits(scores[i].score, buf)));
      out.Put('}');
    }
    out.Put(']');
    return std::move(out).Take();
  }
  std::string out;
  out.reserve(2 + scores.size() * 40);
  out += '[';
  for (size_t i = 0; i < scores.size(); ++i) {
    if (i) out += ',';
    out += "{\"Host\":";
    AppendJsonString(out, scores[i].host);
    out += ",\"Score\":";
    out += std::to_string(scores[i].score);
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
