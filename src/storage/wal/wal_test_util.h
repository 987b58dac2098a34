// Helpers shared by the WAL tests.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/file_system.h"
#include "storage/wal/wal_log.h"

namespace trainwatch::storage::wal {

struct Replayed {
  ReplayStats stats;
  std::vector<std::pair<uint64_t, std::string>> records;
};

inline std::pair<uint64_t, std::string> Rec(uint64_t lsn, std::string payload) {
  return {lsn, std::move(payload)};
}

// Replays everything from `from_lsn`; fails the test if Replay fails.
inline Replayed ReplayAll(WalLog& log, uint64_t from_lsn = 0) {
  Replayed out;
  auto stats = log.Replay(from_lsn, [&](uint64_t lsn, std::string_view record) {
    out.records.emplace_back(lsn, std::string(record));
    return Status::Ok();
  });
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (stats.ok()) out.stats = *stats;
  return out;
}

// Collects append callbacks and lets the test wait for a number of them.
class CallbackLog {
 public:
  Log::AppendCallback Callback() {
    return [this](const Status& status, uint64_t lsn) {
      MutexLock lock(mu_);
      results_.emplace_back(status, lsn);
      cv_.notify_all();
    };
  }
  // Waits until `n` callbacks have run in all; returns their (status, lsn) in call order.
  std::vector<std::pair<Status, uint64_t>> WaitFor(size_t n) {
    MutexLock lock(mu_);
    cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return results_.size() >= n; });
    return results_;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<Status, uint64_t>> results_ TW_GUARDED_BY(mu_);
};

// Holds the log's writer thread inside the callback of one record ("hold"), so that appends made
// meanwhile queue up and go out together as the next group once Release() is called. Release must
// be called before the log is destroyed.
class WriterHold {
 public:
  explicit WriterHold(WalLog& log) : released_(release_.get_future().share()) {
    // Shared: the callback may still be inside set_value() when the constructor returns.
    auto holding = std::make_shared<std::promise<void>>();
    std::future<void> held = holding->get_future();
    log.Append("hold", [holding, released = released_](const Status&, uint64_t) {
      holding->set_value();
      released.wait();
    });
    held.wait();
  }
  void Release() { release_.set_value(); }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_;
};

// Appends `records` and waits for their callbacks, which must all succeed; returns the LSNs.
inline std::vector<uint64_t> AppendAll(WalLog& log, const std::vector<std::string>& records) {
  CallbackLog callbacks;
  for (const std::string& r : records) log.Append(r, callbacks.Callback());
  std::vector<uint64_t> lsns;
  for (const auto& [status, lsn] : callbacks.WaitFor(records.size())) {
    EXPECT_TRUE(status.ok()) << status.ToString();
    lsns.push_back(lsn);
  }
  return lsns;
}

// Writes a file without syncing anything: for crafting damaged segments quickly.
inline void WriteUnsynced(const std::string& path, std::string_view contents) {
  FileSystem& fs = PosixFileSystem();
  if (fs.Exists(path)) {
    ASSERT_TRUE(fs.RemoveFile(path).ok());
  }
  auto file = fs.OpenAppendable(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_TRUE((*file)->Append(contents).ok());
  ASSERT_TRUE((*file)->Close().ok());
}

// A payload that encodes `i`, of roughly `size` bytes.
inline std::string Payload(uint64_t i, size_t size = 20) {
  std::string s = "record-" + std::to_string(i) + "-";
  while (s.size() < size) s += static_cast<char>('a' + (s.size() * 7 + i) % 26);
  return s;
}

}  // namespace trainwatch::storage::wal
