#include "auth/token_issuer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"

namespace trainwatch::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kTtl = 300;

class TokenIssuerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = KeyStore::Open(PosixFileSystem(), dir_.Join("keys.json"), clock_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    keys_ = std::move(*store);
  }

  // The principal a key authenticates as, as a request carrying it would have it.
  Principal Login(const std::string& key) {
    Result<Principal> who = keys_->Authenticate(key);
    EXPECT_TRUE(who.ok()) << who.status().ToString();
    return who.ok() ? *who : Principal{};
  }

  std::string IssueFor(const TokenIssuer& issuer, const std::string& key) {
    Result<IssuedToken> token = issuer.Issue(Login(key));
    EXPECT_TRUE(token.ok()) << token.status().ToString();
    return token.ok() ? token->token : "";
  }

  test::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<KeyStore> keys_;
};

TEST_F(TokenIssuerTest, ATokenStandsForItsKeyAtScopeReadUntilItExpires) {
  std::string key = keys_->Create("ci", Scope::kAdmin, {"vision"}, 0, *CidrList::Parse("10.0.0.0/8"))->key;
  TokenIssuer issuer(*keys_, clock_, std::string(32, 's'), kTtl);
  Result<IssuedToken> token = issuer.Issue(Login(key));
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_DOUBLE_EQ(token->expires_at, clock_.NowUnixSeconds() + kTtl);
  EXPECT_THAT(token->token, Not(HasSubstr(key.substr(key.rfind('_') + 1))));  // the key's secret is not in it

  Result<Principal> who = issuer.Authenticate(token->token);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->key_name, "ci");
  EXPECT_EQ(who->scope, Scope::kRead);  // capped, though the key is an admin's
  EXPECT_TRUE(who->SeesProject("vision"));
  EXPECT_FALSE(who->SeesProject("nlp"));
  EXPECT_EQ(who->allow_from.text(), "10.0.0.0/8");

  clock_.Advance(kTtl - 0.001);
  EXPECT_TRUE(issuer.Authenticate(token->token).ok());
  clock_.Advance(0.001);
  EXPECT_THAT(issuer.Authenticate(token->token).status().message(), HasSubstr("token expired"));
  EXPECT_EQ(issuer.Authenticate(token->token).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(TokenIssuerTest, ARevokedKeysTokensAreRefusedAtOnce) {
  std::string key = keys_->Create("ana", Scope::kRead, {}, 0)->key;
  TokenIssuer issuer(*keys_, clock_, std::string(32, 's'), kTtl);
  std::string token = IssueFor(issuer, key);
  ASSERT_TRUE(issuer.Authenticate(token).ok());
  ASSERT_TRUE(keys_->Revoke("ana").ok());
  EXPECT_THAT(issuer.Authenticate(token).status().message(), HasSubstr("revoked"));
  // A key made again under the same name is another key: the old token stays refused.
  std::string again = keys_->Create("ana", Scope::kRead, {}, 0)->key;
  EXPECT_FALSE(issuer.Authenticate(token).ok());
  EXPECT_TRUE(issuer.Authenticate(IssueFor(issuer, again)).ok());
}

TEST_F(TokenIssuerTest, AnExpiredKeysTokensAreRefused) {
  std::string key = keys_->Create("temp", Scope::kWrite, {}, clock_.NowUnixSeconds() + 60)->key;
  TokenIssuer issuer(*keys_, clock_, std::string(32, 's'), kTtl);
  std::string token = IssueFor(issuer, key);
  ASSERT_TRUE(issuer.Authenticate(token).ok());
  clock_.Advance(60);  // the key expires before its token would
  EXPECT_THAT(issuer.Authenticate(token).status().message(), HasSubstr("'temp' has expired"));
  Principal who;
  who.key_name = "temp";
  who.key_id = token.substr(4, 8);
  EXPECT_EQ(issuer.Issue(who).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(TokenIssuerTest, ForgedAlteredAndForeignTokensAreRefused) {
  std::string key = keys_->Create("ci", Scope::kRead, {}, 0)->key;
  TokenIssuer issuer(*keys_, clock_, std::string(32, 's'), kTtl);
  TokenIssuer other_process(*keys_, clock_, std::string(32, 'o'), kTtl);
  const std::string token = IssueFor(issuer, key);

  EXPECT_THAT(other_process.Authenticate(token).status().message(), HasSubstr("not issued by this server process"));
  // A later expiry, a changed mac digit: the mac no longer matches.
  std::string later = token;
  size_t expiry_at = later.find('_', 4) + 1;
  later[expiry_at] = later[expiry_at] == '9' ? '8' : '9';
  EXPECT_FALSE(issuer.Authenticate(later).ok());
  std::string flipped = token;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  EXPECT_FALSE(issuer.Authenticate(flipped).ok());
  // The key itself, or garbage, is not a token.
  for (std::string_view bad : {std::string_view(key), std::string_view(""), std::string_view("twt_"),
                               std::string_view("twt___"), std::string_view(token).substr(0, token.size() - 1)}) {
    Result<Principal> who = issuer.Authenticate(bad);
    EXPECT_EQ(who.status().code(), StatusCode::kUnauthenticated) << bad;
    EXPECT_THAT(who.status().message(), Not(HasSubstr(key))) << bad;
  }
}

TEST_F(TokenIssuerTest, TheBootstrapKeyGetsTokensAndAServerWithoutKeysTokensNobodyAccepts) {
  TokenIssuer issuer(*keys_, clock_, std::string(32, 's'), kTtl);
  Result<IssuedToken> open = issuer.Issue(Principal{});  // a server without keys
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  keys_->SetBootstrapKey("s3cret");
  EXPECT_THAT(issuer.Authenticate(open->token).status().message(), HasSubstr("had no keys"));

  std::string token = IssueFor(issuer, "s3cret");
  Result<Principal> who = issuer.Authenticate(token);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->key_name, "api-key");
  EXPECT_EQ(who->scope, Scope::kRead);
  keys_->SetBootstrapKey("another");  // the bootstrap key's secret is in the mac
  EXPECT_FALSE(issuer.Authenticate(token).ok());
}

TEST(RandomTokenSecretTest, IsThirtyTwoFreshBytes) {
  Result<std::string> a = RandomTokenSecret();
  Result<std::string> b = RandomTokenSecret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace trainwatch::auth
