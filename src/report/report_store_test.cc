#include "report/report_store.h"

#include <gtest/gtest.h>

#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"

namespace trainwatch::report {
namespace {

using test::FaultInjectionFileSystem;
using test::TempDir;

StoredReportInfo Info(const std::string& run, const std::string& status, double end) {
  StoredReportInfo info;
  info.project = "vision";
  info.run = run;
  info.status = status;
  info.run_end_time = end;
  info.generated_at = end + 1;
  return info;
}

TEST(ReportStoreTest, StoresReplacesAndRemovesPerRun) {
  TempDir dir;
  ReportStore store(PosixFileSystem(), dir.Join("reports"));
  auto none = store.Info("vision", "a");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "no stored report for run 'a' in project 'vision'");

  ASSERT_TRUE(store.Put(Info("a", "finished", 100), "<html>a</html>").ok());
  ASSERT_TRUE(store.Put(Info("a/b", "crashed", 200), "<html>a/b</html>").ok());
  auto a = store.Info("vision", "a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->status, "finished");
  EXPECT_EQ(a->run_end_time, 100);
  EXPECT_EQ(a->generated_at, 101);
  EXPECT_EQ(a->bytes, 14u);
  EXPECT_EQ(store.Html("vision", "a/b").value(), "<html>a/b</html>");
  EXPECT_FALSE(store.Info("other", "a").ok());

  // The run resumed and ended again: the new report replaces the old.
  ASSERT_TRUE(store.Put(Info("a", "crashed", 300), "<html>again</html>").ok());
  EXPECT_EQ(store.Info("vision", "a")->status, "crashed");
  EXPECT_EQ(store.Html("vision", "a").value(), "<html>again</html>");

  // Another store on the same directory (a restart) reads the same.
  ReportStore reopened(PosixFileSystem(), dir.Join("reports"));
  EXPECT_EQ(reopened.Html("vision", "a/b").value(), "<html>a/b</html>");

  ASSERT_TRUE(store.Remove("vision", "a").ok());
  EXPECT_FALSE(store.Info("vision", "a").ok());
  EXPECT_FALSE(store.Html("vision", "a").ok());
  EXPECT_TRUE(store.Remove("vision", "a").ok());
}

// A power cut right after Put returned keeps the report: both files were synced.
TEST(ReportStoreTest, AStoredReportSurvivesAPowerCut) {
  TempDir dir;
  FaultInjectionFileSystem fs(PosixFileSystem());
  {
    ReportStore store(fs, dir.Join("reports"));
    ASSERT_TRUE(store.Put(Info("r", "finished", 100), "<html>r</html>").ok());
  }
  ASSERT_TRUE(fs.Crash().ok());
  fs.Restart();
  ReportStore store(fs, dir.Join("reports"));
  auto info = store.Info("vision", "r");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->bytes, 14u);
  EXPECT_EQ(store.Html("vision", "r").value(), "<html>r</html>");
}

}  // namespace
}  // namespace trainwatch::report
