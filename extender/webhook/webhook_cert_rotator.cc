// Self-managed webhook certificates: the Secret, the caBundle and the files (see
// webhook_cert_rotator.h).
#include "extender/webhook/webhook_cert_rotator.h"

#include <openssl/evp.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/kube/api_error.h"

namespace phalanx::extender {
namespace {

const kube::Resource kWebhookConfigurations{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                                            false, "MutatingWebhookConfiguration"};
constexpr int kMaxRaces = 8;  // passes lost to another replica before giving up until the next resync

// The Secret's keys (webhook_certs.h WebhookCertMaterial).
constexpr const char* kCaBundle = "ca.crt";
constexpr const char* kSignerCert = "ca-signer.crt";
constexpr const char* kSignerKey = "ca-signer.key";
constexpr const char* kTlsCert = "tls.crt";
constexpr const char* kTlsKey = "tls.key";

std::string Base64Encode(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string Field(const kube::Json& data, const char* key) {
  if (!data.is_object() || !data.contains(key) || !data[key].is_string()) return "";
  auto decoded = kube::Base64Decode(data[key].get<std::string>());
  return decoded.ok() ? *decoded : "";
}

std::string ResourceVersion(const kube::Json& object) {
  return object.value("metadata", kube::Json::object()).value("resourceVersion", "");
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return in ? s.str() : "";
}

// Write then rename: the listener never reads half a file.
Status WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return InternalError("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::permissions(tmp, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
  std::filesystem::rename(tmp, path, ec);
  if (ec) return InternalError(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  return OkStatus();
}

}  // namespace

Result<std::chrono::seconds> ParseCertDuration(std::string_view text) {
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit(ptr, static_cast<size_t>(text.data() + text.size() - ptr));
  int64_t scale = 0;
  if (unit == "s") scale = 1;
  if (unit == "m") scale = 60;
  if (unit == "h") scale = 3600;
  if (unit == "d") scale = 86400;
  if (ec != std::errc() || ptr == text.data() || value <= 0 || scale == 0 || value > (int64_t{1} << 40)) {
    return InvalidArgumentError(fmt::format("\"{}\" is not a positive duration (e.g. 90s, 30m, 720h, 365d)", text));
  }
  return std::chrono::seconds(value * scale);
}

Result<std::optional<WebhookCertOptions>> WebhookCertOptionsFromFlags(const std::string& secret,
                                                                      const std::string& configuration,
                                                                      const std::string& service,
                                                                      const std::string& cert_dir,
                                                                      const std::string& validity,
                                                                      const std::string& ca_validity,
                                                                      const std::string& renew_before) {
  if (secret.empty()) {
    if (!configuration.empty() || !service.empty()) {
      return InvalidArgumentError("--webhook-configuration/--webhook-service need --webhook-cert-secret");
    }
    return std::optional<WebhookCertOptions>();
  }
  WebhookCertOptions options;
  const size_t slash = secret.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == secret.size() ||
      secret.find('/', slash + 1) != std::string::npos) {
    return InvalidArgumentError(fmt::format("--webhook-cert-secret \"{}\": want NAMESPACE/NAME", secret));
  }
  options.secret_namespace = secret.substr(0, slash);
  options.secret_name = secret.substr(slash + 1);
  if (service.empty()) return InvalidArgumentError("--webhook-cert-secret needs --webhook-service (the DNS names)");
  if (cert_dir.empty()) return InvalidArgumentError("--webhook-cert-dir: empty");
  options.webhook_configuration = configuration;
  options.cert_dir = cert_dir;
  options.policy.dns_names = ServiceDnsNames(service, options.secret_namespace);
  for (auto [flag, text, out] :
       {std::tuple{"--webhook-cert-validity", &validity, &options.policy.cert_validity},
        std::tuple{"--webhook-cert-ca-validity", &ca_validity, &options.policy.ca_validity},
        std::tuple{"--webhook-cert-renew-before", &renew_before, &options.policy.renew_before}}) {
    auto d = ParseCertDuration(*text);
    if (!d.ok()) return InvalidArgumentError(fmt::format("{} {}", flag, d.status().message()));
    *out = *d;
  }
  if (Status st = ValidateRotationPolicy(options.policy); !st.ok()) return st;
  std::error_code ec;
  std::filesystem::create_directories(cert_dir, ec);
  if (ec || !std::filesystem::is_directory(cert_dir)) {
    return InvalidArgumentError(fmt::format("--webhook-cert-dir {}: not a writable directory", cert_dir));
  }
  const std::string probe = cert_dir + "/.probe";
  if (Status st = WriteAtomically(probe, ""); !st.ok()) {
    return InvalidArgumentError(fmt::format("--webhook-cert-dir {}: {}", cert_dir, st.message()));
  }
  std::filesystem::remove(probe, ec);
  return std::optional<WebhookCertOptions>(std::move(options));
}

WebhookCertRotator::WebhookCertRotator(kube::KubeClient& client, WebhookCertOptions options,
                                       metrics::Registry* registry)
    : client_(client), options_(std::move(options)) {
  if (!options_.logger) options_.logger = spdlog::default_logger();
  if (registry == nullptr) return;
  if (auto f = registry->AddCounter("phalanx_extender_webhook_certificate_writes_total",
                                    "Writes of the self-managed webhook certificate Secret by this replica: ca (a new "
                                    "CA), serving (a new serving certificate), bundle (trust bundle only).",
                                    {"what"});
      f.ok()) {
    rotations_ = *f;
  }
  if (auto f = registry->AddGauge("phalanx_extender_webhook_certificate_expiry_seconds",
                                  "Unix time at which the webhook serving certificate in use expires.");
      f.ok()) {
    if (auto g = (*f)->WithLabels({}); g.ok()) expiry_ = *g;
  }
}

WebhookCertRotator::~WebhookCertRotator() { Stop(); }

SystemTime WebhookCertRotator::Now() const { return options_.now ? options_.now() : std::chrono::system_clock::now(); }

Result<WebhookCertRotator::Stored> WebhookCertRotator::ReadSecret() {
  auto secret = client_.Get(kube::resources::kSecrets, options_.secret_namespace, options_.secret_name);
  if (!secret.ok()) {
    if (IsNotFound(secret.status())) return Stored{};
    return secret.status();
  }
  Stored stored;
  stored.resource_version = ResourceVersion(*secret);
  const kube::Json data = secret->value("data", kube::Json::object());
  stored.material = {Field(data, kCaBundle), {Field(data, kSignerCert), Field(data, kSignerKey)},
                     {Field(data, kTlsCert), Field(data, kTlsKey)}};
  return stored;
}

Result<std::string> WebhookCertRotator::WriteSecret(const WebhookCertMaterial& m, const std::string& resource_version) {
  kube::Json secret = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata", {{"name", options_.secret_name}, {"namespace", options_.secret_namespace}}},
                       {"type", "Opaque"},
                       {"data",
                        {{kCaBundle, Base64Encode(m.ca_bundle)},
                         {kSignerCert, Base64Encode(m.signer.cert)},
                         {kSignerKey, Base64Encode(m.signer.key)},
                         {kTlsCert, Base64Encode(m.serving.cert)},
                         {kTlsKey, Base64Encode(m.serving.key)}}}};
  Result<kube::Json> written = InternalError("unset");
  if (resource_version.empty()) {
    written = client_.Create(kube::resources::kSecrets, options_.secret_namespace, secret);
    if (!written.ok() && IsAlreadyExists(written.status())) return AbortedError("created by another replica");
  } else {
    // Keep what others put on the Secret (labels from the chart, annotations).
    auto current = client_.Get(kube::resources::kSecrets, options_.secret_namespace, options_.secret_name);
    if (!current.ok()) return current.status();
    kube::Json updated = *current;
    updated["metadata"]["resourceVersion"] = resource_version;  // the version the plan was made from
    updated["type"] = current->value("type", "Opaque");
    updated["data"] = secret["data"];
    written = client_.Update(kube::resources::kSecrets, options_.secret_namespace, updated);
    if (!written.ok() && kube::IsConflict(written.status())) return AbortedError("updated by another replica");
  }
  if (!written.ok()) return written.status();
  return ResourceVersion(*written);
}

Result<std::optional<bool>> WebhookCertRotator::Published(const std::string& signer) {
  if (options_.webhook_configuration.empty()) return std::optional<bool>();
  auto config = client_.Get(kWebhookConfigurations, "", options_.webhook_configuration);
  if (!config.ok()) {
    if (IsNotFound(config.status())) return std::optional<bool>();
    return config.status();
  }
  const kube::Json hooks = config->value("webhooks", kube::Json::array());
  bool trusted = hooks.is_array() && !hooks.empty();
  for (const auto& h : hooks) {
    const std::string bundle = Field(h.value("clientConfig", kube::Json::object()), "caBundle");
    bool found = false;
    for (const auto& ca : SplitPemBundle(bundle)) found = found || ca == signer;
    trusted = trusted && found;
  }
  return std::optional<bool>(trusted);
}

Status WebhookCertRotator::Publish(const std::string& bundle) {
  if (options_.webhook_configuration.empty()) return OkStatus();
  auto config = client_.Get(kWebhookConfigurations, "", options_.webhook_configuration);
  if (!config.ok()) return IsNotFound(config.status()) ? OkStatus() : config.status();
  const std::string encoded = Base64Encode(bundle);
  // The resourceVersion inside the patch is a precondition (409 when stale); the test makes a
  // webhook list that changed meanwhile fail (422) instead of patching the wrong entries.
  kube::Json patch = kube::Json::array();
  const std::string rv = ResourceVersion(*config);
  patch.push_back({{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", rv}});
  const kube::Json hooks = config->value("webhooks", kube::Json::array());
  for (size_t i = 0; i < hooks.size(); ++i) {
    if (hooks[i].value("clientConfig", kube::Json::object()).value("caBundle", "") == encoded) continue;
    patch.push_back({{"op", "add"}, {"path", fmt::format("/webhooks/{}/clientConfig/caBundle", i)}, {"value", encoded}});
  }
  if (patch.size() == 1) return OkStatus();
  auto patched = client_.Patch(kWebhookConfigurations, "", options_.webhook_configuration, kube::PatchType::kJsonPatch,
                               patch);
  if (!patched.ok() && (kube::IsConflict(patched.status()) || kube::IsInvalid(patched.status()))) {
    return AbortedError("the webhook configuration changed meanwhile");
  }
  if (!patched.ok()) return patched.status();
  options_.logger->info("Webhook CA bundle published configuration={} webhooks={}", options_.webhook_configuration,
                        patch.size() - 1);
  return OkStatus();
}

Result<bool> WebhookCertRotator::WriteFiles(const WebhookCertMaterial& m) {
  const std::string cert = options_.cert_dir + "/tls.crt", key = options_.cert_dir + "/tls.key";
  if (ReadText(cert) == m.serving.cert && ReadText(key) == m.serving.key) return false;
  // Key first: the listener reloads on either file's change and skips a pair that does not load.
  PHX_RETURN_IF_ERROR(WriteAtomically(key, m.serving.key));
  PHX_RETURN_IF_ERROR(WriteAtomically(cert, m.serving.cert));
  PHX_RETURN_IF_ERROR(WriteAtomically(options_.cert_dir + "/ca.crt", m.ca_bundle));
  return true;
}

Status WebhookCertRotator::ReconcileOnce() {
  for (int attempt = 0; attempt < kMaxRaces; ++attempt) {
    PHX_ASSIGN_OR_RETURN(Stored stored, ReadSecret());
    PHX_ASSIGN_OR_RETURN(std::optional<bool> published, Published(stored.material.signer.cert));
    if (!published && !options_.webhook_configuration.empty() && !warned_no_configuration_) {
      warned_no_configuration_ = true;
      options_.logger->warn("Webhook configuration not found; the CA bundle is kept in the Secret only configuration={}",
                            options_.webhook_configuration);
    }
    PHX_ASSIGN_OR_RETURN(RotationPlan plan, PlanRotation(stored.material, published.value_or(true), Now(), options_.policy));
    if (!plan.reasons.empty()) {
      auto rv = WriteSecret(plan.next, stored.resource_version);
      if (!rv.ok() && rv.status().code() == StatusCode::kAborted) continue;  // lost a race: read the winner's
      if (!rv.ok()) return rv.status();
      const bool new_ca = plan.next.signer.cert != stored.material.signer.cert;
      const bool new_serving = plan.next.serving.cert != stored.material.serving.cert;
      if (rotations_) {
        if (auto c = rotations_->WithLabels({new_ca ? "ca" : new_serving ? "serving" : "bundle"}); c.ok()) (*c)->Inc();
      }
      options_.logger->info("Webhook certificate Secret written secret={}/{} why={}", options_.secret_namespace,
                            options_.secret_name, fmt::format("{}", fmt::join(plan.reasons, "; ")));
      stored.material = plan.next;
    }
    if (Status st = Publish(stored.material.ca_bundle); !st.ok()) {
      if (st.code() == StatusCode::kAborted) continue;
      return st;
    }
    // A new CA is trusted now: the next pass issues the serving certificate from it.
    if (!plan.reasons.empty()) continue;
    PHX_ASSIGN_OR_RETURN(bool wrote, WriteFiles(stored.material));
    if (auto facts = InspectCert(stored.material.serving.cert); facts.ok() && expiry_) {
      expiry_->Set(static_cast<double>(std::chrono::system_clock::to_time_t(facts->not_after)));
    }
    if (wrote) {
      options_.logger->info("Webhook serving certificate installed dir={}", options_.cert_dir);
      return OkStatus();
    }
    return OkStatus();
  }
  return AbortedError(fmt::format("webhook certificate Secret {}/{}: still racing with other replicas after {} tries",
                                  options_.secret_namespace, options_.secret_name, kMaxRaces));
}

void WebhookCertRotator::Start(std::function<void()> on_files) {
  thread_ = std::thread([this, on_files = std::move(on_files)] {
    std::unique_lock lock(mu_);
    bool ok = false;
    std::string installed;
    while (!stop_) {
      lock.unlock();
      Status st = ReconcileOnce();
      const std::string now = ReadText(options_.cert_dir + "/tls.crt") + ReadText(options_.cert_dir + "/tls.key");
      if (!st.ok()) {
        options_.logger->warn("Webhook certificate pass failed; retrying err={}", st.message());
      } else if (now != installed) {
        installed = now;
        if (on_files) on_files();
      }
      ok = st.ok();
      lock.lock();
      cv_.wait_for(lock, ok ? options_.resync : std::min<std::chrono::milliseconds>(options_.resync, std::chrono::seconds(1)),
                   [&] { return stop_; });
    }
  });
}

void WebhookCertRotator::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace phalanx::extender
