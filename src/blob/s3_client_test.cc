#include "blob/s3_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::blob {
namespace {

using ::testing::HasSubstr;

TEST(S3UrlTest, BucketAndPrefix) {
  std::string bucket, prefix;
  ASSERT_TRUE(ParseS3Url("s3://my-bucket/train/blobs/", &bucket, &prefix).ok());
  EXPECT_EQ(bucket, "my-bucket");
  EXPECT_EQ(prefix, "train/blobs");
  ASSERT_TRUE(ParseS3Url("s3://my.bucket", &bucket, &prefix).ok());
  EXPECT_EQ(bucket, "my.bucket");
  EXPECT_EQ(prefix, "");
}

TEST(S3UrlTest, ErrorsSayWhatIsWrong) {
  std::string bucket, prefix;
  EXPECT_THAT(ParseS3Url("gs://b/p", &bucket, &prefix).message(), HasSubstr("s3://bucket"));
  EXPECT_THAT(ParseS3Url("s3://B_ad/p", &bucket, &prefix).message(), HasSubstr("bucket name"));
  EXPECT_THAT(ParseS3Url("s3:///p", &bucket, &prefix).message(), HasSubstr("bucket name"));
  EXPECT_THAT(ParseS3Url("s3://bucket/a//b", &bucket, &prefix).message(), HasSubstr("prefix"));
}

TEST(S3EndpointTest, HostOfEndpoint) {
  EXPECT_EQ(*EndpointHost("http://127.0.0.1:9000"), "127.0.0.1:9000");
  EXPECT_EQ(*EndpointHost("https://s3.eu-west-1.amazonaws.com/"), "s3.eu-west-1.amazonaws.com");
  EXPECT_FALSE(EndpointHost("ftp://x").ok());
  EXPECT_FALSE(EndpointHost("http://x/path").ok());
  EXPECT_FALSE(EndpointHost("http://user:pw@x").ok());
  EXPECT_FALSE(EndpointHost("http://").ok());
}

TEST(S3ClientTest, CreateNeedsCredentialsAndNeverEchoesThem) {
  SystemClock clock;
  S3Options options;
  options.endpoint = "http://127.0.0.1:1";
  options.bucket = "bucket";
  options.credentials.access_key_id = "AKID";
  Result<std::unique_ptr<S3Client>> client = S3Client::Create(options, clock);
  ASSERT_FALSE(client.ok());
  EXPECT_THAT(client.status().message(), HasSubstr("AWS_SECRET_ACCESS_KEY"));
  EXPECT_THAT(client.status().message(), ::testing::Not(HasSubstr("AKID")));
}

TEST(S3ClientTest, UnreachableEndpointIsUnavailableNotACrash) {
  SystemClock clock;
  S3Options options;
  options.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  options.bucket = "bucket";
  options.credentials = {"AKID", "very-secret", ""};
  Result<std::unique_ptr<S3Client>> client = S3Client::Create(options, clock);
  ASSERT_TRUE(client.ok());
  Status put = (*client)->Put("abc", "bytes");
  EXPECT_EQ(put.code(), StatusCode::kUnavailable);
  EXPECT_THAT(put.message(), HasSubstr("cannot reach http://127.0.0.1:1"));
  EXPECT_THAT(put.message(), ::testing::Not(HasSubstr("very-secret")));
  EXPECT_EQ((*client)->Get("abc").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ((*client)->CheckBucket().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace trainwatch::blob
