// Self-managed webhook certificates with OpenSSL's C API (see webhook_certs.h).
#include "extender/webhook/webhook_certs.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

#include <fmt/format.h>

namespace phalanx::extender {
namespace {

struct PkeyFree { void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); } };
struct X509Free { void operator()(X509* p) const { X509_free(p); } };
struct ExtFree { void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); } };
struct BioFree { void operator()(BIO* p) const { BIO_free(p); } };
struct NamesFree { void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); } };
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

constexpr auto kBackdate = std::chrono::hours(1);  // nodes' clocks differ

BioPtr ReadBio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

X509Ptr ParseCert(std::string_view pem) {
  BioPtr bio = ReadBio(pem);
  return X509Ptr(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

PkeyPtr ParseKey(std::string_view pem) {
  BioPtr bio = ReadBio(pem);
  return PkeyPtr(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return size > 0 ? std::string(data, static_cast<size_t>(size)) : "";
}

std::string CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return "";
  return BioText(bio.get());
}

std::string KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) return "";
  return BioText(bio.get());
}

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext != nullptr && X509_add_ext(cert, ext.get(), -1) == 1;
}

// Random positive 127-bit serial (RFC 5280: unique per issuer, at most 20 octets).
bool SetRandomSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  if (bn == nullptr) return false;
  const bool ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
  BN_free(bn);
  return ok;
}

bool SetValidity(X509* cert, SystemTime from, SystemTime until) {
  const time_t a = std::chrono::system_clock::to_time_t(from), b = std::chrono::system_clock::to_time_t(until);
  return ASN1_TIME_set(X509_getm_notBefore(cert), a) != nullptr && ASN1_TIME_set(X509_getm_notAfter(cert), b) != nullptr;
}

SystemTime FromAsn1(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return SystemTime{};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

Result<PemPair> Issue(const std::string& common_name, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, bool is_ca,
                      const std::vector<std::string>& dns_names, SystemTime from, SystemTime until) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1 || !SetRandomSerial(cert.get()) ||
      !SetValidity(cert.get(), from, until) || X509_set_pubkey(cert.get(), key) != 1) {
    return InternalError("OpenSSL: building the certificate failed");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("phalanx"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                             -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  bool ok = AddExtension(cert.get(), signer, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE") &&
            AddExtension(cert.get(), signer, NID_key_usage,
                         is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature,keyEncipherment") &&
            AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (ok && issuer != nullptr) ok = AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  if (ok && !is_ca) ok = AddExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth");
  if (ok && !dns_names.empty()) {
    std::string sans;
    for (const auto& d : dns_names) sans += (sans.empty() ? "DNS:" : ",DNS:") + d;
    ok = AddExtension(cert.get(), signer, NID_subject_alt_name, sans);
  }
  if (!ok) return InternalError("OpenSSL: adding certificate extensions failed");
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    return InternalError("OpenSSL: signing the certificate failed");
  }
  PemPair out{CertPem(cert.get()), KeyPem(key)};
  if (out.cert.empty() || out.key.empty()) return InternalError("OpenSSL: writing PEM failed");
  return out;
}

PkeyPtr NewKey() { return PkeyPtr(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")); }

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += p;
  return out;
}

}  // namespace

Result<PemPair> MakeCa(const std::string& common_name, SystemTime now, std::chrono::seconds validity) {
  PkeyPtr key = NewKey();
  if (!key) return InternalError("OpenSSL: EC P-256 key generation failed");
  return Issue(common_name, key.get(), nullptr, nullptr, true, {}, now - kBackdate, now + validity);
}

Result<PemPair> IssueServingCert(const PemPair& ca, const std::vector<std::string>& dns_names, SystemTime now,
                                 std::chrono::seconds validity) {
  if (dns_names.empty()) return InvalidArgumentError("a serving certificate needs at least one DNS name");
  X509Ptr ca_cert = ParseCert(ca.cert);
  PkeyPtr ca_key = ParseKey(ca.key);
  if (!ca_cert || !ca_key) return InvalidArgumentError("the CA certificate or key does not parse");
  PkeyPtr key = NewKey();
  if (!key) return InternalError("OpenSSL: EC P-256 key generation failed");
  const SystemTime until = std::min(now + validity, FromAsn1(X509_get0_notAfter(ca_cert.get())));
  return Issue(dns_names.front(), key.get(), ca_cert.get(), ca_key.get(), false, dns_names, now - kBackdate, until);
}

Result<CertFacts> InspectCert(std::string_view pem) {
  X509Ptr cert = ParseCert(pem);
  if (!cert) return InvalidArgumentError("not a PEM certificate");
  CertFacts facts;
  facts.not_before = FromAsn1(X509_get0_notBefore(cert.get()));
  facts.not_after = FromAsn1(X509_get0_notAfter(cert.get()));
  facts.is_ca = X509_check_ca(cert.get()) != 0;
  std::unique_ptr<GENERAL_NAMES, NamesFree> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names.get(), i);
    if (n->type != GEN_DNS) continue;
    const ASN1_IA5STRING* s = n->d.dNSName;
    facts.dns_names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                 static_cast<size_t>(ASN1_STRING_length(s)));
  }
  char buf[256];
  X509_NAME_oneline(X509_get_subject_name(cert.get()), buf, sizeof buf);
  facts.subject = buf;
  return facts;
}

