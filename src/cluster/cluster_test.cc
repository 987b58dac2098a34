// Cluster-mode building blocks against a real 3-node NATS JetStream cluster (Debian's
// nats-server, started by the test on 127.0.0.1): replicated streams with de-duplication across a
// leader's death, key-value compare-and-set, and partition leases that expire.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "cluster/jetstream.h"
#include "cluster/membership.h"
#include "cluster/partition.h"
#include "cluster/partition_balancer.h"
#include "cluster/partition_leases.h"
#include "cluster/snapshot.h"
#include "cluster/store_bootstrap.h"
#include "cluster/stream_reader.h"
#include "cluster/testing/nats_cluster.h"
#include "common/testing/temp_dir.h"
#include "storage/engine_test_util.h"

namespace trainwatch::cluster {
namespace {

// Every wait in this file is for an event: a line nats-server logs (a metadata, stream or consumer
// leader elected: NatsCluster::WaitForLog), an acknowledgement, a fetch that blocks until messages
// come. The one exception is a key's TTL: nats-server 2.9 expires a key (its bucket's max age) on
// its own timer and tells no one. It logs nothing, and a watcher of the key gets nothing but idle
// heartbeats (seen with 2.9.10; the delete markers that announce an expiry came in 2.11). An expiry
// is therefore the one condition this file polls: a loop that tests it, bounded in attempts, with
// this pause between tries (as harness.wait_until polls a condition in the Python tests). No test
// waits a fixed time and then assumes something happened.
void PollPause(std::chrono::milliseconds d) {
  std::this_thread::sleep_for(d);  // sleep-ok: a poll loop's pause; a TTL expiry has no event
}

TEST(PartitionTest, StableAcrossVersionsAndSpread) {
  // Pinned: every node of a cluster, whatever its version, must route a run to the same
  // partition. Changing the hash needs a migration.
  EXPECT_EQ(PartitionOf("default", "run-1", 16), PartitionOf("default", "run-1", 16));
  EXPECT_EQ(PartitionOf("default", "run-1", 16), 14u);
  EXPECT_EQ(PartitionOf("vision", "resnet50-seed3", 64), 45u);
  EXPECT_NE(PartitionOf("ab", "c", 1 << 30), PartitionOf("a", "bc", 1 << 30));
  EXPECT_EQ(PartitionOf("any", "run", 1), 0u);
  std::map<uint32_t, int> count;
  for (int i = 0; i < 16000; ++i) ++count[PartitionOf("p", "run-" + std::to_string(i), 16)];
  ASSERT_EQ(count.size(), 16u);
  for (const auto& [p, n] : count) EXPECT_NEAR(n, 1000, 150) << "partition " << p;
  EXPECT_EQ(IngestSubject(3), "tw.ingest.p3");
}

TEST(PreferredOwnerTest, SpreadsEvenlyAndMovesOnlyWhatChanges) {
  const std::vector<std::string> three = {"a", "b", "c"};
  std::map<std::string, int> count;
  for (uint32_t p = 0; p < 3000; ++p) ++count[PreferredOwner(p, three)];
  for (const auto& [member, n] : count) EXPECT_NEAR(n, 1000, 100) << member;
  EXPECT_EQ(PreferredOwner(7, {}), "");
  EXPECT_EQ(PreferredOwner(7, {"c", "a", "b"}), PreferredOwner(7, three))
      << "order does not matter";
  // Without c, only c's partitions move; the others keep their owner.
  for (uint32_t p = 0; p < 3000; ++p) {
    const std::string before = PreferredOwner(p, three);
    const std::string after = PreferredOwner(p, {"a", "b"});
    if (before != "c") {
      EXPECT_EQ(after, before) << "partition " << p;
    }
  }
}

class NatsClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ::trainwatch::test::TempDir();
    auto cluster = test::NatsCluster::Start(3, dir_->path());
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }

  // A test that failed while a node was down leaves it down: the next one starts with all three.
  void SetUp() override {
    for (int i = 0; i < cluster_->size(); ++i) {
      if (!cluster_->running(i)) {
        ASSERT_TRUE(cluster_->Restart(i).ok());
      }
    }
  }

