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
#include "cluster/stream_reader.h"
#include "cluster/testing/nats_cluster.h"
#include "common/testing/temp_dir.h"

namespace trainwatch::cluster {
namespace {

// Pauses between retries of what nats-server does on its own clock (a raft election, a key's TTL,
// replication to the replica a read goes to): it offers no event to wait on.
void PauseForNats(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));  // sleep-ok: nats-server's own clock
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
    if (before != "c") EXPECT_EQ(after, before) << "partition " << p;
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

  static std::unique_ptr<JetStream> Connect() {
    auto js = JetStream::Connect({.servers = cluster_->ClientUrls()});
    EXPECT_TRUE(js.ok()) << js.status().ToString();
    return js.ok() ? std::move(*js) : nullptr;
  }

  // A replicated stream is created only once the cluster has elected its metadata leader, which
  // its servers do on their own a moment after they are ready: retried until then.
  static Status EnsureStreamOnceClustered(JetStream& js, const StreamSpec& spec) {
    Status s;
    for (int attempt = 0; attempt < 30; ++attempt) {
      s = js.EnsureStream(spec);
      if (s.ok() || s.code() == StatusCode::kInvalidArgument) return s;
      PauseForNats(500);
    }
    return s;
  }

  // Opens (creating if need be) a replicated bucket, retried while the cluster elects leaders.
  static std::unique_ptr<KeyValue> OpenBucket(JetStream& js, const KeyValueSpec& spec) {
    Result<std::unique_ptr<KeyValue>> kv = Status::Unavailable("not opened");
    for (int attempt = 0; attempt < 30 && !kv.ok(); ++attempt) {
      kv = js.OpenKeyValue(spec);
      if (!kv.ok()) PauseForNats(500);
    }
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
  ASSERT_TRUE(EnsureStreamOnceClustered(*js, spec).ok());
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

TEST_F(NatsClusterTest, KeyValueWritesAreCompareAndSet) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  Result<std::unique_ptr<KeyValue>> kv = Status::Unavailable("not opened");
  for (int attempt = 0; attempt < 30 && !kv.ok(); ++attempt) {
    kv = js->OpenKeyValue({.bucket = "tw_cas", .replicas = 3});
    if (!kv.ok()) PauseForNats(500);
  }
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  KeyValue& bucket = **kv;
  EXPECT_EQ(bucket.Get("k").status().code(), StatusCode::kNotFound);
  auto created = bucket.Create("k", "a");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(bucket.Create("k", "b").status().code(), StatusCode::kAlreadyExists);
  auto updated = bucket.Update("k", "c", *created);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(bucket.Update("k", "d", *created).status().code(), StatusCode::kAlreadyExists)
      << "a write at a stale revision loses";
  auto entry = bucket.Get("k");
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->value, "c");
  EXPECT_EQ(entry->revision, *updated);
  ASSERT_TRUE(bucket.Delete("k").ok());
  EXPECT_TRUE(bucket.Create("k", "e").ok()) << "a deleted key can be created again";
}

// Owner() reads from any replica, which may lag the latest write a moment: the owner `leases`
// reports for `p` once it shows `expected` (or what it showed last).
std::string OwnerOnceSettled(PartitionLeases& leases, uint32_t p, const std::string& expected) {
  std::string owner;
  for (int attempt = 0; attempt < 50; ++attempt) {
    owner = leases.Owner(p).value();
    if (owner == expected) break;
    PauseForNats(50);
  }
  return owner;
}

TEST_F(NatsClusterTest, LeaseIsHeldWhileRenewedAndTakenOverOnceExpired) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  Result<std::unique_ptr<KeyValue>> kv = Status::Unavailable("not opened");
  for (int attempt = 0; attempt < 30 && !kv.ok(); ++attempt) {
    kv = js->OpenKeyValue({.bucket = "tw_leases_test", .replicas = 3, .ttl_ms = 1500});
    if (!kv.ok()) PauseForNats(500);
  }
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  PartitionLeases a(kv->get(), "node-a");
  PartitionLeases b(kv->get(), "node-b");
  ASSERT_TRUE(a.TryAcquire(0).value());
  EXPECT_TRUE(a.TryAcquire(0).value()) << "acquiring a partition held is a no-op";
  EXPECT_FALSE(b.TryAcquire(0).value());
  EXPECT_EQ(OwnerOnceSettled(a, 0, "node-a"), "node-a");
  ASSERT_TRUE(b.TryAcquire(1).value());
  EXPECT_TRUE(a.Renew().value().empty());

  // node-a stops renewing: its lease expires on the server, node-b's create then wins.
  bool taken = false;
  for (int attempt = 0; attempt < 100 && !taken; ++attempt) {
    ASSERT_TRUE(b.Renew().value().empty()) << "node-b keeps renewing partition 1";
    taken = b.TryAcquire(0).value();
    if (!taken) PauseForNats(200);
  }
  ASSERT_TRUE(taken) << "partition 0 never expired";
  EXPECT_EQ(OwnerOnceSettled(b, 0, "node-b"), "node-b");
  auto lost = a.Renew();
  ASSERT_TRUE(lost.ok());
  EXPECT_THAT(*lost, ::testing::ElementsAre(0u)) << "node-a learns it lost partition 0";
  EXPECT_TRUE(a.held().empty());

  ASSERT_TRUE(b.Release(1).ok());
  EXPECT_EQ(OwnerOnceSettled(b, 1, ""), "");
  EXPECT_TRUE(a.TryAcquire(1).value()) << "a released partition is free at once";
}

