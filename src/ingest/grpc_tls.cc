#include "ingest/grpc_tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <vector>

#include "common/file_system.h"

namespace trainwatch::ingest {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

// OpenSSL's reason for the last failure ("no start line", ...), clearing its error queue.
std::string OpenSslReason() {
  unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "not PEM";
  const char* reason = ERR_reason_error_string(code);
  return reason ? reason : "not PEM";
}

Result<std::string> ReadPem(const std::string& what, const std::string& path) {
  Result<std::string> text = PosixFileSystem().ReadFile(path);
  if (!text.ok()) return Status::InvalidArgument(what + " " + path + ": " + text.status().message());
  return text;
}

std::unique_ptr<BIO, BioFree> MemoryBio(const std::string& text) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Every certificate in a PEM bundle (none: InvalidArgument).
Result<std::vector<X509Ptr>> ParseCertificates(const std::string& what, const std::string& path,
                                               const std::string& pem) {
  auto bio = MemoryBio(pem);
  std::vector<X509Ptr> certs;
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) certs.emplace_back(x);
  ERR_clear_error();  // the end of the bundle reads as an error
  if (certs.empty()) return Status::InvalidArgument(what + " " + path + ": no PEM certificate in it");
  return certs;
}

}  // namespace

Result<std::shared_ptr<grpc::ServerCredentials>> GrpcTlsCredentials(const GrpcTlsFiles& files) {
  TW_ASSIGN_OR_RETURN(std::string cert_pem, ReadPem("--tls-cert", files.cert_file));
  TW_ASSIGN_OR_RETURN(std::string key_pem, ReadPem("--tls-key", files.key_file));
  TW_ASSIGN_OR_RETURN(std::vector<X509Ptr> chain, ParseCertificates("--tls-cert", files.cert_file, cert_pem));
  auto key_bio = MemoryBio(key_pem);
  std::unique_ptr<EVP_PKEY, KeyFree> key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    return Status::InvalidArgument("--tls-key " + files.key_file + ": no unencrypted PEM private key in it (" +
                                   OpenSslReason() + ")");
  }
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("--tls-key " + files.key_file + " is not the key of the certificate in --tls-cert " +
                                   files.cert_file);
  }
  if (!files.client_ca_file.empty()) {
    TW_ASSIGN_OR_RETURN(std::string ca_pem, ReadPem("--tls-client-ca", files.client_ca_file));
    auto cas = ParseCertificates("--tls-client-ca", files.client_ca_file, ca_pem);
    if (!cas.ok()) return cas.status();
  }

  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key_file, files.cert_file, files.client_ca_file, kGrpcTlsRefreshSeconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (files.client_ca_file.empty()) {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::experimental::TlsServerCredentials(options);
  if (!credentials) return Status::Internal("gRPC could not make TLS server credentials");
  return credentials;
}

}  // namespace trainwatch::ingest
