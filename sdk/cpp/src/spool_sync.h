// The implementation of trainwatch::SyncSpool (trainwatch/spool.h), with a Status for the SDK's
// own tests.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "trainwatch/client.h"
#include "trainwatch/spool.h"

namespace trainwatch::sdk {

using SyncReport = SpoolSyncReport;

// As trainwatch::SyncSpool, with the early stop as the Status (the report's `error` stays empty).
Result<SyncReport> SyncSpool(const std::string& dir, const ClientOptions& options,
                             double timeout_seconds,
                             const std::function<void(const std::string&)>& progress);

}  // namespace trainwatch::sdk