// Publishes with ids m<i>, each retried with its id until acknowledged, while the stream's
// leader is killed: every message is stored exactly once, and the cluster goes on with two
// nodes and takes the killed one back.
TEST_F(NatsClusterTest, AcknowledgedPublishesSurviveTheLeadersDeathExactlyOnce) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  ASSERT_TRUE(
      EnsureStreamOnceClustered(*js, {.name = "TW_FAILOVER", .subjects = {"tw.failover.>"}}).ok());
  auto publish = [&](int i) {
    const std::string id = "m" + std::to_string(i);
    for (int attempt = 0; attempt < 150; ++attempt) {
      // Unavailable while the connection fails over and the stream elects a leader (no leader
      // answers: "no responders"): retried with the same id.
      auto ack = js->Publish("tw.failover.x", "payload " + id, id);
      if (ack.ok()) return true;
      EXPECT_EQ(ack.status().code(), StatusCode::kUnavailable) << ack.status().ToString();
      PauseForNats(100);
    }
    return false;
  };
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(publish(i)) << "m" << i;
  auto state = js->GetStreamState("TW_FAILOVER");
  ASSERT_TRUE(state.ok());
  const int leader = cluster_->IndexOf(state->leader);
  ASSERT_NE(leader, -1);
  cluster_->Kill(leader);
  for (int i = 100; i < 200; ++i) ASSERT_TRUE(publish(i)) << "m" << i;
  // Re-sending ids already acknowledged before the kill stores nothing new.
  for (int i = 90; i < 110; ++i) ASSERT_TRUE(publish(i));
  state = js->GetStreamState("TW_FAILOVER");
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->messages, 200u);
  EXPECT_NE(state->leader, NatsClusterTest::cluster_->Name(leader));

  ASSERT_TRUE(cluster_->Restart(leader).ok());
  auto rejoined = JetStream::Connect({.servers = {cluster_->ClientUrl(leader)}});
  ASSERT_TRUE(rejoined.ok()) << rejoined.status().ToString();
  // The restarted server answers JetStream requests once it has rejoined the cluster's
  // metadata group, a moment after it starts.
  for (int attempt = 0; attempt < 100; ++attempt) {
    state = (*rejoined)->GetStreamState("TW_FAILOVER");
    if (state.ok()) break;
    PauseForNats(100);
  }
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->messages, 200u);
}

TEST_F(NatsClusterTest, StreamReaderReadsOneSubjectInOrderFromAnyPosition) {
  auto js = Connect();
  ASSERT_NE(js, nullptr);
  ASSERT_TRUE(EnsureStreamOnceClustered(*js, {.name = "TW_READ", .subjects = {"tw.read.>"}}).ok());
  std::vector<uint64_t> mine;  // sequences of the messages on tw.read.p0
  for (int i = 0; i < 60; ++i) {
    const std::string subject = i % 3 == 0 ? "tw.read.p1" : "tw.read.p0";
    auto ack = js->Publish(subject, "m" + std::to_string(i), "read-" + std::to_string(i));
    ASSERT_TRUE(ack.ok()) << ack.status().ToString();
    if (subject == "tw.read.p0") mine.push_back(ack->sequence);
  }
  auto read_all = [&](uint64_t after) {
    auto reader = StreamReader::Open(*js, "TW_READ", "tw.read.p0", after);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<uint64_t> seen;
    while (reader.ok()) {
      auto batch = (*reader)->Next(7, 500);
      EXPECT_TRUE(batch.ok()) << batch.status().ToString();
      if (!batch.ok() || batch->empty()) break;
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
  // checks after every step that no two running nodes hold the same partition.
  auto settle = [&](const std::vector<int>& running) {
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
      PauseForNats(100);
    }
    FAIL() << "the balancers did not settle";
  };
  settle({0, 1, 2});
  for (const auto& node : nodes) EXPECT_GE(node->leases.held().size(), 2u);
  // c stops (a crash: no Leave, no Release): once its keys expire, a and b take its partitions.
  const size_t c_held = nodes[2]->leases.held().size();
  settle({0, 1});
  // c comes back and learns on its first step that every lease it held is gone (a and b hold
  // them all, so it gains none yet); then a and b hand its preferred partitions back.
  auto first = nodes[2]->balancer.Step();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->lost.size(), c_held);
  EXPECT_TRUE(first->gained.empty());
  EXPECT_TRUE(nodes[2]->leases.held().empty());
  settle({0, 1, 2});
}

}  // namespace
}  // namespace trainwatch::cluster