  static std::unique_ptr<JetStream> Connect() {
    auto js = JetStream::Connect({.servers = cluster_->ClientUrls()});
    EXPECT_TRUE(js.ok()) << js.status().ToString();
    return js.ok() ? std::move(*js) : nullptr;
  }

  // Opens (creating if need be) a replicated bucket. The cluster has a metadata leader (Start and
  // Restart wait for it), and nats-server answers a create once the new stream has a leader.
  static std::unique_ptr<KeyValue> OpenBucket(JetStream& js, const KeyValueSpec& spec) {
    Result<std::unique_ptr<KeyValue>> kv = js.OpenKeyValue(spec);
    EXPECT_TRUE(kv.ok()) << kv.status().ToString();
    return kv.ok() ? std::move(*kv) : nullptr;
  }

  static ::trainwatch::test::TempDir* dir_;
  static test::NatsCluster* cluster_;
};
::trainwatch::test::TempDir* NatsClusterTest::dir_ = nullptr;
test::NatsCluster* NatsClusterTest::cluster_ = nullptr;

TEST_F(NatsClusterTest, ReplicatedStreamStoresARepublishedIdOnce) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  StreamSpec spec{.name = "TW_DEDUP", .subjects = {"tw.dedup.>"}, .replicas = 3};
  Status created = js->EnsureStream(spec);
  ASSERT_TRUE(created.ok()) << created.ToString();
  EXPECT_TRUE(js->EnsureStream(spec).ok()) << "an existing stream with the same settings is kept";
  StreamSpec other = spec;
  other.replicas = 1;
  Status mismatch = js->EnsureStream(other);
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.message(), ::testing::HasSubstr("3 replicas"));

  auto first = js->Publish("tw.dedup.a", "batch", "writer-1:1");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->duplicate);
  auto again = js->Publish("tw.dedup.a", "batch", "writer-1:1");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(again->sequence, first->sequence);
  auto state = js->GetStreamState("TW_DEDUP");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->messages, 1u);
  EXPECT_NE(cluster_->IndexOf(state->leader), -1) << "leader '" << state->leader << "'";
}

// A read of a key-value bucket (a direct get) is answered by any replica, and a follower applies a
// write only once the leader tells it the write is committed, with its next append to the group
// (a later write, or a heartbeat up to a second later). An acknowledged write of a scratch key to
// the same bucket sends every follower such an append: after each stale read, the reads below
// write one and read again.
void NudgeFollowers(KeyValue& kv) { ASSERT_TRUE(kv.Put("nudge", "").ok()); }

// `key`'s entry once a read returns `revision` (or what the last read returned).
Result<KeyValueEntry> GetOnceSettled(KeyValue& kv, const std::string& key, uint64_t revision) {
  Result<KeyValueEntry> entry = kv.Get(key);
  for (int attempt = 0; attempt < 100 && !(entry.ok() && entry->revision == revision); ++attempt) {
    NudgeFollowers(kv);
    entry = kv.Get(key);
  }
  return entry;
}

// Whether `write` succeeded, tried again after a nudge while it failed. For a create right after a
// delete: finding the deletion marker in its way, libnats's create reads the key, from any replica.
template <typename Write>
bool SucceedsOnceSettled(KeyValue& kv, Write write) {
  bool done = write();
  for (int attempt = 0; attempt < 100 && !done; ++attempt) {
    NudgeFollowers(kv);
    done = write();
  }
  return done;
}

TEST_F(NatsClusterTest, KeyValueWritesAreCompareAndSet) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  std::unique_ptr<KeyValue> kv = OpenBucket(*js, {.bucket = "tw_cas", .replicas = 3});
  ASSERT_NE(kv, nullptr);
  KeyValue& bucket = *kv;
  EXPECT_EQ(bucket.Get("k").status().code(), StatusCode::kNotFound);
  auto created = bucket.Create("k", "a");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(bucket.Create("k", "b").status().code(), StatusCode::kAlreadyExists);
  auto updated = bucket.Update("k", "c", *created);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(bucket.Update("k", "d", *created).status().code(), StatusCode::kAlreadyExists)
      << "a write at a stale revision loses";
  auto entry = GetOnceSettled(bucket, "k", *updated);
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  EXPECT_EQ(entry->value, "c");
  EXPECT_EQ(entry->revision, *updated);
  ASSERT_TRUE(bucket.Delete("k").ok());
  EXPECT_TRUE(SucceedsOnceSettled(bucket, [&] { return bucket.Create("k", "e").ok(); }))
      << "a deleted key can be created again";
}

