#include "api/http_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;

HttpHandler Ok() {
  return [](HttpRequest&&, Responder respond) { respond(HttpResponse::Json(200, "{}")); };
}

class HttpAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = auth::KeyStore::Open(PosixFileSystem(), dir_.Join("keys.json"), clock_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    keys_ = std::move(*store);
    router_.Route("GET", "/healthz", Ok());
    router_.Route("GET", "/api/v1/runs", Ok());
    router_.Route("POST", "/api/v1/write", Ok());
    RouteOptions proto;
    proto.body_types = {"application/x-protobuf", "application/json"};
    proto.projects_in_body = true;
    router_.Route("POST", "/api/v1/write/proto", Ok(), proto);
    RouteOptions admin;
    admin.scope = auth::Scope::kAdmin;
    router_.Route("GET", "/api/v1/keys", Ok(), admin);
    router_.Fallback(Ok());
  }

  // A request as a client on 127.0.0.1 sends it to 127.0.0.1:8080.
  static RequestHead Head(const std::string& method, const std::string& target) {
    RequestHead head;
    head.method = method;
    head.target = ParseTarget(target);
    head.host = "127.0.0.1:8080";
    head.remote = "127.0.0.1";
    return head;
  }

  static RequestHead WithKey(RequestHead head, const std::string& key) {
    head.authorization = "Bearer " + key;
    return head;
  }

  std::string NewKey(const std::string& name, auth::Scope scope, std::vector<std::string> projects = {},
                     CidrList allow_from = {}) {
    auto made = keys_->Create(name, scope, std::move(projects), 0, std::move(allow_from));
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return made.ok() ? made->key : "";
  }

  AdmissionOptions Options() {
    AdmissionOptions options;
    options.keys = keys_.get();
    return options;
  }

  // The refusal's status, or 0 when admitted.
  int Status(const HttpAdmission& admission, const RequestHead& head, auth::Principal* who = nullptr) {
    auth::Principal ignored;
    std::optional<HttpResponse> refusal =
        admission.Refusal(head, router_.Find(head.method, head.target.path), who ? who : &ignored);
    last_error_ = refusal ? refusal->body : "";
    return refusal ? refusal->status : 0;
  }

  test::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<auth::KeyStore> keys_;
  HttpRouter router_;
  std::string last_error_;
};

TEST_F(HttpAdmissionTest, HostMustNameThisServer) {
  AdmissionOptions options;
  options.machine_names = {"Trainer-01.lab.example", "trainer-01"};
  options.allowed_hosts = {"metrics.example.com", " *.corp.example ", "[::1]:9"};
  HttpAdmission admission(options);
  for (const char* host : {"", "127.0.0.1", "127.0.0.1:8080", "10.1.2.3", "[::1]:8080", "[fe80::1%25eth0]",
                           "localhost:8080", "LOCALHOST", "app.localhost", "localhost.", "trainer-01",
                           "trainer-01.lab.example:80", "metrics.example.com:443", "Metrics.Example.Com.",
                           "a.corp.example", "x.y.corp.example:8080"}) {
    EXPECT_TRUE(admission.HostAllowed(host)) << host;
  }
  for (const char* host : {"evil.example", "corp.example", "metrics.example.com.evil", "lab.example", "[::1",
                           "1.2.3", "example.localhost.evil", ":8080"}) {
    EXPECT_FALSE(admission.HostAllowed(host)) << host;
  }
}

TEST_F(HttpAdmissionTest, AStarAllowsAnyHost) {
  AdmissionOptions options;
  options.allowed_hosts = {"*"};
  HttpAdmission admission(options);
  EXPECT_TRUE(admission.HostAllowed("anything.example"));
}

TEST_F(HttpAdmissionTest, AForeignHostIsRefusedBeforeTheKey) {
  keys_->SetBootstrapKey("secret");
  HttpAdmission admission(Options());
  RequestHead head = Head("GET", "/api/v1/runs");
  head.host = "rebound.example:8080";
  EXPECT_EQ(Status(admission, head), 403);
  EXPECT_THAT(last_error_, HasSubstr("host 'rebound.example'"));
  EXPECT_THAT(last_error_, HasSubstr("--allowed-hosts"));
}

TEST_F(HttpAdmissionTest, StateChangesAndUpgradesComeFromThisOriginOrACorsOrigin) {
  AdmissionOptions options;
  options.cors_origins = {"https://App.Example"};
  HttpAdmission admission(options);
  RequestHead post = Head("POST", "/api/v1/write");
  EXPECT_EQ(Status(admission, post), 0);  // no Origin: not a browser
  post.origin = "http://127.0.0.1:8080";
  EXPECT_EQ(Status(admission, post), 0);  // this server's own page
  post.origin = "https://app.example";
  EXPECT_EQ(Status(admission, post), 0);
  post.origin = "https://evil.example";
  EXPECT_EQ(Status(admission, post), 403);
  EXPECT_THAT(last_error_, HasSubstr("requests from the page at https://evil.example"));
  post.origin = "null";  // a sandboxed or file page
  EXPECT_EQ(Status(admission, post), 403);
  post.origin = "http://127.0.0.1:8080";
  post.host.clear();
  EXPECT_EQ(Status(admission, post), 403);

  RequestHead get = Head("GET", "/api/v1/runs");
  get.origin = "https://evil.example";
  EXPECT_EQ(Status(admission, get), 0);  // reads are guarded by CORS in the browser
  get.upgrade = true;
  EXPECT_EQ(Status(admission, get), 403);  // a WebSocket is not

  EXPECT_TRUE(admission.CorsOrigin("https://app.example"));
  EXPECT_FALSE(admission.CorsOrigin("https://app.example:8443"));
  EXPECT_FALSE(admission.CorsOrigin(""));
}