bool SignedBy(std::string_view cert, std::string_view ca_cert) {
  X509Ptr c = ParseCert(cert), ca = ParseCert(ca_cert);
  if (!c || !ca) return false;
  EVP_PKEY* ca_key = X509_get0_pubkey(ca.get());
  return ca_key != nullptr && X509_verify(c.get(), ca_key) == 1;
}

bool KeyMatches(std::string_view cert, std::string_view key) {
  X509Ptr c = ParseCert(cert);
  PkeyPtr k = ParseKey(key);
  return c && k && X509_check_private_key(c.get(), k.get()) == 1;
}

std::vector<std::string> SplitPemBundle(std::string_view bundle) {
  static constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----", kEnd = "-----END CERTIFICATE-----";
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t begin = bundle.find(kBegin, pos);
    if (begin == std::string_view::npos) break;
    const size_t end = bundle.find(kEnd, begin);
    if (end == std::string_view::npos) break;
    out.emplace_back(std::string(bundle.substr(begin, end + kEnd.size() - begin)) + "\n");
    pos = end + kEnd.size();
  }
  return out;
}

std::vector<std::string> ServiceDnsNames(const std::string& service, const std::string& namespace_) {
  const std::string svc = service + "." + namespace_ + ".svc";
  return {svc, service, service + "." + namespace_, svc + ".cluster.local"};
}

Status ValidateRotationPolicy(const RotationPolicy& policy, std::string_view flag_prefix) {
  using std::chrono::seconds;
  for (auto [field, value] : {std::pair{"validity", policy.cert_validity}, std::pair{"ca-validity", policy.ca_validity},
                              std::pair{"renew-before", policy.renew_before}}) {
    if (value <= seconds(0)) return InvalidArgumentError(fmt::format("{}{}: must be positive", flag_prefix, field));
  }
  if (policy.renew_before >= policy.cert_validity) {
    return InvalidArgumentError(fmt::format("{}renew-before ({}s) must be shorter than {}validity ({}s)", flag_prefix,
                                            policy.renew_before.count(), flag_prefix, policy.cert_validity.count()));
  }
  if (policy.cert_validity > policy.ca_validity) {
    return InvalidArgumentError(fmt::format("{}validity ({}s) must not exceed {}ca-validity ({}s)", flag_prefix,
                                            policy.cert_validity.count(), flag_prefix, policy.ca_validity.count()));
  }
  if (policy.dns_names.empty()) return InvalidArgumentError("the webhook certificate needs a DNS name (the Service)");
  return OkStatus();
}

Result<RotationPlan> PlanRotation(const WebhookCertMaterial& current, bool published, SystemTime now,
                                  const RotationPolicy& policy) {
  RotationPlan plan{current, {}};
  WebhookCertMaterial& next = plan.next;
  const SystemTime renew_by = now + policy.renew_before;

  // 1. The signing CA: usable, and not due for renewal.
  auto signer = InspectCert(next.signer.cert);
  bool new_signer = false;
  if (!signer.ok() || !signer->is_ca || !KeyMatches(next.signer.cert, next.signer.key)) {
    plan.reasons.push_back(next.signer.cert.empty() ? "no CA yet" : "the CA does not load");
    new_signer = true;
  } else if (signer->not_after <= renew_by) {
    plan.reasons.push_back("the CA expires within renew-before");
    new_signer = true;
  }
  if (new_signer) {
    PHX_ASSIGN_OR_RETURN(next.signer, MakeCa("phalanx-webhook-ca", now, policy.ca_validity));
  }

  // 2. The trust bundle: the signer first, then the older CAs that have not expired (serving
  //    certificates they signed may still be in use by other replicas).
  std::vector<std::string> bundle{next.signer.cert};
  for (const auto& ca : SplitPemBundle(current.ca_bundle)) {
    auto facts = InspectCert(ca);
    if (!facts.ok() || !facts->is_ca || facts->not_after <= now || ca == next.signer.cert) continue;
    bundle.push_back(ca);
  }
  next.ca_bundle = Join(bundle);
  if (next.ca_bundle != current.ca_bundle && !new_signer) plan.reasons.push_back("the trust bundle changed");

  // 3. The serving pair. One that works but is due (renewal, new CA) is replaced only once the
  //    API server trusts the signer; one that does not work is replaced at once.
  auto serving = InspectCert(next.serving.cert);
  const bool broken = !serving.ok() || !KeyMatches(next.serving.cert, next.serving.key) || serving->not_after <= now ||
                      serving->dns_names != policy.dns_names;
  std::string why;
  if (broken) {
    why = next.serving.cert.empty() ? "no serving certificate yet" : "the serving certificate does not fit";
  } else if (!SignedBy(next.serving.cert, next.signer.cert)) {
    why = "the serving certificate is not from the current CA";
  } else if (serving->not_after <= renew_by) {
    why = "the serving certificate expires within renew-before";
  }
  const bool trusted = published && !new_signer;
  if (!why.empty() && (broken || trusted)) {
    PHX_ASSIGN_OR_RETURN(next.serving, IssueServingCert(next.signer, policy.dns_names, now, policy.cert_validity));
    plan.reasons.push_back(why);
  }
  if (next == current) plan.reasons.clear();
  return plan;
}

}  // namespace phalanx::extender