// The owner `leases` (on bucket `kv`) reports for `p` once a read shows `expected` (or what the
// last read showed). Owner() reads from any replica, as Get does (NudgeFollowers).
std::string OwnerOnceSettled(KeyValue& kv, PartitionLeases& leases, uint32_t p,
                             const std::string& expected) {
  std::string owner = leases.Owner(p).value();
  for (int attempt = 0; attempt < 100 && owner != expected; ++attempt) {
    NudgeFollowers(kv);
    owner = leases.Owner(p).value();
  }
  return owner;
}

TEST_F(NatsClusterTest, LeaseIsHeldWhileRenewedAndTakenOverOnceExpired) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  std::unique_ptr<KeyValue> kv =
      OpenBucket(*js, {.bucket = "tw_leases_test", .replicas = 3, .ttl_ms = 1500});
  ASSERT_NE(kv, nullptr);
  PartitionLeases a(kv.get(), "node-a");
  PartitionLeases b(kv.get(), "node-b");
  ASSERT_TRUE(a.TryAcquire(0).value());
  EXPECT_TRUE(a.TryAcquire(0).value()) << "acquiring a partition held is a no-op";
  EXPECT_FALSE(b.TryAcquire(0).value());
  EXPECT_EQ(OwnerOnceSettled(*kv, a, 0, "node-a"), "node-a");
  ASSERT_TRUE(b.TryAcquire(1).value());
  EXPECT_TRUE(a.Renew().value().empty());

  // node-a stops renewing: its lease expires on the server, node-b's create then wins.
  bool taken = false;
  for (int attempt = 0; attempt < 100 && !taken; ++attempt) {
    ASSERT_TRUE(b.Renew().value().empty()) << "node-b keeps renewing partition 1";
    taken = b.TryAcquire(0).value();
    if (!taken) PollPause(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(taken) << "partition 0 never expired";
  EXPECT_EQ(OwnerOnceSettled(*kv, b, 0, "node-b"), "node-b");
  auto lost = a.Renew();
  ASSERT_TRUE(lost.ok());
  EXPECT_THAT(*lost, ::testing::ElementsAre(0u)) << "node-a learns it lost partition 0";
  EXPECT_TRUE(a.held().empty());

  ASSERT_TRUE(b.Release(1).ok());
  EXPECT_EQ(OwnerOnceSettled(*kv, b, 1, ""), "");
  // Free at once, without waiting for a TTL.
  EXPECT_TRUE(SucceedsOnceSettled(*kv, [&] { return a.TryAcquire(1).value(); }))
      << "a released partition is free at once";
}

// Publishes with ids m<i>, each retried with its id until acknowledged, while the stream's
// leader is killed: every message is stored exactly once, and the cluster goes on with two
// nodes and takes the killed one back.
TEST_F(NatsClusterTest, AcknowledgedPublishesSurviveTheLeadersDeathExactlyOnce) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  Status created = js->EnsureStream({.name = "TW_FAILOVER", .subjects = {"tw.failover.>"}});
  ASSERT_TRUE(created.ok()) << created.ToString();
  auto publish = [&](int i) {
    const std::string id = "m" + std::to_string(i);
    Status s;
    for (int attempt = 0; attempt < 20; ++attempt) {
      // Unavailable when no acknowledgement came within the request timeout (the connection was
      // failing over) or at once with "no responders" (see below): retried with the same id,
      // after a stream info request has been answered by the leader.
      auto ack = js->Publish("tw.failover.x", "payload " + id, id);
      if (ack.ok()) return Status::Ok();
      s = ack.status();
      EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
      (void)js->GetStreamState("TW_FAILOVER");
    }
    return s.WithContext(id);
  };
  for (int i = 0; i < 100; ++i) {
    Status s = publish(i);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  auto state = js->GetStreamState("TW_FAILOVER");
  ASSERT_TRUE(state.ok());
  const int leader = cluster_->IndexOf(state->leader);
  ASSERT_NE(leader, -1);
  std::vector<int> survivors;
  for (int i = 0; i < cluster_->size(); ++i) {
    if (i != leader) survivors.push_back(i);
  }
  const test::NatsCluster::LogMark before_kill = cluster_->MarkLogs();
  cluster_->Kill(leader);
  // The survivors elect a new stream leader on their own (4-9 s in 2.9); it logs when it is, and
  // answers stream info requests from then on (a request nobody answers waits for its timeout).
  // A moment later it subscribes to the stream's subjects, and the other servers learn of that
  // through their routes, in order with what it sends them afterwards: until then a publish
  // through another server gets "no responders" at once, and is retried after a round trip
  // through the leader (a stream info request), which the subscription precedes.
  auto elected =
      cluster_->WaitForLog(before_kill, test::StreamLeaderLine("TW_FAILOVER"), survivors);
  ASSERT_TRUE(elected.ok()) << elected.status().ToString();
  const std::string new_leader = cluster_->Name(*elected);
  state = js->GetStreamState("TW_FAILOVER");
  for (int attempt = 0; attempt < 10 && !(state.ok() && state->leader == new_leader); ++attempt) {
    state = js->GetStreamState("TW_FAILOVER");
  }
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->leader, new_leader);
  for (int i = 100; i < 200; ++i) {
    Status s = publish(i);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Re-sending ids already acknowledged before the kill stores nothing new.
  for (int i = 90; i < 110; ++i) {
    Status s = publish(i);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  state = js->GetStreamState("TW_FAILOVER");
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->messages, 200u);
  EXPECT_EQ(state->leader, new_leader);

  // Restart returns once the server has rejoined the cluster's metadata group (it logged the
  // metadata leader): it answers JetStream requests from then on. Its replica of the stream may
  // still be catching up, and until then an answer can come from its stale copy (seen with
  // 2.9.10: 100 messages, even naming the new leader); the leader's next append (sent for any new
  // message) brings it on. So a stale answer is followed by a new message, acknowledged, and the
  // question is asked again, until the answer holds every message.
  Status restarted = cluster_->Restart(leader);
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  auto rejoined = JetStream::Connect({.servers = {cluster_->ClientUrl(leader)}});
  ASSERT_TRUE(rejoined.ok()) << rejoined.status().ToString();
  uint64_t nudges = 0;
  state = (*rejoined)->GetStreamState("TW_FAILOVER");
  auto caught_up = [&] {
    return state.ok() && state->leader == new_leader && state->messages == 200 + nudges;
  };
  for (int attempt = 0; attempt < 100 && !caught_up(); ++attempt) {
    ASSERT_TRUE(js->Publish("tw.failover.nudge", "", "nudge-" + std::to_string(nudges)).ok());
    ++nudges;
    state = (*rejoined)->GetStreamState("TW_FAILOVER");
  }
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->leader, new_leader) << "the stream's leader answers";
  EXPECT_EQ(state->messages, 200u + nudges);
}

