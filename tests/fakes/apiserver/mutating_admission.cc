// kube-apiserver's mutating admission webhooks for pod creation (see mutating_admission.h).
#include "tests/fakes/apiserver/mutating_admission.h"

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <random>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>

#include "core/base/result.h"
#include "tests/fakes/apiserver/patch.h"

namespace phalanx::fakes::apiserver {
namespace {

constexpr const char* kConfigurations = "admissionregistration.k8s.io/mutatingwebhookconfigurations";

std::string Base64(std::string_view in, bool decode) {
  if (!decode) {
    std::string out(4 * ((in.size() + 2) / 3), '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
    out.resize(static_cast<size_t>(n));
    return out;
  }
  std::string out(in.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return "";
  out.resize(static_cast<size_t>(n));
  size_t pad = 0;  // EVP_DecodeBlock counts the '=' padding as zero bytes
  for (auto it = in.rbegin(); it != in.rend() && *it == '='; ++it) ++pad;
  out.resize(out.size() - std::min(pad, out.size()));
  return out;
}

std::string Str(const json::Json& j, const char* key, std::string fallback = "") {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

bool ListAllows(const json::Json& rule, const char* key, const std::string& value) {
  if (!rule.contains(key) || !rule[key].is_array()) return false;
  for (const auto& v : rule[key]) {
    if (v.is_string() && (v == "*" || v == value)) return true;
  }
  return false;
}

bool RulesMatchPodCreate(const json::Json& hook) {
  if (!hook.contains("rules") || !hook["rules"].is_array()) return false;
  for (const auto& rule : hook["rules"]) {
    if (ListAllows(rule, "operations", "CREATE") && ListAllows(rule, "apiGroups", "") &&
        ListAllows(rule, "apiVersions", "v1") && ListAllows(rule, "resources", "pods")) {
      const std::string scope = Str(rule, "scope", "*");
      if (scope == "*" || scope == "Namespaced") return true;
    }
  }
  return false;
}

struct Reply {
  int status = 0;
  std::string body;
  std::string error;  // set: no HTTP reply
};

// POST over TLS verifying the server against `ca_pem` for `server_name`, as kube-apiserver's
// webhook client does. Asynchronous operations under one deadline: beast's stream timeout
// applies to those only (a synchronous read would wait for a hung webhook forever).
Reply PostTls(const std::string& host, uint16_t port, const std::string& server_name, const std::string& ca_pem,
              const std::string& path, const std::string& body, std::chrono::seconds timeout) {
  namespace asio = boost::asio;
  namespace ssl = asio::ssl;
  namespace beast = boost::beast;
  namespace http = beast::http;
  try {
    asio::io_context io;
    ssl::context ctx(ssl::context::tls_client);
    if (!ca_pem.empty()) ctx.add_certificate_authority(asio::buffer(ca_pem));
    ctx.set_verify_mode(ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
    SSL_set_tlsext_host_name(stream.native_handle(), server_name.c_str());
    stream.set_verify_callback(ssl::host_name_verification(server_name));
    http::request<http::string_body> req{http::verb::post, path.empty() ? "/" : path, 11};
    req.set(http::field::host, server_name);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json");
    req.body() = body;
    req.prepare_payload();
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    Reply reply;
    auto fail = [&](const char* step, const beast::error_code& ec) { reply = {0, "", std::string(step) + ": " + ec.message()}; };
    beast::get_lowest_layer(stream).expires_after(timeout);
    beast::get_lowest_layer(stream).async_connect(
        asio::ip::tcp::endpoint(asio::ip::make_address(host), port), [&](beast::error_code ec) {
          if (ec) return fail("connect", ec);
          stream.async_handshake(ssl::stream_base::client, [&](beast::error_code ec) {
            if (ec) return fail("TLS handshake", ec);
            http::async_write(stream, req, [&](beast::error_code ec, size_t) {
              if (ec) return fail("write", ec);
              http::async_read(stream, buffer, res, [&](beast::error_code ec, size_t) {
                if (ec) return fail("read", ec);
                reply = {static_cast<int>(res.result_int()), res.body(), ""};
              });
            });
          });
        });
    io.run();
    return reply;
  } catch (const std::exception& e) {
    return {0, "", e.what()};
  }
}

std::string NewUid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}-{:016x}", rng(), rng());
}

}  // namespace

bool LabelSelectorMatches(const json::Json& selector, const json::Json& labels) {
  if (selector.is_null()) return true;
  if (!selector.is_object()) return false;
  auto label = [&](const std::string& key) -> const json::Json* {
    return labels.is_object() && labels.contains(key) && labels[key].is_string() ? &labels[key] : nullptr;
  };
  if (selector.contains("matchLabels")) {
    if (!selector["matchLabels"].is_object()) return false;
    for (const auto& [k, v] : selector["matchLabels"].items()) {
      const json::Json* have = label(k);
      if (have == nullptr || *have != v) return false;
    }
  }
  if (selector.contains("matchExpressions")) {
    if (!selector["matchExpressions"].is_array()) return false;
    for (const auto& e : selector["matchExpressions"]) {
      const json::Json* have = label(Str(e, "key"));
      const std::string op = Str(e, "operator");
      const json::Json values = e.value("values", json::Json::array());
      const bool listed = have != nullptr && std::find(values.begin(), values.end(), *have) != values.end();
      if (op == "In" && !listed) return false;
      if (op == "NotIn" && listed) return false;
      if (op == "Exists" && have == nullptr) return false;
      if (op == "DoesNotExist" && have != nullptr) return false;
      if (op != "In" && op != "NotIn" && op != "Exists" && op != "DoesNotExist") return false;
    }
  }
  return true;
}

std::vector<json::Json> MutatingAdmission::Objects(const std::string& storage_key, const std::string& namespace_) const {
  std::vector<json::Json> out;
  auto kind = kinds_.FindByStorageKey(storage_key);
  if (!kind) return out;
  ListOptions options;
  options.namespace_ = namespace_;
  auto listed = store_.List(*kind, options);
  if (!IsOk(listed)) return out;
  for (const auto& o : std::get<ListResult>(listed).items) out.push_back(o->Parse());
  return out;
}

json::Json MutatingAdmission::Find(const std::string& storage_key, const std::string& namespace_,
                                   const std::string& name) const {
  auto kind = kinds_.FindByStorageKey(storage_key);
  if (!kind) return nullptr;
  auto got = store_.Get(*kind, namespace_, name);
  if (!IsOk(got)) return nullptr;
  return std::get<ObjectPtr>(got)->Parse();
}

std::optional<ApiError> MutatingAdmission::AdmitPodCreate(const std::string& namespace_, json::Json& pod,
                                                          const std::function<void(const WebhookCall&)>& on_call) const {
  std::vector<json::Json> configurations = Objects(kConfigurations, "");
  if (configurations.empty()) return std::nullopt;
  std::sort(configurations.begin(), configurations.end(), [](const json::Json& a, const json::Json& b) {
    return a["metadata"].value("name", "") < b["metadata"].value("name", "");
  });
  json::Json namespace_labels = json::Json::object();
  if (json::Json ns = Find("/namespaces", "", namespace_); ns.is_object()) {
    namespace_labels = ns["metadata"].value("labels", json::Json::object());
  }
  namespace_labels["kubernetes.io/metadata.name"] = namespace_;

  for (const auto& config : configurations) {
    for (const auto& hook : config.value("webhooks", json::Json::array())) {
      const std::string name = Str(hook, "name");
      if (!RulesMatchPodCreate(hook)) continue;
      if (!LabelSelectorMatches(hook.value("namespaceSelector", json::Json()), namespace_labels)) continue;
      const json::Json labels = pod.value("metadata", json::Json::object()).value("labels", json::Json::object());
      if (!LabelSelectorMatches(hook.value("objectSelector", json::Json()), labels)) continue;

      const bool ignore = Str(hook, "failurePolicy", "Fail") == "Ignore";
      auto fail = [&](const std::string& why) -> std::optional<ApiError> {
        if (on_call) on_call({name, (ignore ? "ignored: " : "failed: ") + why});
        if (ignore) return std::nullopt;
        return InternalError(fmt::format("failed calling webhook \"{}\": {}", name, why));
      };
      // What the real server's validation would have refused, or cannot call.
      const json::Json versions = hook.value("admissionReviewVersions", json::Json::array());
      if (std::find(versions.begin(), versions.end(), "v1") == versions.end()) {
        if (auto e = fail("webhook does not accept v1 AdmissionReview")) return e;
        continue;
      }
      const std::string side_effects = Str(hook, "sideEffects");
      if (side_effects != "None" && side_effects != "NoneOnDryRun") {
        if (auto e = fail("sideEffects must be None or NoneOnDryRun")) return e;
        continue;
      }
      const json::Json client = hook.value("clientConfig", json::Json::object());
      const std::string ca = Base64(Str(client, "caBundle"), true);
      std::string host, server_name, path;
      uint16_t port = 443;
      if (client.contains("service")) {
        const json::Json svc = client["service"];
        const std::string svc_name = Str(svc, "name"), svc_ns = Str(svc, "namespace");
        const int svc_port = svc.value("port", 443);
        path = Str(svc, "path", "/");
        server_name = svc_name + "." + svc_ns + ".svc";
        const json::Json service = Find("/services", svc_ns, svc_name);
        if (!service.is_object()) {
          if (auto e = fail(fmt::format("service \"{}\" not found", server_name))) return e;
          continue;
        }
        std::string port_name;
        bool port_found = false;
        for (const auto& p : service["spec"].value("ports", json::Json::array())) {
          if (p.value("port", 0) == svc_port) {
            port_name = Str(p, "name");
            port_found = true;
          }
        }
        const json::Json endpoints = Find("/endpoints", svc_ns, svc_name);
        bool resolved = false;
        for (const auto& subset : endpoints.is_object() ? endpoints.value("subsets", json::Json::array())
                                                         : json::Json::array()) {
          const json::Json addresses = subset.value("addresses", json::Json::array());
          if (!port_found || addresses.empty()) continue;
          for (const auto& p : subset.value("ports", json::Json::array())) {
            if (Str(p, "name") != port_name) continue;
            host = Str(addresses[0], "ip");
            port = static_cast<uint16_t>(p.value("port", 0));
            resolved = !host.empty() && port != 0;
          }
          if (resolved) break;
        }
        if (!resolved) {
          if (auto e = fail(fmt::format("no endpoints for service \"{}\" port {}", server_name, svc_port))) return e;
          continue;
        }
      } else {
        // url: https://host:port/path (an IP host; the fake resolves no names).
        const std::string url = Str(client, "url");
        const std::string prefix = "https://";
        const size_t slash = url.find('/', prefix.size());
        const std::string authority = url.substr(prefix.size(), slash - prefix.size());
        const size_t colon = authority.rfind(':');
        if (url.rfind(prefix, 0) != 0 || colon == std::string::npos) {
          if (auto e = fail(fmt::format("clientConfig.url \"{}\" is not https://host:port/path", url))) return e;
          continue;
        }
        host = server_name = authority.substr(0, colon);
        port = static_cast<uint16_t>(std::stoi(authority.substr(colon + 1)));
        path = slash == std::string::npos ? "/" : url.substr(slash);
      }

      const std::string uid = NewUid();
      json::Json review = {
          {"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"requestKind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"requestResource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"name", pod["metadata"].value("name", "")},
            {"namespace", namespace_},
            {"operation", "CREATE"},
            {"userInfo", {{"username", "fake-apiserver-client"}}},
            {"object", pod},
            {"oldObject", nullptr},
            {"dryRun", false},
            {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
      const int timeout = std::clamp(hook.value("timeoutSeconds", 10), 1, 30);
      const Reply reply = PostTls(host, port, server_name, ca, path, json::Dump(review), std::chrono::seconds(timeout));
      if (reply.status == 0) {
        if (auto e = fail(reply.error)) return e;
        continue;
      }
      if (reply.status != 200) {
        if (auto e = fail(fmt::format("HTTP {}: {}", reply.status, reply.body.substr(0, 200)))) return e;
        continue;
      }
      auto parsed = json::Parse(reply.body);
      const json::Json response = parsed.ok() && parsed->is_object() ? parsed->value("response", json::Json()) : json::Json();
      if (!response.is_object() || Str(response, "uid") != uid) {
        if (auto e = fail("malformed AdmissionReview response or uid mismatch")) return e;
        continue;
      }
      if (!response.value("allowed", false)) {
        const json::Json status = response.value("status", json::Json::object());
        ApiError denied = FromCode(status.value("code", 403),
                                   fmt::format("admission webhook \"{}\" denied the request: {}", name,
                                               Str(status, "message", "without explanation")),
                                   0);
        if (on_call) on_call({name, "denied"});
        return denied;
      }
      if (response.contains("patch")) {
        if (Str(response, "patchType") != "JSONPatch") {
          if (auto e = fail("patchType must be JSONPatch")) return e;
          continue;
        }
        auto patched = ApplyPatch(pod, PatchType::kJson, Base64(Str(response, "patch"), true));
        if (!patched.ok()) {
          if (auto e = fail("applying the patch: " + std::string(patched.status().message()))) return e;
          continue;
        }
        pod = std::move(*patched);
        if (on_call) on_call({name, "patched"});
      } else if (on_call) {
        on_call({name, "allowed"});
      }
    }
  }
  return std::nullopt;
}

}  // namespace phalanx::fakes::apiserver
