#include "api/http_router.h"

#include <gtest/gtest.h>

namespace trainwatch::api {
namespace {

// A handler that records its name in `*called` when run.
HttpHandler Named(std::string name, std::string* called) {
  return [name = std::move(name), called](HttpRequest&&, Responder) { *called = name; };
}

std::string Call(const RouteMatch& match, std::string* called) {
  called->clear();
  if (match.handler) (*match.handler)(HttpRequest{}, [](HttpResponse) {});
  return *called;
}

TEST(HttpRouterTest, ExactRoutesMatchMethodAndPath) {
  std::string called;
  HttpRouter router;
  router.Route("GET", "/api/v1/runs", Named("runs", &called));
  router.Route("POST", "/api/v1/runs/update", Named("update", &called));

  RouteMatch match = router.Find("GET", "/api/v1/runs");
  EXPECT_EQ(Call(match, &called), "runs");
  EXPECT_TRUE(match.path_known);
  EXPECT_FALSE(match.fallback);
  EXPECT_EQ(Call(router.Find("POST", "/api/v1/runs/update"), &called), "update");
  EXPECT_EQ(router.Find("GET", "/api/v1/runs/").handler, nullptr);  // exact: no trailing slash
  EXPECT_EQ(router.Find("GET", "/api/v1/run").handler, nullptr);
}

TEST(HttpRouterTest, AnotherMethodOnAKnownPathIsA405NotA404) {
  std::string called;
  HttpRouter router;
  router.Route("GET", "/api/v1/alerts", Named("alerts", &called));

  RouteMatch wrong_method = router.Find("DELETE", "/api/v1/alerts");
  EXPECT_EQ(wrong_method.handler, nullptr);
  EXPECT_TRUE(wrong_method.path_known);
  RouteMatch unknown = router.Find("GET", "/api/v1/nothing");
  EXPECT_EQ(unknown.handler, nullptr);
  EXPECT_FALSE(unknown.path_known);
}

TEST(HttpRouterTest, PrefixRoutesServePathsWithoutAnExactRoute) {
  std::string called;
  HttpRouter router;
  router.RoutePrefix("GET", "/api/v1/blobs/", Named("blob", &called));
  router.RoutePrefix("HEAD", "/api/v1/blobs/", Named("blob head", &called));
  router.Route("GET", "/api/v1/blobs/index", Named("index", &called));

  EXPECT_EQ(Call(router.Find("GET", "/api/v1/blobs/ab12"), &called), "blob");
  EXPECT_EQ(Call(router.Find("HEAD", "/api/v1/blobs/ab12"), &called), "blob head");
  EXPECT_EQ(Call(router.Find("GET", "/api/v1/blobs/index"), &called), "index");  // exact first
  EXPECT_EQ(Call(router.Find("HEAD", "/api/v1/blobs/index"), &called), "blob head");

  RouteMatch post = router.Find("POST", "/api/v1/blobs/ab12");
  EXPECT_EQ(post.handler, nullptr);
  EXPECT_TRUE(post.path_known);
  EXPECT_FALSE(router.Find("GET", "/api/v1/blobs").path_known);  // the prefix ends with '/'
}

TEST(HttpRouterTest, TheSmallestMatchingPrefixOfTheMethodWins) {
  std::string called;
  HttpRouter router;
  router.RoutePrefix("GET", "/files/deep/", Named("deep", &called));
  router.RoutePrefix("GET", "/files/", Named("files", &called));
  EXPECT_EQ(Call(router.Find("GET", "/files/deep/x"), &called), "files");
  EXPECT_EQ(Call(router.Find("GET", "/files/x"), &called), "files");
}

TEST(HttpRouterTest, EachRouteKeepsItsOptions) {
  std::string called;
  HttpRouter router;
  RouteOptions write;
  write.body_types = {"application/x-protobuf"};
  write.scope = auth::Scope::kAdmin;
  write.projects_in_body = true;
  router.Route("POST", "/api/v1/write", Named("write", &called), write);
  RouteOptions offload;
  offload.offload = true;
  router.RoutePrefix("GET", "/api/v1/blobs/", Named("blob", &called), offload);

  RouteMatch w = router.Find("POST", "/api/v1/write");
  ASSERT_NE(w.options, nullptr);
  EXPECT_EQ(w.options->body_types, std::vector<std::string>{"application/x-protobuf"});
  EXPECT_EQ(w.options->scope, auth::Scope::kAdmin);
  EXPECT_TRUE(w.options->projects_in_body);
  EXPECT_FALSE(w.options->offload);
  EXPECT_TRUE(router.Find("GET", "/api/v1/blobs/x").options->offload);

  // Without a handler, the defaults.
  RouteMatch none = router.Find("GET", "/api/v1/write");
  ASSERT_NE(none.options, nullptr);
  EXPECT_FALSE(none.options->scope.has_value());
  EXPECT_TRUE(none.options->body_types.empty());
  EXPECT_FALSE(none.options->offload);
}

TEST(HttpRouterTest, TheFallbackServesGetAndHeadOutsideApiOnly) {
  std::string called;
  HttpRouter router;
  router.Route("GET", "/healthz", Named("health", &called));
  router.Route("POST", "/upload", Named("upload", &called));
  EXPECT_FALSE(router.Find("GET", "/index.html").fallback);  // no fallback registered

  router.Fallback(Named("static", &called));
  EXPECT_TRUE(router.Find("GET", "/").fallback);
  EXPECT_TRUE(router.Find("HEAD", "/assets/app.js").fallback);
  EXPECT_TRUE(router.Find("GET", "/apis").fallback);
  EXPECT_FALSE(router.Find("POST", "/index.html").fallback);
  EXPECT_FALSE(router.Find("GET", "/api").fallback);
  EXPECT_FALSE(router.Find("GET", "/api/v1/unknown").fallback);
  EXPECT_FALSE(router.Find("GET", "/healthz").fallback);
  EXPECT_FALSE(router.Find("GET", "/upload").fallback);  // a known path: a 405
  EXPECT_TRUE(router.Find("GET", "/upload").path_known);
  ASSERT_TRUE(router.fallback());
  router.fallback()(HttpRequest{}, [](HttpResponse) {});
  EXPECT_EQ(called, "static");
}

TEST(HttpRouterTest, WebSocketsAreFoundByExactPath) {
  HttpRouter router;
  bool opened = false;
  WebSocketHandler live;
  live.on_open = [&](std::shared_ptr<WebSocketPeer>) { opened = true; };
  router.WebSocket("/api/v1/live", std::move(live));

  const WebSocketHandler* found = router.FindWebSocket("/api/v1/live");
  ASSERT_NE(found, nullptr);
  found->on_open(nullptr);
  EXPECT_TRUE(opened);
  EXPECT_EQ(router.FindWebSocket("/api/v1/live/"), nullptr);
  EXPECT_EQ(router.FindWebSocket("/api/v1/other"), nullptr);
  EXPECT_FALSE(router.Find("GET", "/api/v1/live").path_known);  // not an HTTP route
}

}  // namespace
}  // namespace trainwatch::api