TEST_F(NatsClusterTest, StreamReaderReadsOneSubjectInOrderFromAnyPosition) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  Status created = js->EnsureStream({.name = "TW_READ", .subjects = {"tw.read.>"}});
  ASSERT_TRUE(created.ok()) << created.ToString();
  std::vector<uint64_t> mine;  // sequences of the messages on tw.read.p0
  for (int i = 0; i < 60; ++i) {
    const std::string subject = i % 3 == 0 ? "tw.read.p1" : "tw.read.p0";
    auto ack = js->Publish(subject, "m" + std::to_string(i), "read-" + std::to_string(i));
    ASSERT_TRUE(ack.ok()) << ack.status().ToString();
    if (subject == "tw.read.p0") mine.push_back(ack->sequence);
  }
  // Reads until the subject's last message (Next blocks until messages come or its wait ends: an
  // empty batch says nothing about the end, the consumer may still be starting).
  auto read_all = [&](uint64_t after) {
    auto reader = StreamReader::Open(*js, "TW_READ", "tw.read.p0", after);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<uint64_t> seen;
    for (int fetch = 0; reader.ok() && (*reader)->last_sequence() < mine.back() && fetch < 100;
         ++fetch) {
      auto batch = (*reader)->Next(7, 500);
      EXPECT_TRUE(batch.ok()) << batch.status().ToString();
      if (!batch.ok()) break;
      for (const StreamMessage& m : *batch) {
        EXPECT_EQ(m.subject, "tw.read.p0");
        EXPECT_EQ(m.msg_id, "read-" + m.data.substr(1));
        seen.push_back(m.sequence);
      }
    }
    return seen;
  };
  EXPECT_EQ(read_all(0), mine);
  const uint64_t checkpoint = mine[24];
  EXPECT_EQ(read_all(checkpoint), std::vector<uint64_t>(mine.begin() + 25, mine.end()))
      << "a reader started after a checkpoint reads the tail only";
}

