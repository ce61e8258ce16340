// WebhookCertRotator: the webhook's serving certificate, managed by Phalanx itself (no
// cert-manager; docs/extender.md "Certificates"). Every extender replica runs one:
//  - reads the Secret (--webhook-cert-secret NAMESPACE/NAME) and decides with PlanRotation
//    (webhook_certs.h) whether it needs a CA, a serving certificate or a renewal; writes it back
//    with the resourceVersion it read (create when absent). Replicas racing on it lose with
//    409 Conflict / AlreadyExists and start over from what the winner stored, so all of them
//    end up serving the same pair;
//  - publishes the Secret's trust bundle into every webhook of the MutatingWebhookConfiguration
//    (--webhook-configuration NAME) with a JSON patch guarded by a `test` of its
//    resourceVersion (a concurrent change fails the test, 422, and is read again);
//  - writes tls.crt / tls.key into --webhook-cert-dir when they differ from the files there:
//    the WebhookServer re-reads them (webhook_server.h).
// A pass runs at Start and every `resync` (a GET of the Secret and of the configuration), so a
// replica follows another one's rotation within `resync`.
// RBAC: secrets get/create/update (that name), mutatingwebhookconfigurations get/patch (that name).
// Thread-safe; Start once, Stop once (or let the destructor do it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/base/result.h"
#include "core/base/status.h"
#include "core/kube/client.h"
#include "core/metrics/registry.h"
#include "extender/webhook/webhook_certs.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace phalanx::extender {

struct WebhookCertOptions {
  std::string secret_namespace, secret_name;
  std::string webhook_configuration;  // "" = publish nowhere (the bundle is then only in the Secret)
  std::string cert_dir;               // tls.crt, tls.key (and ca.crt) for the listener
  RotationPolicy policy;
  std::chrono::milliseconds resync{std::chrono::seconds(10)};
  std::function<SystemTime()> now;  // null = system_clock::now
  std::shared_ptr<spdlog::logger> logger;
};

// The options from the daemon's flags, checked before anything starts; errors name the flag.
// nullopt when --webhook-cert-secret is not given (the certificate comes from files).
// `service` is the webhook's Service in the Secret's namespace (the certificate's DNS names).
Result<std::optional<WebhookCertOptions>> WebhookCertOptionsFromFlags(const std::string& secret,
                                                                      const std::string& configuration,
                                                                      const std::string& service,
                                                                      const std::string& cert_dir,
                                                                      const std::string& validity,
                                                                      const std::string& ca_validity,
                                                                      const std::string& renew_before);

// "90s", "30m", "720h", "365d" (a positive whole number and a unit).
Result<std::chrono::seconds> ParseCertDuration(std::string_view text);

class WebhookCertRotator {
 public:
  WebhookCertRotator(kube::KubeClient& client, WebhookCertOptions options, metrics::Registry* registry);
  ~WebhookCertRotator();
  WebhookCertRotator(const WebhookCertRotator&) = delete;
  WebhookCertRotator& operator=(const WebhookCertRotator&) = delete;

  // One pass (see above). OK when the Secret holds a usable pair and the files match it.
  Status ReconcileOnce();
  // Runs passes on a thread: at once, then every `resync` (every second until the first pass
  // succeeds). `on_files` is called after each pass that wrote the files (the first one starts
  // the listener).
  void Start(std::function<void()> on_files);
  void Stop();

 private:
  struct Stored {
    WebhookCertMaterial material;
    std::string resource_version;  // "" = no Secret
  };
  Result<Stored> ReadSecret();
  // The new resourceVersion; Aborted on a lost race (read again).
  Result<std::string> WriteSecret(const WebhookCertMaterial& material, const std::string& resource_version);
  // Whether the configuration trusts `signer`; nullopt when there is no configuration.
  Result<std::optional<bool>> Published(const std::string& signer);
  // Aborted on a lost race.
  Status Publish(const std::string& bundle);
  // True when the files changed.
  Result<bool> WriteFiles(const WebhookCertMaterial& material);
  SystemTime Now() const;

  kube::KubeClient& client_;
  WebhookCertOptions options_;
  metrics::CounterFamily* rotations_ = nullptr;
  metrics::Gauge* expiry_ = nullptr;
  bool warned_no_configuration_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace phalanx::extender