TEST_F(HttpAdmissionTest, WithoutKeysEveryoneIsAnAdminWithoutAName) {
  HttpAdmission admission(Options());  // a store with no keys
  auth::Principal who;
  who.key_name = "stale";
  EXPECT_EQ(Status(admission, Head("POST", "/api/v1/write"), &who), 0);
  EXPECT_EQ(who.key_name, "");
  EXPECT_EQ(who.scope, auth::Scope::kAdmin);
  EXPECT_EQ(Status(HttpAdmission(AdmissionOptions{}), Head("GET", "/api/v1/keys")), 0);
}

TEST_F(HttpAdmissionTest, WithKeysARequestCarriesOneAsABearer) {
  std::string key = NewKey("ci", auth::Scope::kWrite);
  HttpAdmission admission(Options());
  EXPECT_EQ(Status(admission, Head("GET", "/api/v1/runs")), 401);
  EXPECT_EQ(Status(admission, WithKey(Head("GET", "/api/v1/runs"), "tw_00000000_nope")), 401);
  RequestHead basic = Head("GET", "/api/v1/runs");
  basic.authorization = "Basic " + key;
  EXPECT_EQ(Status(admission, basic), 401);
  EXPECT_EQ(Status(admission, WithKey(Head("GET", "/api/v1/nothing"), "")), 401);  // a 404 needs a key too

  auth::Principal who;
  EXPECT_EQ(Status(admission, WithKey(Head("GET", "/api/v1/runs"), key), &who), 0);
  EXPECT_EQ(who.key_name, "ci");
  EXPECT_EQ(who.scope, auth::Scope::kWrite);
}

TEST_F(HttpAdmissionTest, DataFreeAnswersNeedNoKey) {
  NewKey("ci", auth::Scope::kRead);
  HttpAdmission admission(Options());
  EXPECT_EQ(Status(admission, Head("GET", "/healthz")), 0);
  EXPECT_EQ(Status(admission, Head("OPTIONS", "/api/v1/write")), 0);
  EXPECT_EQ(Status(admission, Head("GET", "/index.html")), 0);  // the fallback's static files
  EXPECT_EQ(Status(admission, Head("HEAD", "/assets/app.js")), 0);
  EXPECT_EQ(Status(admission, Head("POST", "/index.html")), 401);
  RequestHead upgrade = Head("GET", "/socket");
  upgrade.upgrade = true;
  EXPECT_EQ(Status(admission, upgrade), 401);  // an upgrade is never the fallback's
}

TEST_F(HttpAdmissionTest, AKeyInTheUrlIsRefused) {
  std::string key = NewKey("ci", auth::Scope::kRead);
  HttpAdmission admission(Options());
  EXPECT_EQ(Status(admission, Head("GET", "/api/v1/runs?key=" + key)), 401);
  EXPECT_THAT(last_error_, HasSubstr("not accepted in a URL"));
  EXPECT_EQ(Status(admission, WithKey(Head("GET", "/api/v1/runs?key=x"), key)), 0);  // the header decides
}

TEST_F(HttpAdmissionTest, TokensStandInForKeysOnReadsAndUpgradesOnly) {
  std::string key = NewKey("dash", auth::Scope::kAdmin);
  auth::TokenIssuer issuer(*keys_, clock_, std::string(32, 's'), 300);
  AdmissionOptions options = Options();
  options.tokens = &issuer;
  HttpAdmission admission(options);
  Result<auth::Principal> login = keys_->Authenticate(key);
  ASSERT_TRUE(login.ok());
  std::string token = issuer.Issue(*login)->token;

  auth::Principal who;
  EXPECT_EQ(Status(admission, Head("GET", "/api/v1/runs?token=" + token), &who), 0);
  EXPECT_EQ(who.key_name, "dash");
  EXPECT_EQ(who.scope, auth::Scope::kRead);
  EXPECT_EQ(Status(admission, Head("HEAD", "/api/v1/runs?token=" + token)), 0);
  RequestHead upgrade = Head("GET", "/api/v1/live?token=" + token);
  upgrade.upgrade = true;
  EXPECT_EQ(Status(admission, upgrade), 0);
  EXPECT_EQ(Status(admission, Head("POST", "/api/v1/write?token=" + token)), 401);
  EXPECT_THAT(last_error_, HasSubstr("good only for GET, HEAD and WebSocket upgrades"));
  EXPECT_EQ(Status(admission, Head("GET", "/api/v1/keys?token=" + token)), 403);  // read, not admin
  EXPECT_EQ(Status(admission, Head("GET", "/api/v1/runs?token=twt_forged")), 401);
  EXPECT_EQ(Status(admission, Head("GET", "/api/v1/runs?token=" + token + "&key=" + key)), 0);

  clock_.Advance(300);
  EXPECT_EQ(Status(admission, Head("GET", "/api/v1/runs?token=" + token)), 401);  // expired

  HttpAdmission without_tokens(Options());
  EXPECT_EQ(Status(without_tokens, Head("GET", "/api/v1/runs?token=" + token)), 401);
  EXPECT_THAT(last_error_, HasSubstr("issues no tokens"));
}