TEST_F(NatsClusterTest, BalancersConvergeTakeOverAndHandBack) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  // Long enough that a running node renews well within it on a loaded machine (its steps come
  // every ~100 ms), short enough that c's keys expire soon after it stops.
  constexpr int64_t kLeaseMs = 4000;
  auto leases_kv = OpenBucket(*js, {.bucket = "tw_balance_leases", .ttl_ms = kLeaseMs});
  auto members_kv = OpenBucket(*js, {.bucket = "tw_balance_members", .ttl_ms = kLeaseMs});
  ASSERT_TRUE(leases_kv && members_kv);
  constexpr uint32_t kPartitions = 12;
  struct Node {
    Membership membership;
    PartitionLeases leases;
    PartitionBalancer balancer;
    Node(KeyValue* m, KeyValue* l, const std::string& name)
        : membership(m, name), leases(l, name), balancer(&membership, &leases, kPartitions) {}
  };
  std::vector<std::unique_ptr<Node>> nodes;
  for (const char* name : {"a", "b", "c"}) {
    nodes.push_back(std::make_unique<Node>(members_kv.get(), leases_kv.get(), name));
  }
  // Steps the running nodes until their holdings are the rendezvous assignment over them, and
  // checks after every step that no two running nodes hold the same partition. Each step waits
  // for its writes' acknowledgements; only while a stopped node's keys must expire (`expiry`) do
  // rounds wait for the server's clock in between, as a running node's timer would.
  auto settle = [&](const std::vector<int>& running, bool expiry) {
    std::vector<std::string> names;
    for (int i : running) names.push_back(nodes[i]->membership.node());
    for (int round = 0; round < 150; ++round) {
      for (int i : running) {
        auto step = nodes[i]->balancer.Step();
        ASSERT_TRUE(step.ok()) << nodes[i]->membership.node() << ": " << step.status().ToString();
      }
      std::map<uint32_t, std::string> holder;
      bool settled = true;
      for (int i : running) {
        for (const auto& [p, revision] : nodes[i]->leases.held()) {
          ASSERT_FALSE(holder.contains(p)) << "partition " << p << " held twice";
          holder[p] = nodes[i]->membership.node();
        }
      }
      for (uint32_t p = 0; p < kPartitions; ++p) {
        settled = settled && holder.contains(p) && holder[p] == PreferredOwner(p, names);
      }
      if (settled) return;
      if (expiry) PollPause(std::chrono::milliseconds(100));
    }
    FAIL() << "the balancers did not settle";
  };
  settle({0, 1, 2}, false);
  for (const auto& node : nodes) EXPECT_GE(node->leases.held().size(), 2u);
  // c stops (a crash: no Leave, no Release): once its keys expire, a and b take its partitions.
  const size_t c_held = nodes[2]->leases.held().size();
  settle({0, 1}, true);
  // c comes back and learns on its first step that every lease it held is gone (a and b hold
  // them all, so it gains none yet); then a and b hand its preferred partitions back.
  auto first = nodes[2]->balancer.Step();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->lost.size(), c_held);
  EXPECT_TRUE(first->gained.empty());
  EXPECT_TRUE(nodes[2]->leases.held().empty());
  settle({0, 1, 2}, false);
}

