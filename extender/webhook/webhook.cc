// The gang-gate admission webhook: decision and AdmissionReview encoding (see webhook.h).
#include "extender/webhook/webhook.h"

#include <fmt/format.h>

#include "core/json/json.h"
#include "extender/objects/k8s_objects.h"

namespace phalanx::extender {
namespace {

using json::Json;

constexpr std::string_view kAdmissionApiVersion = "admission.k8s.io/v1";

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

WebhookReply BadRequest(std::string_view message) {
  return {.status = 400, .body = json::Dump(Json{{"Error", message}}), .patched = false};
}

// The gang name as the extender reads it (k8s_objects.cc ParsePod): phalanx.io/gang when
// present, else the alias; "" = not a gang member.
std::string GangName(const Json* labels) {
  for (std::string_view key : {kGangLabel, kGangAliasLabel}) {
    if (!labels) break;
    auto it = labels->find(std::string(key));
    if (it != labels->end()) return it->get<std::string>();
  }
  return "";
}

// Whether the extender will hold the pod as a gang: a gang member, or an implicit gang of
// one (FormsImplicitGang, as ParsePod decides it: a queue-labelled pod requesting whole
// GPUs). A spec whose device requests do not parse is left to the API server's validation.
bool GangGated(const Json* labels, const Json& spec) {
  const std::string gang = GangName(labels);
  if (!gang.empty()) return true;
  std::string queue;
  if (labels) {
    if (auto it = labels->find(std::string(kQueueLabel)); it != labels->end()) queue = it->get<std::string>();
  }
  if (queue.empty()) return false;
  auto devices = ParsePodDeviceRequests(spec);
  return devices.ok() && FormsImplicitGang(gang, queue, devices->gpus, !devices->mig.empty());
}

// The JSONPatch adding the gate, or "" when the pod is left alone. Errors name the field.
Result<std::string> GatePatch(const Json& object, const WebhookOptions& options) {
  constexpr std::string_view kWhere = "request.object";
  if (!object.is_object()) {
    return InvalidArgumentError(fmt::format("{}: expected a Pod object, got {}", kWhere, json::TypeName(object)));
  }
  PHX_ASSIGN_OR_RETURN(const Json* meta, json::GetOptional(object, "metadata", kWhere, Json::value_t::object));
  const std::string meta_path = json::JoinPath(kWhere, "metadata");
  const Json* labels = nullptr;
  if (meta) {
    PHX_ASSIGN_OR_RETURN(labels, json::GetOptional(*meta, "labels", meta_path, Json::value_t::object));
  }
  if (labels) {
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        return InvalidArgumentError(
            fmt::format("{}.labels[{}]: expected string, got {}", meta_path, key, json::TypeName(value)));
      }
    }
  }
  PHX_ASSIGN_OR_RETURN(const Json* spec_ptr, json::GetObject(object, "spec", kWhere));
  const Json& spec = *spec_ptr;
  const std::string spec_path = json::JoinPath(kWhere, "spec");
  PHX_ASSIGN_OR_RETURN(const Json* gates, json::GetOptional(spec, "schedulingGates", spec_path, Json::value_t::array));
  PHX_ASSIGN_OR_RETURN(const Json* scheduler,
                       json::GetOptional(spec, "schedulerName", spec_path, Json::value_t::string));
  PHX_ASSIGN_OR_RETURN(const Json* node, json::GetOptional(spec, "nodeName", spec_path, Json::value_t::string));

