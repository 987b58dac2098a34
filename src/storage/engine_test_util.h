// Opens an Engine for tests over a real write-ahead log and RocksDB store under `dir`, and writes
// to it synchronously.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "storage/engine.h"
#include "storage/wal/wal_log.h"

namespace trainwatch::storage {

// `dir/wal` and `dir/store`; reopening the same dir recovers what an earlier engine left.
inline Result<std::unique_ptr<Engine>> OpenTestEngine(const std::string& dir,
                                                      const EngineOptions& options, Clock& clock,
                                                      Logger& logger, MetricsRegistry& metrics) {
  TW_ASSIGN_OR_RETURN(auto wal, wal::WalLog::Open(PosixFileSystem(), dir + "/wal"));
  TW_ASSIGN_OR_RETURN(auto store, ChunkStore::Open(dir + "/store"));
  return Engine::Open(options, std::move(wal), std::move(store), clock, logger, metrics);
}

// Writes `request` and waits for its acknowledgement; a failed write fails the test.
inline WriteOutcome WriteAndWait(Engine& engine, v1::WriteRequest request) {
  std::promise<WriteOutcome> done;
  engine.Write(std::move(request), [&](const Status& s, const WriteOutcome& o) {
    EXPECT_TRUE(s.ok()) << s.ToString();
    done.set_value(o);
  });
  return done.get_future().get();
}

}  // namespace trainwatch::storage
