// What the read routes (run_routes.cc, series_routes.cc, export_routes.cc) share.
#pragma once

#include <string>

#include "api/routes.h"
#include "storage/encoding/point.h"
#include "storage/run_info.h"

namespace trainwatch::api {

// Appends `[step,time,value]` (non-finite numbers as strings).
void AppendPoint(std::string* out, const storage::Point& p);

// The run the request names (run=, project= or "default"), from ctx.querier, in *info; false after
// answering a 400 when there is no `run` parameter, or a 404 when there is no such run.
bool RequireRun(ApiContext& ctx, const HttpRequest& req, const Responder& respond,
                storage::RunInfo* info);

}  // namespace trainwatch::api