TEST_F(NatsClusterTest, ExistingStreamGetsItsMaxAgeByAnUpdateThatKeepsItsMessages) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  StreamSpec spec{.name = "TW_AGE", .subjects = {"tw.age.>"}, .replicas = 3};
  bool changed = true;
  ASSERT_TRUE(js->EnsureStream(spec, &changed).ok());
  EXPECT_FALSE(changed) << "created, not updated";
  ASSERT_TRUE(js->Publish("tw.age.a", "kept", "age-1").ok());
  spec.max_age_ms = 3600 * 1000;  // shorter than nothing, longer than the duplicate window
  Status updated = js->EnsureStream(spec, &changed);
  ASSERT_TRUE(updated.ok()) << updated.ToString();
  EXPECT_TRUE(changed);
  ASSERT_TRUE(js->EnsureStream(spec, &changed).ok());
  EXPECT_FALSE(changed) << "already at that max_age";
  spec.max_age_ms = 60 * 1000;  // below the 2-minute duplicate window, which shrinks to it
  ASSERT_TRUE(js->EnsureStream(spec, &changed).ok());
  EXPECT_TRUE(changed);
  auto state = js->GetStreamState("TW_AGE");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->messages, 1u) << "an update, not a delete and create";
  auto again = js->Publish("tw.age.a", "kept", "age-1");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate) << "the duplicate window still holds the id";
}

// --- store snapshots (bounded rebuild, docs/cluster.md) ---------------------------------------

TEST(SnapshotManifestTest, RoundTripsAndRefusesWhatItCannotTrust) {
  SnapshotManifest m;
  m.id = "tw1-42-1700000000000";
  m.node = "tw1";
  m.stream = "TRAINWATCH_INGEST";
  m.covered_sequence = 42;
  m.checkpoint_lsn = 17;
  m.created_unix = 1700000000.5;
  m.subject = "tw.snapshot." + m.id;
  m.piece_bytes = 10;
  m.files = {{"CURRENT", 16, std::string(64, 'a')}, {"000009.sst", 25, std::string(64, 'b')}};
  EXPECT_EQ(m.total_bytes(), 41u);
  EXPECT_EQ(m.pieces(), 2u + 3u);
  Result<SnapshotManifest> back = SnapshotManifest::FromJson(m.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), m.ToJson());
  SnapshotManifest escape = m;
  escape.files[0].name = "../keys.json";
  EXPECT_EQ(SnapshotManifest::FromJson(escape.ToJson()).status().code(),
            StatusCode::kInvalidArgument);
  SnapshotManifest no_sha = m;
  no_sha.files[1].sha256 = "beef";
  EXPECT_EQ(SnapshotManifest::FromJson(no_sha.ToJson()).status().code(),
            StatusCode::kInvalidArgument);
}

// Files of `dir` by name.
std::map<std::string, std::string> ReadFiles(const std::string& dir) {
  std::map<std::string, std::string> out;
  auto names = PosixFileSystem().ListDir(dir);
  EXPECT_TRUE(names.ok()) << names.status().ToString();
  if (!names.ok()) return out;
  for (const std::string& name : *names)
    out[name] = PosixFileSystem().ReadFile(dir + "/" + name).value();
  return out;
}

void WriteFile(const std::string& path, const std::string& data) {
  auto file = PosixFileSystem().OpenAppendable(path);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append(data).ok());
  ASSERT_TRUE((*file)->Close().ok());
}

SnapshotManifest NewManifest(const std::string& id, uint64_t covered) {
  SnapshotManifest m;
  m.id = id;
  m.node = "tw-test";
  m.stream = "TW_SNAP_INGEST";
  m.covered_sequence = covered;
  m.checkpoint_lsn = covered;
  m.created_unix = 1700000000;
  return m;
}

SnapshotStoreOptions TestSnapshots(const std::string& bucket) {
  return {.stream = "TW_SNAPSHOTS_TEST",
          .bucket = bucket,
          .replicas = 3,
          .piece_bytes = 64 * 1024,
          .fetch_wait_ms = 300};
}

