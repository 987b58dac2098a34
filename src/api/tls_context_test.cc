#include <utility>  // before Asio: GCC 12 + C++20 needs std::exchange declared first

#include "api/tls_context.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fstream>

#include <boost/asio/ssl/context.hpp>
#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"

namespace trainwatch::api {
namespace {

// A self-signed P-256 certificate and its key, as PEM.
struct Pem {
  std::string cert, key;
};

Pem MakeCertificate(long serial) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("tls-test"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_sign(x, key, EVP_sha256());
  auto to_string = [](BIO* bio) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<size_t>(n));
    BIO_free(bio);
    return out;
  };
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, x);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  Pem pem{to_string(cert_bio), to_string(key_bio)};
  X509_free(x);
  EVP_PKEY_free(key);
  return pem;
}

class TlsContextTest : public ::testing::Test {
 protected:
  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_.Join(name), std::ios::binary | std::ios::trunc) << bytes;
  }
  void Install(const Pem& pem) {
    Write("cert.pem", pem.cert);
    Write("key.pem", pem.key);
  }
  TlsFiles Files() const { return {dir_.Join("cert.pem"), dir_.Join("key.pem"), ""}; }

  test::TempDir dir_;
};

TEST_F(TlsContextTest, LoadsAPairAndDescribesItsCertificate) {
  Install(MakeCertificate(0x1234));
  auto tls = ServerTlsContext::Load(PosixFileSystem(), Files());
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_EQ((*tls)->certificate().serial, "1234");
  EXPECT_EQ((*tls)->certificate().subject, "/CN=tls-test");
  EXPECT_GT((*tls)->certificate().not_after, 0);
  SSL_CTX* ctx = (*tls)->Current()->native_handle();
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx), TLS1_2_VERSION);
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_NONE);  // no client CA: no client certificate asked
}

TEST_F(TlsContextTest, RefusesAKeyOfAnotherCertificateNamingTheFiles) {
  Pem a = MakeCertificate(1), b = MakeCertificate(2);
  Write("cert.pem", a.cert);
  Write("key.pem", b.key);
  auto tls = ServerTlsContext::Load(PosixFileSystem(), Files());
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.status().message().find("key.pem is not the key of the certificate in --tls-cert"), std::string::npos)
      << tls.status().message();
}

TEST_F(TlsContextTest, RefusesFilesThatAreNotPemOrMissing) {
  Install(MakeCertificate(1));
  Write("cert.pem", "not a certificate\n");
  auto tls = ServerTlsContext::Load(PosixFileSystem(), Files());
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.status().message().find("cert.pem: not a PEM certificate chain"), std::string::npos);
  TlsFiles missing = Files();
  missing.key_file = dir_.Join("nope.key");
  tls = ServerTlsContext::Load(PosixFileSystem(), missing);
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.status().ToString().find("--tls-key " + dir_.Join("nope.key")), std::string::npos)
      << tls.status().ToString();
}

TEST_F(TlsContextTest, ReloadSwapsOnlyForNewValidBytesAndOpenHoldersKeepTheirs) {
  Install(MakeCertificate(1));
  auto tls = ServerTlsContext::Load(PosixFileSystem(), Files());
  ASSERT_TRUE(tls.ok());
  ServerTlsContext& t = **tls;
  auto open_connection = t.Current();
  EXPECT_EQ(t.Reload().value(), false);  // same bytes
  EXPECT_EQ(t.Current(), open_connection);

  Pem next = MakeCertificate(2);
  Write("cert.pem", next.cert);  // half a rotation: the key is still the old one
  Result<bool> half = t.Reload();
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(t.certificate().serial, "01");
  EXPECT_EQ(t.Current(), open_connection);
  EXPECT_EQ(t.Reload().value(), false);  // the same refused bytes are not reported again

  Write("key.pem", next.key);
  EXPECT_EQ(t.Reload().value(), true);
  EXPECT_EQ(t.certificate().serial, "02");
  EXPECT_NE(t.Current(), open_connection);
  // The context an open connection holds is untouched: still the first certificate.
  X509* held = SSL_CTX_get0_certificate(open_connection->native_handle());
  EXPECT_EQ(ASN1_INTEGER_get(X509_get0_serialNumber(held)), 1);
}

TEST_F(TlsContextTest, AClientCaAsksForAndVerifiesClientCertificates) {
  Install(MakeCertificate(1));
  Pem client_ca = MakeCertificate(7);
  Write("ca.pem", client_ca.cert + MakeCertificate(8).cert);
  TlsFiles files = Files();
  files.client_ca_file = dir_.Join("ca.pem");
  auto tls = ServerTlsContext::Load(PosixFileSystem(), files);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  SSL_CTX* ctx = (*tls)->Current()->native_handle();
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
  EXPECT_EQ(sk_X509_NAME_num(SSL_CTX_get_client_CA_list(ctx)), 2);

  Write("ca.pem", "no certificates here\n");
  EXPECT_FALSE((*tls)->Reload().ok());
}

}  // namespace
}  // namespace trainwatch::api
