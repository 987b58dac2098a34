#include "auth/key_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"

namespace trainwatch::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class KeyStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<KeyStore> Open() {
    auto store = KeyStore::Open(PosixFileSystem(), dir_.Join("keys.json"), clock_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(*store);
  }

  test::TempDir dir_;
  ManualClock clock_;
};

TEST_F(KeyStoreTest, AKeyAuthenticatesAsItsNameScopeAndProjects) {
  auto store = Open();
  EXPECT_FALSE(store->enabled());
  Result<NewKey> key = store->Create("ci", Scope::kWrite, {"vision"}, 0);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_TRUE(store->enabled());
  Result<Principal> who = store->Authenticate(key->key);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->key_name, "ci");
  EXPECT_TRUE(who->Allows(Scope::kWrite));
  EXPECT_FALSE(who->Allows(Scope::kAdmin));
  EXPECT_TRUE(who->SeesProject("vision"));
  EXPECT_FALSE(who->SeesProject("nlp"));
}

TEST_F(KeyStoreTest, OnlyTheHashIsStoredAndKeysSurviveAReopen) {
  std::string key = Open()->Create("ana", Scope::kRead, {}, 0)->key;
  std::string file = *PosixFileSystem().ReadFile(dir_.Join("keys.json"));
  EXPECT_THAT(file, Not(HasSubstr(key.substr(key.rfind('_') + 1))));  // the secret is not in the file
  EXPECT_THAT(file, HasSubstr("\"ana\""));
  auto reopened = Open();
  EXPECT_EQ(reopened->Authenticate(key)->key_name, "ana");
}

TEST_F(KeyStoreTest, WrongRevokedAndExpiredKeysAreRefused) {
  auto store = Open();
  std::string key = store->Create("temp", Scope::kAdmin, {}, clock_.NowUnixSeconds() + 60)->key;
  std::string wrong = key;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  EXPECT_EQ(store->Authenticate(wrong).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(store->Authenticate("").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(store->Authenticate("tw_garbage").status().code(), StatusCode::kUnauthenticated);
  EXPECT_TRUE(store->Authenticate(key).ok());
  clock_.Advance(60);
  EXPECT_THAT(store->Authenticate(key).status().message(), HasSubstr("'temp' has expired"));

  std::string other = store->Create("other", Scope::kRead, {}, 0)->key;
  ASSERT_TRUE(store->Revoke("other").ok());
  EXPECT_EQ(store->Authenticate(other).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(Open()->Authenticate(other).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(store->Revoke("other").code(), StatusCode::kNotFound);
}

TEST_F(KeyStoreTest, TheBootstrapKeyIsAnAdminNamedApiKey) {
  auto store = Open();
  store->SetBootstrapKey("s3cret");
  EXPECT_TRUE(store->enabled());
  EXPECT_EQ(store->Authenticate("s3cret")->key_name, "api-key");
  EXPECT_TRUE(store->Authenticate("s3cret")->Allows(Scope::kAdmin));
  EXPECT_FALSE(store->Authenticate("s3cre").ok());
}

TEST_F(KeyStoreTest, NamesAreUniqueAndChecked) {
  auto store = Open();
  ASSERT_TRUE(store->Create("a", Scope::kRead, {}, 0).ok());
  EXPECT_EQ(store->Create("a", Scope::kRead, {}, 0).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store->Create("has space", Scope::kRead, {}, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Create("api-key", Scope::kRead, {}, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->List().size(), 1u);
}

}  // namespace
}  // namespace trainwatch::auth