TEST_F(NatsClusterTest, SnapshotTravelsInPiecesAndTheNewestCoveredSequenceWins) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  SnapshotStoreOptions options = TestSnapshots("tw_snapshots_test");
  auto store = SnapshotStore::Open(*js, PosixFileSystem(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  SnapshotStore& snapshots = **store;
  EXPECT_EQ(snapshots.Latest().status().code(), StatusCode::kNotFound);

  ::trainwatch::test::TempDir dir;
  const std::string src = dir.path() + "/src";
  ASSERT_TRUE(PosixFileSystem().CreateDirs(src).ok());
  std::string big;
  for (int i = 0; big.size() < 200 * 1024 + 7; ++i) big += std::to_string(i * 7919) + ",";
  WriteFile(src + "/000012.sst", big);  // 4 pieces, the last one short
  WriteFile(src + "/CURRENT", "MANIFEST-000005\n");
  WriteFile(src + "/empty", "");
  auto published = snapshots.Publish(src, NewManifest("a-10", 10));
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  EXPECT_EQ(published->files.size(), 3u);
  EXPECT_EQ(published->pieces(), 5u);
  auto latest = snapshots.Latest();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ(latest->id, "a-10");
  const std::string dst = dir.path() + "/dst";
  Status downloaded = snapshots.Download(*latest, dst);
  ASSERT_TRUE(downloaded.ok()) << downloaded.ToString();
  EXPECT_EQ(ReadFiles(dst), ReadFiles(src));

  // One covering less loses, and its pieces go; one covering more replaces it, and the older
  // one's pieces go.
  auto older = snapshots.Publish(src, NewManifest("b-5", 5));
  EXPECT_EQ(older.status().code(), StatusCode::kAlreadyExists) << older.status().ToString();
  auto newer = snapshots.Publish(src, NewManifest("c-20", 20));
  ASSERT_TRUE(newer.ok()) << newer.status().ToString();
  latest = snapshots.Latest();
  for (int attempt = 0; attempt < 100 && latest.ok() && latest->id != "c-20"; ++attempt) {
    latest = snapshots.Latest();  // a direct get may be answered by a replica a moment behind
  }
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->id, "c-20");
  EXPECT_EQ(snapshots.Download(*published, dir.path() + "/gone").code(), StatusCode::kUnavailable)
      << "the replaced snapshot's pieces are purged";
  SnapshotManifest lost = *published;
  lost.id = "b-5";
  lost.subject = "tw.snapshot.b-5";
  EXPECT_EQ(snapshots.Download(lost, dir.path() + "/lost").code(), StatusCode::kUnavailable)
      << "the loser's pieces are purged";
}

