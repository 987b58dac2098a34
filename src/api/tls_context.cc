#include <utility>  // before Asio: GCC 12 + C++20 needs std::exchange declared first

#include "api/tls_context.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <ctime>

#include <boost/asio/ssl/context.hpp>

#include "common/strings.h"

namespace trainwatch::api {

namespace ssl = boost::asio::ssl;

namespace {

// TLS 1.2 suites: forward-secret ECDHE with AEAD ciphers only (TLS 1.3's suites are all AEAD and
// OpenSSL's defaults are kept).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr const char* kGroups = "X25519:P-256:P-384";

// OpenSSL's reason for the last failure, emptying its error queue.
std::string OpenSslError() {
  std::string out;
  while (unsigned long err = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(err, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  return LowerHex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

// Trusts every certificate of a PEM bundle for client certificates and names them in the
// handshake's certificate request.
Status AddClientCas(SSL_CTX* ctx, std::string_view pem, const std::string& file) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int added = 0;
  for (;;) {
    std::unique_ptr<X509, X509Free> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    if (X509_STORE_add_cert(store, cert.get()) != 1 ||
        SSL_CTX_add_client_CA(ctx, cert.get()) != 1) {
      return Status::InvalidArgument("--tls-client-ca " + file + ": " + OpenSslError());
    }
    ++added;
  }
  ERR_clear_error();  // the end of the bundle reads as "no start line"
  if (added == 0)
    return Status::InvalidArgument("--tls-client-ca " + file + ": no PEM certificate in it");
  return Status::Ok();
}

TlsCertificateInfo DescribeCertificate(SSL_CTX* ctx) {
  TlsCertificateInfo info;
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (!cert) return info;
  if (char* subject = X509_NAME_oneline(X509_get_subject_name(cert), nullptr, 0)) {
    info.subject = subject;
    OPENSSL_free(subject);
  }
  if (BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)) {
    if (char* hex = BN_bn2hex(serial)) {
      info.serial = hex;
      OPENSSL_free(hex);
    }
    BN_free(serial);
  }
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1)
    info.not_after = static_cast<double>(timegm(&tm));
  return info;
}

}  // namespace

struct ServerTlsContext::Loaded {
  std::string cert, key, client_ca;
  std::string digest;
};

Result<ServerTlsContext::Loaded> ServerTlsContext::Read() const {
  Loaded l;
  auto read = [&](const char* flag, const std::string& path, std::string* out) -> Status {
    Result<std::string> bytes = fs_.ReadFile(path);
    if (!bytes.ok()) return bytes.status().WithContext(std::string(flag) + " " + path);
    *out = std::move(*bytes);
    return Status::Ok();
  };
  TW_RETURN_IF_ERROR(read("--tls-cert", files_.cert_file, &l.cert));
  TW_RETURN_IF_ERROR(read("--tls-key", files_.key_file, &l.key));
  if (!files_.client_ca_file.empty())
    TW_RETURN_IF_ERROR(read("--tls-client-ca", files_.client_ca_file, &l.client_ca));
  l.digest = Sha256Hex(l.cert) + Sha256Hex(l.key) + Sha256Hex(l.client_ca);
  return l;
}

namespace {

Result<std::shared_ptr<ssl::context>> Build(std::string_view cert, std::string_view key,
                                            std::string_view client_ca, const TlsFiles& files) {
  ERR_clear_error();
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* h = ctx->native_handle();
  SSL_CTX_set_min_proto_version(h, TLS1_2_VERSION);
  SSL_CTX_set_options(h, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  if (SSL_CTX_set_cipher_list(h, kTls12Ciphers) != 1 || SSL_CTX_set1_groups_list(h, kGroups) != 1) {
    return Status::Internal("TLS cipher settings: " + OpenSslError());
  }
  std::unique_ptr<BIO, BioFree> key_bio(BIO_new_mem_buf(key.data(), static_cast<int>(key.size())));
  std::unique_ptr<EVP_PKEY, PkeyFree> pkey(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!pkey)
    return Status::InvalidArgument("--tls-key " + files.key_file + ": not a PEM private key (" +
                                   OpenSslError() + ")");
  boost::system::error_code ec;
  ctx->use_certificate_chain(boost::asio::buffer(cert.data(), cert.size()), ec);
  if (ec)
    return Status::InvalidArgument("--tls-cert " + files.cert_file +
                                   ": not a PEM certificate chain (" + ec.message() + ")");
  if (X509_check_private_key(SSL_CTX_get0_certificate(h), pkey.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("--tls-key " + files.key_file +
                                   " is not the key of the certificate in --tls-cert " +
                                   files.cert_file);
  }
  if (SSL_CTX_use_PrivateKey(h, pkey.get()) != 1) {
    return Status::InvalidArgument("--tls-key " + files.key_file + ": " + OpenSslError());
  }
  if (!files.client_ca_file.empty()) {
    TW_RETURN_IF_ERROR(AddClientCas(h, client_ca, files.client_ca_file));
    SSL_CTX_set_verify(h, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    // Sessions resumed with a client certificate need an id context (else OpenSSL refuses them).
    static constexpr unsigned char kSessionContext[] = "trainwatch";
    SSL_CTX_set_session_id_context(h, kSessionContext, sizeof kSessionContext - 1);
  }
  return ctx;
}

}  // namespace

Result<std::unique_ptr<ServerTlsContext>> ServerTlsContext::Load(FileSystem& fs, TlsFiles files) {
  std::unique_ptr<ServerTlsContext> tls(new ServerTlsContext(fs, std::move(files)));
  Result<bool> loaded = tls->Reload();
  if (!loaded.ok()) return loaded.status();
  return tls;
}

ServerTlsContext::~ServerTlsContext() = default;

Result<bool> ServerTlsContext::Reload() {
  TW_ASSIGN_OR_RETURN(Loaded files, Read());
  {
    MutexLock lock(mu_);
    if (files.digest == digest_in_use_ || files.digest == digest_refused_) return false;
  }
  Result<std::shared_ptr<ssl::context>> built =
      Build(files.cert, files.key, files.client_ca, files_);
  MutexLock lock(mu_);
  if (!built.ok()) {
    digest_refused_ = files.digest;
    return built.status();
  }
  current_ = std::move(*built);
  certificate_ = DescribeCertificate(current_->native_handle());
  digest_in_use_ = files.digest;
  digest_refused_.clear();
  return true;
}

std::shared_ptr<ssl::context> ServerTlsContext::Current() const {
  MutexLock lock(mu_);
  return current_;
}

TlsCertificateInfo ServerTlsContext::certificate() const {
  MutexLock lock(mu_);
  return certificate_;
}

}  // namespace trainwatch::api
