#include "tests/fakes/apiserver/store.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "tests/fakes/apiserver/crd_schema.h"
#include "tests/fakes/apiserver/store_internal.h"

namespace phalanx::fakes::apiserver {

using internal::Meta;
using internal::SpecPart;

namespace internal {

json::Json& Meta(json::Json& object) {
  auto it = object.find("metadata");
  if (it == object.end() || !it->is_object()) object["metadata"] = json::Json::object();
  return object["metadata"];
}

json::Json SpecPart(const json::Json& object) {
  json::Json copy = object;
  if (copy.is_object()) {
    copy.erase("metadata");
    copy.erase("status");
  }
  return copy;
}

std::string MetaString(const json::Json& object, const char* field) {
  auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return "";
  auto it = m->find(field);
  if (it == m->end() || !it->is_string()) return "";
  return it->get<std::string>();
}

bool HasFinalizers(const json::Json& object) {
  auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return false;
  auto it = m->find("finalizers");
  return it != m->end() && it->is_array() && !it->empty();
}

std::string HexEncode(std::string_view text) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() * 2);
  for (unsigned char c : text) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

bool HexDecode(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    auto nibble = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

}  // namespace internal

Store::Store(KindRegistry& kinds, StoreOptions options)
    : kinds_(kinds), options_(std::move(options)), rng_(std::random_device{}()) {}

Store::Table& Store::TableFor(const KindInfo& kind) {
  auto [it, inserted] = tables_.try_emplace(kind.storage_key());
  if (inserted) it->second.kind = kind;
  return it->second;
}

std::string Store::Now(std::chrono::seconds offset) const {
  const auto now = (options_.now ? options_.now() : std::chrono::system_clock::now()) + offset;
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string Store::NewUid() {
  const uint64_t a = rng_(), b = rng_();
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff,
                     a & 0xfff, 0x8000 | (b >> 48 & 0x3fff), b & 0xffffffffffffULL);
}

std::string Store::NextName(const std::string& prefix) {
  static const char* alphabet = "bcdfghjklmnpqrstvwxz2456789";  // as Kubernetes: no vowels
  std::string name = prefix;
  for (int i = 0; i < 5; ++i) name.push_back(alphabet[rng_() % 27]);
  return name;
}

uint64_t Store::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

uint64_t Store::WaitForChange(uint64_t after, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_until(lock, deadline, [&] { return rv_ > after; });
  return rv_;
}

void Store::IndexOwners(const ObjectPtr& prev, const ObjectPtr& next,
                        const std::string& storage_key) {
  if (prev) {
    for (const auto& uid : prev->owner_uids) {
      auto it = dependents_.find(uid);
      if (it == dependents_.end()) continue;
      it->second.erase({storage_key, prev->key()});
      if (it->second.empty()) dependents_.erase(it);
    }
  }
  if (next) {
    for (const auto& uid : next->owner_uids) dependents_[uid].insert({storage_key, next->key()});
  }
}

void Store::Record(Event event) {
  Broadcast(event);
  events_.push_back(std::move(event));
  while (events_.size() > options_.event_window) {
    compacted_rv_ = events_.front().rv;
    events_.pop_front();
  }
  changed_.notify_all();
}

ObjectPtr Store::Commit(Table& table, json::Json object, const ObjectPtr& prev) {
  const uint64_t rv = NextRv();
  Meta(object)["resourceVersion"] = std::to_string(rv);
  ObjectPtr stored = MakeStored(object);
  table.objects[stored->key()] = stored;
  IndexOwners(prev, stored, table.kind.storage_key());
  Record(Event{prev ? "MODIFIED" : "ADDED", rv, table.kind.storage_key(), stored, prev});
  return stored;
}

ObjectPtr Store::Remove(Table& table, const ObjectPtr& current, json::Json* last) {
  json::Json object = last != nullptr ? std::move(*last) : current->Parse();
  const uint64_t rv = NextRv();
  Meta(object)["resourceVersion"] = std::to_string(rv);
  ObjectPtr final_state = MakeStored(object);
  table.objects.erase(current->key());
  IndexOwners(current, nullptr, table.kind.storage_key());
  Record(Event{"DELETED", rv, table.kind.storage_key(), final_state, current});
  return final_state;
}

ApiResult<ObjectPtr> Store::Create(const KindInfo& kind, const std::string& namespace_,
                                   json::Json object) {
  std::lock_guard<std::mutex> lock(mu_);
  return CreateLocked(kind, namespace_, std::move(object));
}

ApiResult<ObjectPtr> Store::CreateLocked(const KindInfo& kind, const std::string& namespace_,
                                         json::Json object) {
  if (!object.is_object()) return BadRequest("the body of the request must be a JSON object");
  if (object.contains("kind") && object["kind"] != kind.kind) {
    return BadRequest(fmt::format("the kind of the object ({}) does not match the resource {} ({})",
                                  object["kind"].is_string() ? object["kind"].get<std::string>() : "?",
                                  kind.resource_name(), kind.kind));
  }
  object["kind"] = kind.kind;
  if (!object.contains("apiVersion")) object["apiVersion"] = kind.api_version();
  json::Json& meta = Meta(object);
  if (kind.namespaced) {
    std::string ns = namespace_;
    const std::string body_ns = internal::MetaString(object, "namespace");
    if (ns.empty()) ns = body_ns.empty() ? "default" : body_ns;
    if (!body_ns.empty() && body_ns != ns) {
      return BadRequest(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  std::string name = internal::MetaString(object, "name");
  if (name.empty()) {
    const std::string prefix = internal::MetaString(object, "generateName");
    if (prefix.empty()) {
      return Invalid(kind.group, kind.kind, "",
                     "metadata.name: Required value: name or generateName is required");
    }
    name = NextName(prefix);
    meta["name"] = name;
  }
  Table& table = TableFor(kind);
  const std::string key = (kind.namespaced ? meta["namespace"].get<std::string>() : "") + "/" + name;
  if (table.objects.count(key) != 0) return AlreadyExists(kind.group, kind.plural, name);

  meta["uid"] = NewUid();
  meta["creationTimestamp"] = Now();
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  meta.erase("managedFields");

  if (kind.group.empty() && kind.plural == "pods") {
    auto admitted = AdmitPodCreate(object);
    if (!IsOk(admitted)) return admitted;
  } else if (kind.group.empty() && kind.plural == "namespaces") {
    object["status"] = {{"phase", "Active"}};
  } else if (kind.group == "apiextensions.k8s.io" && kind.plural == "customresourcedefinitions") {
    const Status registered = kinds_.RegisterCrd(object);
    if (!registered.ok()) return Invalid(kind.group, kind.kind, name, registered.message());
    object["status"] = {
        {"conditions",
         {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"}},
          {{"type", "Established"}, {"status", "True"}, {"reason", "InitialNamesAccepted"}}}},
        {"acceptedNames", object["spec"]["names"]},
        {"storedVersions", json::Json::array({internal::StorageVersionOf(object)})}};
  } else if (kind.has_status && !(kind.group.empty() && kind.plural == "nodes")) {
    object.erase("status");  // status is written through /status only
  }
  if (auto invalid = ValidateCustomResource(kind, object)) return *invalid;
  return Commit(table, std::move(object), nullptr);
}

ApiResult<ObjectPtr> Store::Seed(const KindInfo& kind, json::Json object) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!object.is_object()) return BadRequest("seed object must be a JSON object");
  object["kind"] = kind.kind;
  if (!object.contains("apiVersion")) object["apiVersion"] = kind.api_version();
  json::Json& meta = Meta(object);
  const std::string name = internal::MetaString(object, "name");
  if (name.empty()) return BadRequest("seed object without metadata.name");
  if (kind.namespaced) {
    if (internal::MetaString(object, "namespace").empty()) meta["namespace"] = "default";
  } else {
    meta.erase("namespace");
  }
  if (internal::MetaString(object, "uid").empty()) meta["uid"] = NewUid();
  if (internal::MetaString(object, "creationTimestamp").empty()) meta["creationTimestamp"] = Now();
  if (!meta.contains("generation")) meta["generation"] = 1;
  if (kind.group == "apiextensions.k8s.io" && kind.plural == "customresourcedefinitions") {
    const Status registered = kinds_.RegisterCrd(object);
    if (!registered.ok()) return Invalid(kind.group, kind.kind, name, registered.message());
  }
  Table& table = TableFor(kind);
  const std::string key =
      (kind.namespaced ? meta["namespace"].get<std::string>() : std::string()) + "/" + name;
  auto it = table.objects.find(key);
  return Commit(table, std::move(object), it == table.objects.end() ? nullptr : it->second);
}

ApiResult<ObjectPtr> Store::Get(const KindInfo& kind, const std::string& namespace_,
                                const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  Table& table = TableFor(kind);
  auto it = table.objects.find((kind.namespaced ? namespace_ : "") + "/" + name);
  if (it == table.objects.end()) return NotFound(kind.group, kind.plural, name);
  return it->second;
}

ApiResult<ListResult> Store::List(const KindInfo& kind, const ListOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  Table& table = TableFor(kind);
  ListResult result;
  uint64_t snapshot = rv_;
  std::string after;
  bool has_after = false;
  // The list continues at the first page's version: objects changed since then are shown as
  // they were, reconstructed from the event history (the first event after the snapshot holds
  // each changed object's state at the snapshot).
  std::map<std::string, ObjectPtr> overlay;
  if (!options.continue_token.empty()) {
    const auto dot = options.continue_token.find('.');
    char* end = nullptr;
    snapshot = std::strtoull(options.continue_token.c_str(), &end, 10);
    if (dot == std::string::npos || end != options.continue_token.c_str() + dot ||
        !internal::HexDecode(std::string_view(options.continue_token).substr(dot + 1), &after)) {
      return BadRequest("continue key is not valid: malformed continue token");
    }
    has_after = true;
    if (snapshot < compacted_rv_) {
      return Gone(
          "The provided continue parameter is too old to display a consistent list result. You "
          "can start a new list without the continue parameter.");
    }
    for (const auto& e : events_) {
      if (e.rv <= snapshot || e.storage_key != table.kind.storage_key()) continue;
      const std::string key = e.object->key();
      if (overlay.count(key) == 0) overlay[key] = std::string_view(e.type) == "ADDED" ? nullptr : e.prev;
    }
  }
  result.resource_version = snapshot;
  const std::string prefix = kind.namespaced && !options.namespace_.empty() ? options.namespace_ + "/" : "";
  auto start = [&](const auto& map) {
    if (has_after && after >= prefix) return map.upper_bound(after);
    return map.lower_bound(prefix);
  };
  auto cur = start(table.objects);
  auto ov = start(overlay);
  while (cur != table.objects.end() || ov != overlay.end()) {
    const std::string* key;
    ObjectPtr candidate;
    if (ov == overlay.end() || (cur != table.objects.end() && cur->first < ov->first)) {
      key = &cur->first;
      candidate = cur->second;
      ++cur;
    } else {
      key = &ov->first;
      candidate = ov->second;
      if (cur != table.objects.end() && cur->first == ov->first) ++cur;
      ++ov;
    }
    if (key->compare(0, prefix.size(), prefix) != 0) break;
    if (!candidate) continue;
    if (!options.labels.Matches(*candidate) || !options.fields.Matches(*candidate)) continue;
    if (options.limit > 0 && result.items.size() == options.limit) {
      result.continue_token =
          std::to_string(snapshot) + "." + internal::HexEncode(result.items.back()->key());
      break;
    }
    result.items.push_back(std::move(candidate));
  }
  return result;
}

ApiResult<ObjectPtr> Store::Update(const KindInfo& kind, const std::string& namespace_,
                                   const std::string& name, json::Json object, Subresource sub) {
  std::lock_guard<std::mutex> lock(mu_);
  Table& table = TableFor(kind);
  auto it = table.objects.find((kind.namespaced ? namespace_ : "") + "/" + name);
  if (it == table.objects.end()) return NotFound(kind.group, kind.plural, name);
  if (!object.is_object()) return BadRequest("the body of the request must be a JSON object");
  const std::string body_name = internal::MetaString(object, "name");
  if (!body_name.empty() && body_name != name) {
    return BadRequest(fmt::format("the name of the object ({}) does not match the name on the URL ({})",
                                  body_name, name));
  }
  const std::string body_ns = internal::MetaString(object, "namespace");
  if (kind.namespaced && !body_ns.empty() && body_ns != namespace_) {
    return BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  const std::string rv = internal::MetaString(object, "resourceVersion");
  if (!rv.empty() && rv != std::to_string(it->second->resource_version)) {
    return Conflict(kind.group, kind.plural, name,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  }
  return UpdateLocked(table, it->second, std::move(object), sub);
}

ApiResult<ObjectPtr> Store::UpdateLocked(Table& table, const ObjectPtr& current, json::Json object,
                                         Subresource sub) {
  const KindInfo& kind = table.kind;
  json::Json old = current->Parse();
  json::Json next;
  if (sub == Subresource::kStatus) {
    next = old;
    if (object.contains("status")) {
      next["status"] = object["status"];
    } else {
      next.erase("status");
    }
  } else {
    next = std::move(object);
    next["kind"] = old["kind"];
    if (!next.contains("apiVersion")) next["apiVersion"] = old["apiVersion"];
    json::Json& meta = Meta(next);
    const json::Json& old_meta = old["metadata"];
    for (const char* field : {"uid", "creationTimestamp", "deletionTimestamp",
                              "deletionGracePeriodSeconds", "generation", "namespace", "name"}) {
      if (old_meta.contains(field)) {
        meta[field] = old_meta[field];
      } else {
        meta.erase(field);
      }
    }
    if (kind.has_status) {
      if (old.contains("status")) {
        next["status"] = old["status"];
      } else {
        next.erase("status");
      }
    }
    if (current->terminating && meta.contains("finalizers") && meta["finalizers"].is_array()) {
      const json::Json empty = json::Json::array();
      const json::Json& before = old_meta.contains("finalizers") ? old_meta["finalizers"] : empty;
      for (const auto& f : meta["finalizers"]) {
        if (std::find(before.begin(), before.end(), f) == before.end()) {
          return Invalid(kind.group, kind.kind, current->name,
                         "metadata.finalizers: Forbidden: no new finalizers can be added if the "
                         "object is being deleted, found new finalizers " + json::Dump(f));
        }
      }
    }
    if (kind.group.empty() && kind.plural == "pods") {
      if (auto error = ValidatePodUpdate(old, next)) return *error;
    }
    if (kind.group == "apiextensions.k8s.io" && kind.plural == "customresourcedefinitions" &&
        next != old) {
      // A changed CRD serves and validates with its new versions and schemas at once.
      if (auto error = UpdateCrdLocked(kind, old, next)) return *error;
    }
    if (SpecPart(old) != SpecPart(next)) {
      meta["generation"] = old_meta.value("generation", int64_t{0}) + 1;
    }
  }
  Meta(next)["resourceVersion"] = old["metadata"]["resourceVersion"];
  if (next == old) return current;  // no-op: no new version, no event
  // Custom resources against their CRD's schema (main endpoint and /status alike).
  if (auto invalid = ValidateCustomResource(kind, next)) return *invalid;

  // Removing the last finalizer of an object whose deletion was requested (and, for pods,
  // whose grace period is over) completes the deletion.
  if (current->terminating && !internal::HasFinalizers(next) &&
      next["metadata"].value("deletionGracePeriodSeconds", int64_t{0}) == 0) {
    ObjectPtr final_state = Remove(table, current, &next);
    CascadeLocked(final_state, "Background");
    return final_state;
  }
  return Commit(table, std::move(next), current);
}

ApiResult<ObjectPtr> Store::Patch(const KindInfo& kind, const std::string& namespace_,
                                  const std::string& name, PatchType type, std::string_view body,
                                  Subresource sub, const std::string& field_manager) {
  std::lock_guard<std::mutex> lock(mu_);
  Table& table = TableFor(kind);
  auto it = table.objects.find((kind.namespaced ? namespace_ : "") + "/" + name);
  std::optional<json::Json> applied_config;
  if (type == PatchType::kApply) {
    auto applied = YamlToJson(body);
    if (!applied.ok()) return BadRequest(applied.status().message());
    if (!applied->is_object()) return BadRequest("apply patch must be an object");
    applied_config = std::move(applied).value();
  }
  const auto remember_applied = [&](const ApiResult<ObjectPtr>& result) {
    if (applied_config && IsOk(result)) {
      applied_[std::get<ObjectPtr>(result)->uid + "\n" + field_manager] = *applied_config;
    }
    return result;
  };
  if (it == table.objects.end()) {
    if (type != PatchType::kApply || sub != Subresource::kNone) {
      return NotFound(kind.group, kind.plural, name);
    }
    json::Json object = *applied_config;
    const std::string body_name = internal::MetaString(object, "name");
    if (!body_name.empty() && body_name != name) {
      return BadRequest(fmt::format(
          "the name of the object ({}) does not match the name on the URL ({})", body_name, name));
    }
    Meta(object)["name"] = name;
    return remember_applied(CreateLocked(kind, namespace_, std::move(object)));
  }
  const ObjectPtr current = it->second;
  json::Json base = current->Parse();
  if (applied_config) {
    auto before = applied_.find(current->uid + "\n" + field_manager);
    if (before != applied_.end()) RemoveDroppedFields(base, before->second, *applied_config);
  }
  auto patched = ApplyPatch(base, type, body);
  if (!patched.ok()) {
    if (patched.status().code() == StatusCode::kFailedPrecondition) {
      return Invalid(kind.group, kind.kind, name, patched.status().message());
    }
    return BadRequest(patched.status().message());
  }
  json::Json next = std::move(patched).value();
  if (!next.is_object()) return BadRequest("the patch must leave an object");
  const std::string rv = internal::MetaString(next, "resourceVersion");
  if (!rv.empty() && rv != std::to_string(current->resource_version)) {
    return Conflict(kind.group, kind.plural, name,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  }
  return remember_applied(UpdateLocked(table, current, std::move(next), sub));
}

ApiResult<DeleteResult> Store::Delete(const KindInfo& kind, const std::string& namespace_,
                                      const std::string& name, const DeleteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  Table& table = TableFor(kind);
  auto it = table.objects.find((kind.namespaced ? namespace_ : "") + "/" + name);
  if (it == table.objects.end()) return NotFound(kind.group, kind.plural, name);
  const ObjectPtr current = it->second;
  if (options.precondition_uid && *options.precondition_uid != current->uid) {
    return Conflict(kind.group, kind.plural, name,
                    fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                                *options.precondition_uid, current->uid));
  }
  if (options.precondition_resource_version &&
      *options.precondition_resource_version != std::to_string(current->resource_version)) {
    return Conflict(kind.group, kind.plural, name,
                    fmt::format("Precondition failed: ResourceVersion in precondition: {}, "
                                "ResourceVersion in object meta: {}",
                                *options.precondition_resource_version, current->resource_version));
  }
  return DeleteLocked(table, current, options);
}

ApiResult<DeleteResult> Store::DeleteLocked(Table& table, const ObjectPtr& current,
                                            const DeleteOptions& options) {
  const bool is_pod = table.kind.group.empty() && table.kind.plural == "pods";
  json::Json object = current->Parse();
  int64_t grace = 0;
  if (is_pod) {
    const json::Json& spec = object.contains("spec") ? object["spec"] : json::Json::object();
    grace = options.grace_period_seconds.value_or(
        spec.is_object() ? spec.value("terminationGracePeriodSeconds", int64_t{30}) : 30);
    // Like the real pod strategy: an unscheduled or finished pod has nothing to stop.
    if (current->node_name.empty() || current->phase == "Succeeded" || current->phase == "Failed") {
      grace = 0;
    }
    grace = std::max<int64_t>(grace, 0);
  }
  json::Json& meta = Meta(object);
  const bool finalizers = internal::HasFinalizers(object);
  if (current->terminating) {
    const int64_t current_grace = meta.value("deletionGracePeriodSeconds", int64_t{0});
    if (!(is_pod && grace == 0 && current_grace != 0)) return DeleteResult{current, false};
    // The kubelet's final delete (grace 0) of a terminating pod.
    meta["deletionGracePeriodSeconds"] = 0;
    if (finalizers) return DeleteResult{Commit(table, std::move(object), current), false};
    ObjectPtr final_state = Remove(table, current, &object);
    CascadeLocked(final_state, "Background");
    return DeleteResult{final_state, true};
  }
  if (grace > 0 || finalizers) {
    meta["deletionTimestamp"] = Now(std::chrono::seconds(grace));
    meta["deletionGracePeriodSeconds"] = grace;
    ObjectPtr updated = Commit(table, std::move(object), current);
    if (grace > 0 && options_.on_graceful_pod_delete) {
      options_.on_graceful_pod_delete(updated->namespace_, updated->name, updated->uid, grace);
    }
    return DeleteResult{updated, false};
  }
  const std::string policy = options.propagation_policy.empty() ? "Background" : options.propagation_policy;
  if (policy == "Foreground") CascadeLocked(current, policy);
  ObjectPtr final_state = Remove(table, current, nullptr);
  if (policy != "Foreground") CascadeLocked(final_state, policy);
  return DeleteResult{final_state, true};
}

void Store::CascadeLocked(const ObjectPtr& owner, const std::string& policy) {
  auto it = dependents_.find(owner->uid);
  if (it == dependents_.end()) return;
  const auto dependents = it->second;  // copy: deleting changes the index
  for (const auto& [storage_key, key] : dependents) {
    auto table_it = tables_.find(storage_key);
    if (table_it == tables_.end()) continue;
    Table& table = table_it->second;
    auto object_it = table.objects.find(key);
    if (object_it == table.objects.end()) continue;
    const ObjectPtr dependent = object_it->second;
    if (policy == "Orphan") {
      json::Json object = dependent->Parse();
      json::Json& refs = object["metadata"]["ownerReferences"];
      refs.erase(std::remove_if(refs.begin(), refs.end(),
                                [&](const json::Json& r) { return r.value("uid", "") == owner->uid; }),
                 refs.end());
      if (refs.empty()) object["metadata"].erase("ownerReferences");
      Commit(table, std::move(object), dependent);
    } else {
      DeleteOptions options;
      options.propagation_policy = policy;
      (void)DeleteLocked(table, dependent, options);
    }
  }
}

}  // namespace phalanx::fakes::apiserver
