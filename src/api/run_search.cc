#include "api/run_search.h"

#include <algorithm>
#include <string>
#include <vector>

#include "api/query_params.h"

namespace trainwatch::api {
namespace {

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::optional<HttpResponse> ParseRunSearch(const HttpRequest& req, query::RunSearch* search) {
  search->project = req.Param("project");
  search->name_regex = req.Param("q");
  search->tags = req.Params("tag");
  search->status = req.Param("status");
  search->group = req.Param("group");
  search->sort = req.Param("sort", search->sort);
  search->latest = SplitComma(req.Param("latest"));
  for (const auto& [key, value] : req.query) {
    if (key.starts_with("config.")) search->config[key.substr(7)] = value;
  }
  int64_t n;
  if (std::string v = req.Param("limit"); !v.empty()) {
    if (!ParseInt(v, &n) || n < 0)
      return HttpResponse::Error(400, "limit must be a non-negative integer");
    search->limit = std::min<size_t>(n, kMaxRunsPerPage);
  }
  if (std::string v = req.Param("offset"); !v.empty()) {
    if (!ParseInt(v, &n) || n < 0)
      return HttpResponse::Error(400, "offset must be a non-negative integer");
    search->offset = n;
  }
  return std::nullopt;
}

}  // namespace trainwatch::api
