#include "api/static_files.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "web/dashboard_assets.h"

namespace trainwatch::api {
namespace {

using web::EmbeddedAsset;

constexpr EmbeddedAsset kTable[] = {
    {"/assets/app-1a2b.js", "text/javascript; charset=utf-8", "\"js1\"", "console.log(1)", ""},
    {"/assets/style-3c4d.css", "text/css; charset=utf-8", "\"css1\"", "body{}body{}body{}",
     "GZ-css"},
    {"/favicon.ico", "image/x-icon", "\"ico1\"", "ICO", ""},
    {"/index.html", "text/html; charset=utf-8", "\"idx1\"", "<html>app</html>", "GZ-index"},
};

HttpRequest Get(std::string path, std::map<std::string, std::string> headers = {}) {
  HttpRequest r;
  r.method = "GET";
  r.path = std::move(path);
  r.headers = std::move(headers);
  return r;
}

std::string HeaderOf(const HttpResponse& r, const std::string& name) {
  for (const auto& [key, value] : r.headers) {
    if (key == name) return value;
  }
  return "";
}

class StaticFilesTest : public ::testing::Test {
 protected:
  StaticFiles files_{kTable};
};

TEST_F(StaticFilesTest, RootAndUnknownPathsServeIndexWithoutCaching) {
  for (const char* path : {"/", "/index.html", "/runs", "/deep/link/x.html"}) {
    HttpResponse r = files_.Serve(Get(path));
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, "<html>app</html>") << path;
    EXPECT_EQ(r.content_type, "text/html; charset=utf-8") << path;
    EXPECT_EQ(HeaderOf(r, "Cache-Control"), "no-cache") << path;
    EXPECT_EQ(HeaderOf(r, "ETag"), "\"idx1\"") << path;
    EXPECT_EQ(HeaderOf(r, "Content-Encoding"), "") << path;
    EXPECT_EQ(HeaderOf(r, "Vary"), "Accept-Encoding") << path;  // a gzip copy exists
  }
}

TEST_F(StaticFilesTest, HashedAssetsAreImmutable) {
  HttpResponse r = files_.Serve(Get("/assets/app-1a2b.js"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "console.log(1)");
  EXPECT_EQ(r.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(HeaderOf(r, "Cache-Control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(HeaderOf(r, "ETag"), "\"js1\"");
  EXPECT_EQ(HeaderOf(r, "Vary"), "");  // no gzip copy: one representation only
  EXPECT_EQ(HeaderOf(r, "X-Content-Type-Options"), "nosniff");
}

TEST_F(StaticFilesTest, OtherRootFilesRevalidate) {
  HttpResponse r = files_.Serve(Get("/favicon.ico"));
  EXPECT_EQ(r.body, "ICO");
  EXPECT_EQ(r.content_type, "image/x-icon");
  EXPECT_EQ(HeaderOf(r, "Cache-Control"), "no-cache");
}

TEST_F(StaticFilesTest, MissingAssetIsNotFoundRatherThanIndex) {
  HttpResponse r = files_.Serve(Get("/assets/app-old.js"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_NE(r.body.find("/assets/app-old.js"), std::string::npos);
}

TEST_F(StaticFilesTest, MatchingIfNoneMatchIsNotModified) {
  for (const char* inm : {"\"js1\"", "W/\"js1\"", "\"other\", \"js1\"", "*"}) {
    HttpResponse r = files_.Serve(Get("/assets/app-1a2b.js", {{"if-none-match", inm}}));
    EXPECT_EQ(r.status, 304) << inm;
    EXPECT_EQ(r.body, "") << inm;
    EXPECT_EQ(HeaderOf(r, "ETag"), "\"js1\"") << inm;
    EXPECT_EQ(HeaderOf(r, "Cache-Control"), "public, max-age=31536000, immutable") << inm;
  }
  for (const char* inm : {"\"js2\"", "js1", "\"js1-gzip\""}) {
    HttpResponse r = files_.Serve(Get("/assets/app-1a2b.js", {{"if-none-match", inm}}));
    EXPECT_EQ(r.status, 200) << inm;
    EXPECT_EQ(r.body, "console.log(1)") << inm;
  }
}

TEST_F(StaticFilesTest, GzipCopyWhenAccepted) {
  for (const char* ae :
       {"gzip", "gzip, deflate, br", "br;q=1.0, GZIP;q=0.5", "*", "deflate, *;q=0.1"}) {
    HttpResponse r = files_.Serve(Get("/assets/style-3c4d.css", {{"accept-encoding", ae}}));
    EXPECT_EQ(r.status, 200) << ae;
    EXPECT_EQ(r.body, "GZ-css") << ae;
    EXPECT_EQ(HeaderOf(r, "Content-Encoding"), "gzip") << ae;
    EXPECT_EQ(HeaderOf(r, "Vary"), "Accept-Encoding") << ae;
    EXPECT_EQ(HeaderOf(r, "ETag"), "\"css1-gzip\"") << ae;
    EXPECT_EQ(r.content_type, "text/css; charset=utf-8") << ae;
  }
  for (const char* ae :
       {"", "identity", "gzip;q=0", "gzip; q=0.000, br", "br, *;q=0", "*, gzip;q=0"}) {
    HttpResponse r = files_.Serve(Get("/assets/style-3c4d.css", {{"accept-encoding", ae}}));
    EXPECT_EQ(r.body, "body{}body{}body{}") << ae;
    EXPECT_EQ(HeaderOf(r, "Content-Encoding"), "") << ae;
    EXPECT_EQ(HeaderOf(r, "Vary"), "Accept-Encoding") << ae;
    EXPECT_EQ(HeaderOf(r, "ETag"), "\"css1\"") << ae;
  }
  // No gzip copy stored (it would not have been smaller): the plain file.
  HttpResponse r = files_.Serve(Get("/assets/app-1a2b.js", {{"accept-encoding", "gzip"}}));
  EXPECT_EQ(r.body, "console.log(1)");
  EXPECT_EQ(HeaderOf(r, "Content-Encoding"), "");
}

TEST_F(StaticFilesTest, EitherCodingsValidatorIsNotModified) {
  // Revalidating the copy a cache holds, whichever coding this request would get.
  HttpResponse gz =
      files_.Serve(Get("/", {{"accept-encoding", "gzip"}, {"if-none-match", "\"idx1-gzip\""}}));
  EXPECT_EQ(gz.status, 304);
  EXPECT_EQ(HeaderOf(gz, "ETag"), "\"idx1-gzip\"");
  HttpResponse plain =
      files_.Serve(Get("/", {{"accept-encoding", "gzip"}, {"if-none-match", "\"idx1\""}}));
  EXPECT_EQ(plain.status, 304);
  EXPECT_EQ(HeaderOf(plain, "ETag"), "\"idx1\"");
  HttpResponse back = files_.Serve(Get("/", {{"if-none-match", "\"idx1-gzip\""}}));
  EXPECT_EQ(back.status, 304);
  EXPECT_EQ(HeaderOf(back, "Content-Encoding"), "");
}

TEST(StaticFilesNoIndexTest, UnknownPathsAreNotFound) {
  constexpr EmbeddedAsset kOnlyAsset[] = {{"/assets/a.js", "text/javascript", "\"a\"", "x", ""}};
  StaticFiles files(kOnlyAsset);
  EXPECT_EQ(files.Serve(Get("/")).status, 404);
  EXPECT_EQ(files.Serve(Get("/runs")).status, 404);
  EXPECT_EQ(files.Serve(Get("/assets/a.js")).status, 200);
}

std::string Gunzip(std::string_view packed) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = static_cast<uInt>(packed.size());
  std::string out;
  char buf[4096];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

// The table cmake/embed_assets.py generated from src/web/placeholder: bytes, types, ETags, gzip.
TEST(GeneratedTableTest, PlaceholderPageIsEmbeddedIntact) {
  ASSERT_TRUE(web::DashboardIsPlaceholder());
  std::span<const EmbeddedAsset> assets = web::DashboardAssets();
  ASSERT_GE(assets.size(), 2u);
  for (size_t i = 1; i < assets.size(); ++i) EXPECT_LT(assets[i - 1].path, assets[i].path);
  for (const EmbeddedAsset& a : assets) {
    EXPECT_TRUE(a.etag.size() > 2 && a.etag.front() == '"' && a.etag.back() == '"') << a.path;
    if (!a.gzip.empty()) {
      EXPECT_LT(a.gzip.size(), a.body.size()) << a.path;
      EXPECT_EQ(Gunzip(a.gzip), a.body) << a.path;
    }
  }
  StaticFiles files(assets);
  HttpResponse index = files.Serve(Get("/", {{"accept-encoding", "gzip"}}));
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(HeaderOf(index, "Content-Encoding"), "gzip");  // HTML compresses well
  std::string html = Gunzip(index.body);
  EXPECT_NE(html.find("dashboard was not built"), std::string::npos);
  EXPECT_NE(html.find("/assets/placeholder-v1.css"), std::string::npos);
  HttpResponse css = files.Serve(Get("/assets/placeholder-v1.css"));
  EXPECT_EQ(css.status, 200);
  EXPECT_EQ(css.content_type, "text/css; charset=utf-8");
  EXPECT_EQ(HeaderOf(css, "Cache-Control"), "public, max-age=31536000, immutable");
}

}  // namespace
}  // namespace trainwatch::api
