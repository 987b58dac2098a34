// SigV4 against the values AWS publishes: the signature test suite's get-vanilla, and the S3 API
// reference's header-based examples ("Signature Calculations for the Authorization Header").
#include "blob/sigv4.h"

#include <gtest/gtest.h>

namespace trainwatch::blob {
namespace {

constexpr char kEmptySha[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(SigV4Test, TestSuiteGetVanilla) {
  SigV4Request request;
  request.method = "GET";
  request.canonical_uri = "/";
  request.headers = {{"host", "example.amazonaws.com"}, {"x-amz-date", "20150830T123600Z"}};
  request.payload_sha256_hex = kEmptySha;
  SigV4Scope scope{"20150830T123600Z", "us-east-1", "service"};
  EXPECT_EQ(StringToSign(scope, CanonicalRequest(request)),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  SigV4Credentials credentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
  EXPECT_EQ(AuthorizationHeader(request, scope, credentials),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

const SigV4Scope kS3Scope{"20130524T000000Z", "us-east-1", "s3"};
constexpr char kS3Secret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

TEST(SigV4Test, S3GetObjectExample) {
  SigV4Request request;
  request.method = "GET";
  request.canonical_uri = "/test.txt";
  request.headers = {{"host", "examplebucket.s3.amazonaws.com"},
                     {"range", "bytes=0-9"},
                     {"x-amz-content-sha256", kEmptySha},
                     {"x-amz-date", "20130524T000000Z"}};
  request.payload_sha256_hex = kEmptySha;
  EXPECT_EQ(Sha256Hex(CanonicalRequest(request)),
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(Signature(request, kS3Scope, kS3Secret),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4Test, S3PutObjectExample) {
  const std::string payload = Sha256Hex("Welcome to Amazon S3.");
  EXPECT_EQ(payload, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  SigV4Request request;
  request.method = "PUT";
  request.canonical_uri = UriEncodePath("/test$file.text");
  EXPECT_EQ(request.canonical_uri, "/test%24file.text");
  request.headers = {{"date", "Fri, 24 May 2013 00:00:00 GMT"},
                     {"host", "examplebucket.s3.amazonaws.com"},
                     {"x-amz-content-sha256", payload},
                     {"x-amz-date", "20130524T000000Z"},
                     {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
  request.payload_sha256_hex = payload;
  EXPECT_EQ(Signature(request, kS3Scope, kS3Secret),
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(SigV4Test, S3ListObjectsExampleWithQuery) {
  SigV4Request request;
  request.method = "GET";
  request.canonical_uri = "/";
  request.canonical_query = "max-keys=2&prefix=J";
  request.headers = {{"host", "examplebucket.s3.amazonaws.com"},
                     {"x-amz-content-sha256", kEmptySha},
                     {"x-amz-date", "20130524T000000Z"}};
  request.payload_sha256_hex = kEmptySha;
  EXPECT_EQ(Signature(request, kS3Scope, kS3Secret),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4Test, CanonicalHeaderValuesAreTrimmedAndFolded) {
  SigV4Request request;
  request.method = "GET";
  request.canonical_uri = "/";
  request.headers = {{"host", "h"}, {"x-amz-meta-a", "  a   b  c "}};
  request.payload_sha256_hex = kEmptySha;
  EXPECT_EQ(CanonicalRequest(request),
            std::string("GET\n/\n\nhost:h\nx-amz-meta-a:a b c\n\nhost;x-amz-meta-a\n") + kEmptySha);
}

TEST(SigV4Test, PathEncodingKeepsSlashesAndUnreserved) {
  EXPECT_EQ(UriEncodePath("/bucket/a b/é~x_y-z.png"), "/bucket/a%20b/%C3%A9~x_y-z.png");
  EXPECT_EQ(AmzDate(1440938160), "20150830T123600Z");
}

}  // namespace
}  // namespace trainwatch::blob
