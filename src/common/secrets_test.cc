#include "common/secrets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch {
namespace {

using ::testing::ElementsAre;

TEST(KeyWords, SplitsAtSeparatorsAndCaseChanges) {
  EXPECT_THAT(KeyWords("OpenAI-APIKey"), ElementsAre("open", "ai", "api", "key"));
  EXPECT_THAT(KeyWords("db.password"), ElementsAre("db", "password"));
  EXPECT_THAT(KeyWords("HF_TOKEN"), ElementsAre("hf", "token"));
  EXPECT_THAT(KeyWords("apiKey2"), ElementsAre("api", "key2"));
}

TEST(SecretMasker, MatchesWordsNotSubstrings) {
  SecretMasker masker;
  for (const char* secret : {"password", "DB_PASSWORD", "openai_api_key", "apiKey", "ApiKey", "APIKEY",
                             "hf_token", "aws_secret_access_key", "private_key", "gcp_credentials",
                             "auth", "basic-auth", "passwd"}) {
    EXPECT_TRUE(masker.IsSecretKey(secret)) << secret;
  }
  for (const char* plain : {"max_tokens", "tokenizer", "num_tokens", "author", "lr", "keyframe",
                            "api_version", "secretary_count"}) {
    EXPECT_FALSE(masker.IsSecretKey(plain)) << plain;
  }
}

TEST(SecretMasker, MasksValuesAtAnyDepthAndKeepsTheRest) {
  SecretMasker masker;
  nlohmann::json config = nlohmann::json::parse(R"({
    "lr": 0.001, "password": "hunter2", "use_auth": true,
    "db": {"host": "db1", "credentials": {"user": "ana", "pass": "x"}},
    "services": [{"name": "s3", "access_key": "AKIA123", "token": null}],
    "max_tokens": 512
  })");
  EXPECT_EQ(masker.Mask(&config), 3);
  EXPECT_EQ(config["password"], "***");
  EXPECT_EQ(config["use_auth"], true);  // a boolean hides nothing
  EXPECT_EQ(config["db"]["credentials"], "***");
  EXPECT_EQ(config["db"]["host"], "db1");
  EXPECT_EQ(config["services"][0]["access_key"], "***");
  EXPECT_TRUE(config["services"][0]["token"].is_null());
  EXPECT_EQ(config["max_tokens"], 512);
  EXPECT_EQ(config["lr"], 0.001);
}

TEST(SecretMasker, PatternsAreConfigurable) {
  SecretMasker masker({"pin", "wandb_key"});
  EXPECT_TRUE(masker.IsSecretKey("card_pin"));
  EXPECT_TRUE(masker.IsSecretKey("WANDB_KEY"));
  EXPECT_FALSE(masker.IsSecretKey("password"));
}

TEST(SecretMasker, MasksTheValueOfKeyValueTags) {
  SecretMasker masker;
  EXPECT_EQ(masker.MaskTag("token=abc123"), "token=***");
  EXPECT_EQ(masker.MaskTag("api_key:xyz"), "api_key:***");
  EXPECT_EQ(masker.MaskTag("env=prod"), "env=prod");
  EXPECT_EQ(masker.MaskTag("baseline"), "baseline");
}

TEST(RedactUrl, KeepsSchemeAndHostOnly) {
  EXPECT_EQ(RedactUrl("https://hooks.slack.com/services/T0/B0/XXXX"), "https://hooks.slack.com/…");
  EXPECT_EQ(RedactUrl("http://user:pw@alerts.example:9093/api/v2/alerts?token=t"), "http://alerts.example:9093/…");
  EXPECT_EQ(RedactUrl("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
  EXPECT_EQ(RedactUrl("not a url"), "***");
}

}  // namespace
}  // namespace trainwatch
