// Throwaway PKI for TLS tests: a CA, a server certificate for localhost/127.0.0.1/::1 and a client
// certificate, generated in-process with OpenSSL's C API (EC P-256, valid from an hour ago for 30
// days) and written as PEM files into a directory. Header-only; link OpenSSL::Crypto (or the
// phalanx_test_certs target from tests/unit/core/http/CMakeLists.txt).
//
// Each call makes a new CA, so certificates from two calls do not verify against each other:
// handy for "client cert from the wrong CA" tests. Thread-safe (no shared state).
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>

#include "core/base/result.h"

namespace phalanx::testing {

struct TestCerts {
  std::string dir;
  std::string ca_cert_file, ca_key_file;
  std::string server_cert_file, server_key_file;  // CN=localhost, SAN localhost, 127.0.0.1, ::1
  std::string client_cert_file, client_key_file;  // CN=phalanx-test-client, clientAuth
  // The same material in memory (kubeconfig "-data" fields, cpprest contexts).
  std::string ca_cert_pem, server_cert_pem, server_key_pem, client_cert_pem, client_key_pem;
};

// A unique short directory under /tmp (unix-socket paths stay under 108 chars), removed with its
// contents on destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/phx-XXXXXX";
    if (const char* made = mkdtemp(tmpl)) path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Empty if mkdtemp failed.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

namespace test_certs_internal {

struct PkeyFree { void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); } };
struct X509Free { void operator()(X509* p) const { X509_free(p); } };
struct ExtFree { void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); } };
struct BioFree { void operator()(BIO* p) const { BIO_free(p); } };
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

inline PkeyPtr NewKey() { return PkeyPtr(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")); }

inline bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(
      X509V3_EXT_conf_nid(nullptr, &ctx, nid, const_cast<char*>(value)));
  return ext != nullptr && X509_add_ext(cert, ext.get(), -1) == 1;
}

// issuer/issuer_key null: self-signed.
inline X509Ptr NewCert(EVP_PKEY* key, const char* common_name, long serial, X509* issuer,
                       EVP_PKEY* issuer_key, bool is_ca, const char* extended_usage,
                       const char* subject_alt_names) {
  X509Ptr cert(X509_new());
  if (!cert) return nullptr;
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 30L * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("phalanx-test"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  bool ok = AddExtension(cert.get(), signer, NID_basic_constraints,
                         is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE") &&
            AddExtension(cert.get(), signer, NID_key_usage,
                         is_ca ? "critical,keyCertSign,cRLSign"
                               : "critical,digitalSignature,keyEncipherment") &&
            AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (ok && issuer != nullptr) {
    ok = AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  }
  if (ok && extended_usage != nullptr) {
    ok = AddExtension(cert.get(), signer, NID_ext_key_usage, extended_usage);
  }
  if (ok && subject_alt_names != nullptr) {
    ok = AddExtension(cert.get(), signer, NID_subject_alt_name, subject_alt_names);
  }
  if (!ok) return nullptr;
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    return nullptr;
  }
  return cert;
}

inline std::string CertPem(X509* cert) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

inline std::string KeyPem(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

inline Status WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) return InternalError("cannot write " + path);
  return OkStatus();
}

}  // namespace test_certs_internal

// Generates the CA, server and client certificates and writes ca.pem, ca-key.pem, server.pem,
// server-key.pem, client.pem and client-key.pem into `dir` (which must exist).
inline Result<TestCerts> GenerateTestCerts(const std::string& dir) {
  using namespace test_certs_internal;  // NOLINT(build/namespaces): local to this function
  PkeyPtr ca_key = NewKey(), server_key = NewKey(), client_key = NewKey();
  if (!ca_key || !server_key || !client_key) return InternalError("EC key generation failed");
  X509Ptr ca = NewCert(ca_key.get(), "phalanx-test-ca", 1, nullptr, nullptr, true, nullptr, nullptr);
  if (!ca) return InternalError("CA certificate generation failed");
  X509Ptr server = NewCert(server_key.get(), "localhost", 2, ca.get(), ca_key.get(), false,
                           "serverAuth", "DNS:localhost,IP:127.0.0.1,IP:::1");
  X509Ptr client = NewCert(client_key.get(), "phalanx-test-client", 3, ca.get(), ca_key.get(),
                           false, "clientAuth", nullptr);
  if (!server || !client) return InternalError("leaf certificate generation failed");

  TestCerts certs;
  certs.dir = dir;
  certs.ca_cert_file = dir + "/ca.pem";
  certs.ca_key_file = dir + "/ca-key.pem";
  certs.server_cert_file = dir + "/server.pem";
  certs.server_key_file = dir + "/server-key.pem";
  certs.client_cert_file = dir + "/client.pem";
  certs.client_key_file = dir + "/client-key.pem";
  certs.ca_cert_pem = CertPem(ca.get());
  certs.server_cert_pem = CertPem(server.get());
  certs.server_key_pem = KeyPem(server_key.get());
  certs.client_cert_pem = CertPem(client.get());
  certs.client_key_pem = KeyPem(client_key.get());
  PHX_RETURN_IF_ERROR(WriteFile(certs.ca_cert_file, certs.ca_cert_pem));
  PHX_RETURN_IF_ERROR(WriteFile(certs.ca_key_file, KeyPem(ca_key.get())));
  PHX_RETURN_IF_ERROR(WriteFile(certs.server_cert_file, certs.server_cert_pem));
  PHX_RETURN_IF_ERROR(WriteFile(certs.server_key_file, certs.server_key_pem));
  PHX_RETURN_IF_ERROR(WriteFile(certs.client_cert_file, certs.client_cert_pem));
  PHX_RETURN_IF_ERROR(WriteFile(certs.client_key_file, certs.client_key_pem));
  return certs;
}

}  // namespace phalanx::testing
