#include "api/connection_registry.h"

#include <gtest/gtest.h>

#include <vector>

namespace trainwatch::api {
namespace {

class FakeConnection : public Connection {
 public:
  void Evict() override { ++evictions; }
  int evictions = 0;
};

// A connection with its slot, as a session holds them.
struct Open {
  std::shared_ptr<ConnectionRegistry::Slot> slot;
  std::shared_ptr<FakeConnection> connection = std::make_shared<FakeConnection>();
};

class ConnectionRegistryTest : public ::testing::Test {
 protected:
  // Registers a connection from `address`; `waiting`: it then waits for a request header.
  Open Connect(ConnectionRegistry& registry, const std::string& address, bool waiting) {
    Open open;
    open.slot = registry.Register(address);
    if (open.slot) {
      registry.Attach(*open.slot, open.connection);
      EXPECT_TRUE(registry.SetWaiting(*open.slot, waiting));
    }
    return open;
  }

  Counter evicted_;
};

TEST_F(ConnectionRegistryTest, ConnectionsUpToTheCapsGetSlots) {
  ConnectionRegistry registry(3, 2, evicted_);
  Open a = Connect(registry, "10.0.0.1", false);
  Open b = Connect(registry, "10.0.0.1", false);
  Open c = Connect(registry, "10.0.0.2", false);
  ASSERT_TRUE(a.slot && b.slot && c.slot);
  EXPECT_EQ(a.slot->address, "10.0.0.1");
  EXPECT_EQ(registry.open(), 3u);
  // Every one busy with a request: no room, nothing closed.
  EXPECT_EQ(registry.Register("10.0.0.1"), nullptr);
  EXPECT_EQ(registry.Register("10.0.0.3"), nullptr);
  EXPECT_EQ(registry.open(), 3u);
  EXPECT_EQ(evicted_.Value(), 0u);
}

TEST_F(ConnectionRegistryTest, AReleasedSlotMakesRoom) {
  ConnectionRegistry registry(2, 1, evicted_);
  Open a = Connect(registry, "10.0.0.1", false);
  EXPECT_EQ(registry.Register("10.0.0.1"), nullptr);
  a.slot.reset();
  EXPECT_EQ(registry.open(), 0u);
  Open b = Connect(registry, "10.0.0.1", false);
  EXPECT_NE(b.slot, nullptr);
  EXPECT_EQ(registry.open(), 1u);
}

TEST_F(ConnectionRegistryTest, OverTheAddressCapTheOldestWaitOfThatAddressIsEvicted) {
  ConnectionRegistry registry(100, 3, evicted_);
  Open first = Connect(registry, "10.0.0.1", true);
  Open second = Connect(registry, "10.0.0.1", true);
  Open busy = Connect(registry, "10.0.0.1", false);
  Open other = Connect(registry, "10.0.0.2", true);
  ASSERT_TRUE(registry.SetWaiting(*first.slot, false));  // a request came...
  ASSERT_TRUE(registry.SetWaiting(*first.slot, true));   // ...and was answered: its wait is the newest

  Open newcomer = Connect(registry, "10.0.0.1", false);
  ASSERT_NE(newcomer.slot, nullptr);
  EXPECT_EQ(second.connection->evictions, 1);
  EXPECT_EQ(first.connection->evictions, 0);
  EXPECT_EQ(busy.connection->evictions, 0);
  EXPECT_EQ(other.connection->evictions, 0);
  EXPECT_EQ(evicted_.Value(), 1u);
  EXPECT_EQ(registry.open(), 4u);
  // The evicted connection learns it must end the next time it looks.
  EXPECT_FALSE(registry.SetWaiting(*second.slot, false));
  second.slot.reset();  // its release changes nothing: its place is taken already
  EXPECT_EQ(registry.open(), 4u);
}

TEST_F(ConnectionRegistryTest, OverTheTotalCapTheBusiestAddressGivesOneUp) {
  ConnectionRegistry registry(4, 10, evicted_);
  Open a1 = Connect(registry, "10.0.0.1", true);
  Open b1 = Connect(registry, "10.0.0.2", true);
  Open b2 = Connect(registry, "10.0.0.2", true);
  Open b3 = Connect(registry, "10.0.0.2", false);
  Open newcomer = Connect(registry, "10.0.0.3", false);
  ASSERT_NE(newcomer.slot, nullptr);
  EXPECT_EQ(a1.connection->evictions, 0);  // older, but its address has fewer connections
  EXPECT_EQ(b1.connection->evictions, 1);
  EXPECT_EQ(b2.connection->evictions, 0);
  EXPECT_EQ(registry.open(), 4u);
}

TEST_F(ConnectionRegistryTest, OnlyConnectionsStillAliveAndAttachedAreEvicted) {
  ConnectionRegistry registry(2, 10, evicted_);
  Open gone = Connect(registry, "10.0.0.1", true);
  gone.connection.reset();  // its session ended but has not released the slot yet
  auto unattached = registry.Register("10.0.0.1");
  ASSERT_TRUE(registry.SetWaiting(*unattached, true));
  EXPECT_EQ(registry.Register("10.0.0.2"), nullptr);
  EXPECT_EQ(evicted_.Value(), 0u);
}

TEST_F(ConnectionRegistryTest, EvictOldestWaitingFreesOneAnywhere) {
  ConnectionRegistry registry(10, 10, evicted_);
  EXPECT_FALSE(registry.EvictOldestWaiting());
  Open busy = Connect(registry, "10.0.0.1", false);
  EXPECT_FALSE(registry.EvictOldestWaiting());
  Open a = Connect(registry, "10.0.0.2", true);
  Open b = Connect(registry, "10.0.0.2", true);
  EXPECT_TRUE(registry.EvictOldestWaiting());
  EXPECT_EQ(a.connection->evictions, 1);
  EXPECT_EQ(b.connection->evictions, 0);
  EXPECT_EQ(busy.connection->evictions, 0);
  EXPECT_EQ(registry.open(), 2u);
  EXPECT_TRUE(registry.EvictOldestWaiting());
  EXPECT_EQ(b.connection->evictions, 1);
  EXPECT_FALSE(registry.EvictOldestWaiting());
  EXPECT_EQ(evicted_.Value(), 2u);
}

}  // namespace
}  // namespace trainwatch::api