TEST_F(NatsClusterTest, SnapshotWithACorruptPieceIsRefused) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  SnapshotStoreOptions options = TestSnapshots("tw_snapshots_corrupt");
  auto store = SnapshotStore::Open(*js, PosixFileSystem(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ::trainwatch::test::TempDir dir;
  const std::string src = dir.path() + "/src";
  ASSERT_TRUE(PosixFileSystem().CreateDirs(src).ok());
  const std::string data(100 * 1024, 'x');
  WriteFile(src + "/000007.sst", data);
  auto published = (*store)->Publish(src, NewManifest("corrupt-1", 1));
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  // Its pieces replaced by the same sizes with one byte changed.
  ASSERT_TRUE(js->PurgeSubject(options.stream, published->subject).ok());
  std::string bad = data;
  bad[70 * 1024] = 'y';
  ASSERT_TRUE(js->Publish(published->subject, bad.substr(0, 64 * 1024), "").ok());
  ASSERT_TRUE(js->Publish(published->subject, bad.substr(64 * 1024), "").ok());
  Status s = (*store)->Download(*published, dir.path() + "/dst");
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_THAT(s.message(), ::testing::HasSubstr("000007.sst does not match its SHA-256"));
  EXPECT_FALSE(PosixFileSystem().Exists(dir.path() + "/dst/000007.sst")) << "nothing kept of it";
}

// An engine's store copy, published and installed on an empty data directory, opens as a store
// that covers exactly the snapshot's sequence, and its write-ahead log goes on above the
// snapshot's LSNs (a record written after the install survives a restart).
TEST_F(NatsClusterTest, InstalledSnapshotOpensAtItsSequenceAndKeepsLaterWrites) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  SnapshotStoreOptions options = TestSnapshots("tw_snapshots_install");
  auto store = SnapshotStore::Open(*js, PosixFileSystem(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::string writer = "cluster/TW_SNAP_INGEST";
  auto request = [&](uint64_t seq) {
    v1::WriteRequest r;
    r.set_writer_id(writer);
    r.set_sequence(seq);
    v1::RunBatch* b = r.add_runs();
    b->set_project("p");
    b->set_run("r");
    b->add_steps(static_cast<int64_t>(seq));
    b->add_times(1700000000.0 + static_cast<double>(seq));
    v1::MetricColumn* c = b->add_metrics();
    c->set_name("loss");
    c->add_values(static_cast<double>(seq) / 2);
    return r;
  };
  ::trainwatch::test::TempDir dir;
  ManualClock clock(1700000000);
  Logger logger(LogLevel::kWarn);
  MetricsRegistry metrics;
  const storage::SeriesKey key{"p", "r", "loss"};
  SnapshotManifest manifest;
  {
    auto engine = storage::OpenTestEngine(dir.path() + "/a", {}, clock, logger, metrics);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    for (uint64_t seq = 1; seq <= 30; ++seq) storage::WriteAndWait(**engine, request(seq));
    ASSERT_TRUE((*engine)->SnapshotStore(dir.path() + "/copy").ok());
    auto marks = ReadStoreMarks(dir.path() + "/copy", writer);
    ASSERT_TRUE(marks.ok()) << marks.status().ToString();
    EXPECT_EQ(marks->sequence, 30u) << "read from the copy itself";
    manifest = NewManifest("install-30", marks->sequence);
    manifest.checkpoint_lsn = marks->checkpoint_lsn;
    EXPECT_GT(manifest.checkpoint_lsn, 30u);
  }
  auto published = (*store)->Publish(dir.path() + "/copy", manifest);
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  const std::string fresh = dir.path() + "/b";
  ASSERT_TRUE(PosixFileSystem().CreateDirs(fresh).ok());
  Status installed = InstallSnapshot(**store, PosixFileSystem(), *published, fresh, writer);
  ASSERT_TRUE(installed.ok()) << installed.ToString();
  auto sequence = StoredWriterSequence(PosixFileSystem(), fresh, writer);
  ASSERT_TRUE(sequence.ok());
  EXPECT_EQ(*sequence, 30u);
  {
    MetricsRegistry m2;
    auto engine = storage::OpenTestEngine(fresh, {}, clock, logger, m2);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    EXPECT_TRUE((*engine)->IsDuplicate(writer, 30));
    EXPECT_FALSE((*engine)->IsDuplicate(writer, 31));
    std::vector<storage::Point> points;
    ASSERT_TRUE((*engine)->ReadSeries(key, {}, &points).ok());
    EXPECT_EQ(points.size(), 30u);
    storage::WriteAndWait(**engine, request(31));
  }
  {
    MetricsRegistry m3;
    auto engine = storage::OpenTestEngine(fresh, {}, clock, logger, m3);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    EXPECT_TRUE((*engine)->IsDuplicate(writer, 31)) << "the write after the install survived";
    std::vector<storage::Point> points;
    ASSERT_TRUE((*engine)->ReadSeries(key, {}, &points).ok());
    ASSERT_EQ(points.size(), 31u);
    EXPECT_EQ(points.back().step, 31);
  }
  // A second install over an existing store is not this function's business: the caller moves
  // it aside first. A manifest that claims another sequence than the copy holds is refused.
  SnapshotManifest lying = *published;
  lying.covered_sequence = 29;
  const std::string other = dir.path() + "/c";
  ASSERT_TRUE(PosixFileSystem().CreateDirs(other).ok());
  Status refused = InstallSnapshot(**store, PosixFileSystem(), lying, other, writer);
  EXPECT_EQ(refused.code(), StatusCode::kCorruption) << refused.ToString();
  EXPECT_FALSE(PosixFileSystem().Exists(other + "/store"));
}

}  // namespace
}  // namespace trainwatch::cluster