TEST_F(HttpAdmissionTest, AKeyNeedsTheRoutesScope) {
  std::string reader = NewKey("reader", auth::Scope::kRead);
  std::string writer = NewKey("writer", auth::Scope::kWrite);
  HttpAdmission admission(Options());
  EXPECT_EQ(Status(admission, WithKey(Head("POST", "/api/v1/write"), reader)), 403);
  EXPECT_THAT(last_error_, HasSubstr("key 'reader' has scope read; POST /api/v1/write needs write"));
  EXPECT_EQ(Status(admission, WithKey(Head("POST", "/api/v1/write"), writer)), 0);
  EXPECT_EQ(Status(admission, WithKey(Head("GET", "/api/v1/keys"), writer)), 403);  // RouteOptions::scope
  EXPECT_THAT(last_error_, HasSubstr("needs admin"));
  EXPECT_EQ(Status(admission, WithKey(Head("DELETE", "/api/v1/runs"), reader)), 403);  // a 405 needs write
}

TEST_F(HttpAdmissionTest, AProjectBoundKeyNamesAProjectItSees) {
  std::string key = NewKey("vision", auth::Scope::kWrite, {"vision"});
  HttpAdmission admission(Options());
  EXPECT_EQ(Status(admission, WithKey(Head("GET", "/api/v1/runs?project=vision"), key)), 0);
  EXPECT_EQ(Status(admission, WithKey(Head("GET", "/api/v1/runs?project=nlp"), key)), 403);
  EXPECT_THAT(last_error_, HasSubstr("does not see project 'nlp'"));
  EXPECT_EQ(Status(admission, WithKey(Head("GET", "/api/v1/runs"), key)), 403);
  EXPECT_THAT(last_error_, HasSubstr("project 'default'"));
  EXPECT_EQ(Status(admission, WithKey(Head("POST", "/api/v1/write/proto"), key)), 0);  // projects in the body
  RequestHead upgrade = WithKey(Head("GET", "/api/v1/live"), key);
  upgrade.upgrade = true;
  EXPECT_EQ(Status(admission, upgrade), 0);  // the live hub checks each subscription
}

TEST_F(HttpAdmissionTest, AKeyIsUsedOnlyFromItsNetworks) {
  std::string key = NewKey("lab", auth::Scope::kRead, {}, *CidrList::Parse("10.0.0.0/8"));
  HttpAdmission admission(Options());
  RequestHead head = WithKey(Head("GET", "/api/v1/runs"), key);
  head.remote = "10.2.3.4";
  EXPECT_EQ(Status(admission, head), 0);
  head.remote = "192.168.1.5";
  auth::Principal who;
  EXPECT_EQ(Status(admission, head, &who), 403);
  EXPECT_THAT(last_error_, HasSubstr("may not be used from 192.168.1.5"));
  EXPECT_EQ(who.key_name, "lab");  // the audit log names the refused key
}

TEST_F(HttpAdmissionTest, ABodyOfATypeTheRouteDoesNotTakeIsA415) {
  HttpAdmission admission(Options());
  RequestHead post = Head("POST", "/api/v1/write");
  post.has_body = true;
  EXPECT_EQ(Status(admission, post), 415);
  EXPECT_THAT(last_error_, HasSubstr("POST /api/v1/write takes Content-Type application/json, not '(none)'"));
  post.content_type = "text/plain";
  EXPECT_EQ(Status(admission, post), 415);
  post.content_type = "Application/JSON; charset=utf-8";
  EXPECT_EQ(Status(admission, post), 0);

  RequestHead proto = Head("POST", "/api/v1/write/proto");
  proto.has_body = true;
  proto.content_type = "application/x-protobuf";
  EXPECT_EQ(Status(admission, proto), 0);
  proto.content_type = "application/x-www-form-urlencoded";
  EXPECT_EQ(Status(admission, proto), 415);
  EXPECT_THAT(last_error_, HasSubstr("takes Content-Type application/x-protobuf, application/json"));

  RequestHead empty = Head("POST", "/api/v1/write");
  empty.content_type = "text/plain";
  EXPECT_EQ(Status(admission, empty), 0);  // no body: nothing to type
  RequestHead get = Head("GET", "/api/v1/runs");
  get.has_body = true;
  get.content_type = "text/plain";
  EXPECT_EQ(Status(admission, get), 0);
}

}  // namespace
}  // namespace trainwatch::api