  if (!GangGated(labels, spec)) return std::string();
  // Defaulting runs before mutating admission, so an unset schedulerName already reads
  // "default-scheduler" here.
  if (!scheduler || scheduler->get<std::string>() != options.scheduler_name) return std::string();
  // The API server forbids scheduling gates on a pod created with spec.nodeName.
  if (node && !node->get<std::string>().empty()) return std::string();
  if (gates) {
    for (size_t i = 0; i < gates->size(); ++i) {
      const Json& g = (*gates)[i];
      if (!g.is_object()) {
        return InvalidArgumentError(
            fmt::format("{}.schedulingGates[{}]: expected object, got {}", spec_path, i, json::TypeName(g)));
      }
      if (auto name = g.find("name"); name != g.end() && name->is_string() && *name == kGangGate) return std::string();
    }
  }
  const Json gate = {{"name", kGangGate}};
  // Other gates stay: append to the list when there is one, else create it.
  const Json op = gates ? Json{{"op", "add"}, {"path", "/spec/schedulingGates/-"}, {"value", gate}}
                        : Json{{"op", "add"}, {"path", "/spec/schedulingGates"}, {"value", Json::array({gate})}};
  return json::Dump(Json::array({op}));
}

}  // namespace

WebhookReply ReviewPodAdmission(std::string_view request_body, const WebhookOptions& options) {
  auto parsed = json::Parse(request_body);
  if (!parsed.ok()) return BadRequest(fmt::format("AdmissionReview: {}", parsed.status().message()));
  const Json& review = *parsed;
  if (!review.is_object()) {
    return BadRequest(fmt::format("AdmissionReview: expected object, got {}", json::TypeName(review)));
  }
  auto api_version = json::GetString(review, "apiVersion", "AdmissionReview");
  if (!api_version.ok()) return BadRequest(api_version.status().message());
  if (*api_version != kAdmissionApiVersion) {
    // The response must carry the request's version; only v1 is registered (admissionReviewVersions).
    return BadRequest(fmt::format("AdmissionReview.apiVersion: \"{}\" is not supported (want {})", *api_version,
                                  kAdmissionApiVersion));
  }
  auto kind = json::GetString(review, "kind", "AdmissionReview");
  if (!kind.ok()) return BadRequest(kind.status().message());
  if (*kind != "AdmissionReview") {
    return BadRequest(fmt::format("AdmissionReview.kind: \"{}\" is not AdmissionReview", *kind));
  }
  auto request = json::GetObject(review, "request", "AdmissionReview");
  if (!request.ok()) return BadRequest(request.status().message());
  const Json& req = **request;
  auto uid = json::GetString(req, "uid", "request");
  if (!uid.ok()) return BadRequest(uid.status().message());
  if (uid->empty()) return BadRequest("request.uid: empty");
  auto operation = json::GetString(req, "operation", "request");
  if (!operation.ok()) return BadRequest(operation.status().message());
  auto gvk = json::GetObject(req, "kind", "request");
  if (!gvk.ok()) return BadRequest(gvk.status().message());
  auto object_kind = json::GetString(**gvk, "kind", "request.kind");
  if (!object_kind.ok()) return BadRequest(object_kind.status().message());
  auto group = json::GetOptional(**gvk, "group", "request.kind", Json::value_t::string);
  if (!group.ok()) return BadRequest(group.status().message());
  auto sub_resource = json::GetOptional(req, "subResource", "request", Json::value_t::string);
  if (!sub_resource.ok()) return BadRequest(sub_resource.status().message());

  Json response = {{"uid", *uid}, {"allowed", true}};
  auto empty = [](const Json* s) { return !s || s->get<std::string>().empty(); };  // absent = ""
  const bool pod_create =
      *operation == "CREATE" && *object_kind == "Pod" && empty(*group) && empty(*sub_resource);
  bool patched = false;
  if (pod_create) {
    auto object = req.find("object");
    if (object == req.end() || object->is_null()) return BadRequest("request.object: missing on a Pod CREATE");
    auto patch = GatePatch(*object, options);
    if (!patch.ok()) return BadRequest(patch.status().message());
    if (!patch->empty()) {
      response["patchType"] = "JSONPatch";
      response["patch"] = Base64(*patch);
      patched = true;
    }
  }
  Json out = {{"apiVersion", kAdmissionApiVersion}, {"kind", "AdmissionReview"}, {"response", std::move(response)}};
  return {.status = 200, .body = json::Dump(out), .patched = patched};
}

}  // namespace phalanx::extender
