#include "system/proc_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::sdk {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

MATCHER_P2(IoIs, read, write, "") { return arg.read == read && arg.write == write; }

TEST(ProcStatsTest, ProcStatSumsUpToStealAndCountsIowaitAsIdle) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  auto times = ParseProcStat("cpu  10 20 30 400 50 6 7 8 900 1000\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
  ASSERT_TRUE(times.has_value());
  EXPECT_EQ(times->total_ticks, 10u + 20 + 30 + 400 + 50 + 6 + 7 + 8);
  EXPECT_EQ(times->busy_ticks, 10u + 20 + 30 + 6 + 7 + 8);
}

TEST(ProcStatsTest, ProcStatAcceptsOldKernelsWithFourCounters) {
  auto times = ParseProcStat("cpu 1 2 3 4\n");
  ASSERT_TRUE(times.has_value());
  EXPECT_EQ(times->total_ticks, 10u);
  EXPECT_EQ(times->busy_ticks, 6u);
}

TEST(ProcStatsTest, ProcStatRejectsGarbage) {
  EXPECT_FALSE(ParseProcStat("").has_value());
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4\n").has_value());
  EXPECT_FALSE(ParseProcStat("cpu 1 2 x 4\n").has_value());
  EXPECT_FALSE(ParseProcStat("cpu 1 2\n").has_value());
}

TEST(ProcStatsTest, ProcessCpuTicksCountsFieldsAfterTheLastParenthesis) {
  // comm "a) b (c" holds spaces and parentheses; utime 700, stime 11.
  EXPECT_EQ(ParseProcessCpuTicks("42 (a) b (c) R 1 42 42 0 -1 4194304 9 0 0 0 700 11 0 0 20 0 1"),
            711u);
  EXPECT_FALSE(ParseProcessCpuTicks("42 (x) R 1 42").has_value());
  EXPECT_FALSE(ParseProcessCpuTicks("no parenthesis").has_value());
}

TEST(ProcStatsTest, MeminfoPrefersMemAvailable) {
  auto memory = ParseMeminfo(
      "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n"
      "Buffers:          10 kB\nCached:          200 kB\n");
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->total_bytes, 1000u * 1024);
  EXPECT_EQ(memory->available_bytes, 400u * 1024);
}

TEST(ProcStatsTest, MeminfoFallsBackToFreeBuffersCached) {
  auto memory = ParseMeminfo(
      "MemTotal:       1000 kB\nMemFree:         100 kB\nBuffers:          10 kB\n"
      "Cached:          200 kB\nSwapCached:     999 kB\n");
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->available_bytes, 310u * 1024);
  EXPECT_FALSE(ParseMeminfo("MemFree: 100 kB\n").has_value());
  EXPECT_FALSE(ParseMeminfo("MemTotal: 0 kB\nMemAvailable: 0 kB\n").has_value());
}

TEST(ProcStatsTest, RssFromStatusOrStatm) {
  EXPECT_EQ(ParseStatusRssBytes("Name:\tx\nVmHWM:\t  900 kB\nVmRSS:\t  512 kB\n"), 512u * 1024);
  EXPECT_FALSE(ParseStatusRssBytes("Name:\tkthreadd\nState:\tS\n").has_value());
  EXPECT_EQ(ParseStatmRssBytes("1000 250 100 10 0 300 0\n", 4096), 250u * 4096);
  EXPECT_FALSE(ParseStatmRssBytes("1000\n", 4096).has_value());
}

TEST(ProcStatsTest, DiskstatsKeepsWholePhysicalDisksOnly) {
  // Fields: major minor name reads merged SECTORS_READ ms writes merged SECTORS_WRITTEN ...
  auto disks = ParseDiskstats(
      "   8       0 sda 1 0 10 0 1 0 20 0 0 0 0 0 0 0 0 0 0\n"
      "   8       1 sda1 1 0 999 0 1 0 999 0 0 0 0 0 0 0 0 0 0\n"
      "   8      16 sdb 1 0 30 0 1 0 40 0 0 0 0 0 0 0 0 0 0\n"
      " 259       0 nvme0n1 1 0 50 0 1 0 60 0 0 0 0 0 0 0 0 0 0\n"
      " 259       1 nvme0n1p1 1 0 999 0 1 0 999 0 0 0 0 0 0 0 0 0 0\n"
      " 259       9 nvme0n10 1 0 70 0 1 0 80 0 0 0 0 0 0 0 0 0 0\n"
      " 179       0 mmcblk0 1 0 90 0 1 0 100 0 0 0 0 0 0 0 0 0 0\n"
      " 179       1 mmcblk0p2 1 0 999 0 1 0 999 0 0 0 0 0 0 0 0 0 0\n"
      "   7       0 loop0 1 0 999 0 1 0 999 0 0 0 0 0 0 0 0 0 0\n"
      "   1       0 ram0 1 0 999 0 1 0 999 0 0 0 0 0 0 0 0 0 0\n"
      " 252       0 zram0 1 0 999 0 1 0 999 0 0 0 0 0 0 0 0 0 0\n"
      " 253       0 dm-0 1 0 999 0 1 0 999 0 0 0 0 0 0 0 0 0 0\n"
      "   9       0 md0 1 0 999 0 1 0 999 0 0 0 0 0 0 0 0 0 0\n"
      "   3       1 hda1 1 2 3 4\n");  // a 2.6-era partition line: too short, skipped
  ASSERT_TRUE(disks.has_value());
  EXPECT_THAT(*disks, ElementsAre(Pair("mmcblk0", IoIs(90u * 512, 100u * 512)),
                                  Pair("nvme0n1", IoIs(50u * 512, 60u * 512)),
                                  Pair("nvme0n10", IoIs(70u * 512, 80u * 512)),
                                  Pair("sda", IoIs(10u * 512, 20u * 512)),
                                  Pair("sdb", IoIs(30u * 512, 40u * 512))));
  EXPECT_FALSE(ParseDiskstats("").has_value());
}

TEST(ProcStatsTest, NetDevSkipsLoopbackAndHeaders) {
  auto interfaces = ParseNetDev(
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
      "drop fifo colls carrier compressed\n"
      "    lo: 5000 10 0 0 0 0 0 0 5000 10 0 0 0 0 0 0\n"
      "  eth0: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n"
      "  eth1:4294967296 1 0 0 0 0 0 0 300 2 0 0 0 0 0 0\n");
  ASSERT_TRUE(interfaces.has_value());
  EXPECT_THAT(*interfaces,
              ElementsAre(Pair("eth0", IoIs(100u, 200u)), Pair("eth1", IoIs(4294967296u, 300u))));
  EXPECT_FALSE(ParseNetDev("Inter-| Receive\n face |bytes\n").has_value());
}

TEST(ProcStatsTest, ReadSmallFileReadsProcFilesAndRejectsMissingOnes) {
  auto text = ReadSmallFile("/proc/self/status");
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("VmRSS"), std::string::npos);
  EXPECT_FALSE(ReadSmallFile("/nonexistent/file").has_value());
  EXPECT_FALSE(ReadSmallFile("/proc/self/status", 10).has_value());
}

}  // namespace
}  // namespace trainwatch::sdk
