// The webhook's self-managed certificates, as PEM text (docs/extender.md "Admission webhook",
// "Certificates"): a CA and a serving certificate made with OpenSSL (ECDSA P-256, SHA-256), what
// a certificate says (validity, DNS names), and the rotation rule that decides, from what the
// Secret holds and the time, what it should hold next.
//
// Rotation keeps every replica working: a new CA is first added to the trust bundle next to the
// old one (old serving certificates keep verifying), and only once that bundle is in the
// MutatingWebhookConfiguration is a serving certificate issued from the new CA. CAs leave the
// bundle when they expire.
// Pure (no I/O); thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/base/status.h"

namespace phalanx::extender {

using SystemTime = std::chrono::system_clock::time_point;

struct PemPair {
  std::string cert, key;  // PEM
  bool operator==(const PemPair&) const = default;
};

struct CertFacts {
  SystemTime not_before, not_after;
  std::vector<std::string> dns_names;  // subjectAltName DNS entries, in order
  bool is_ca = false;
  std::string subject;                 // one line, for logs
};

// A self-signed CA valid from an hour before `now` (clock skew between nodes) for `validity`.
Result<PemPair> MakeCa(const std::string& common_name, SystemTime now, std::chrono::seconds validity);
// A serving certificate (serverAuth) for `dns_names` (the first is the common name), signed by
// `ca`, valid until now + validity or the CA's own expiry, whichever comes first.
Result<PemPair> IssueServingCert(const PemPair& ca, const std::vector<std::string>& dns_names, SystemTime now,
                                 std::chrono::seconds validity);

Result<CertFacts> InspectCert(std::string_view pem);
// Whether `cert` is signed by `ca_cert`'s key (one level; no chain building, no time check).
bool SignedBy(std::string_view cert, std::string_view ca_cert);
// Whether `key` is the private key of `cert`.
bool KeyMatches(std::string_view cert, std::string_view key);
// The certificates of a PEM bundle, each as its own PEM block, in order; other text is dropped.
std::vector<std::string> SplitPemBundle(std::string_view bundle);

// The names kube-apiserver dials for a Service webhook: <svc>.<ns>.svc (what it verifies), and
// the shorter and longer forms other clients use.
std::vector<std::string> ServiceDnsNames(const std::string& service, const std::string& namespace_);

// What the Secret holds (its data, decoded). Keys: ca.crt = trust bundle (signer first),
// ca-signer.crt / ca-signer.key = the CA issuing now, tls.crt / tls.key = the serving pair.
struct WebhookCertMaterial {
  std::string ca_bundle;
  PemPair signer;
  PemPair serving;
  bool operator==(const WebhookCertMaterial&) const = default;
};

struct RotationPolicy {
  std::vector<std::string> dns_names;
  std::chrono::seconds cert_validity{std::chrono::hours(24 * 365)};
  std::chrono::seconds ca_validity{std::chrono::hours(24 * 3650)};
  // Renew a certificate (CA or serving) this long before it expires.
  std::chrono::seconds renew_before{std::chrono::hours(24 * 30)};
};

// InvalidArgument naming the flag (`flag_prefix` + field): durations positive, renew_before
// shorter than cert_validity, cert_validity no longer than ca_validity, at least one DNS name.
Status ValidateRotationPolicy(const RotationPolicy& policy, std::string_view flag_prefix = "--webhook-cert-");

struct RotationPlan {
  WebhookCertMaterial next;
  std::vector<std::string> reasons;  // empty = nothing to change
};

// `published`: the MutatingWebhookConfiguration's caBundle already trusts `current.signer`
// (or there is no configuration to publish to). Errors only when OpenSSL fails.
Result<RotationPlan> PlanRotation(const WebhookCertMaterial& current, bool published, SystemTime now,
                                  const RotationPolicy& policy);

}  // namespace phalanx::extender
