#include "flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace trainwatch::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A command with one flag of every kind and a required positional argument.
struct Example {
  std::string dir, project = "default", env_flag;
  std::vector<std::string> tags;
  bool json = false;
  double timeout = 600;
  double interval = 0.25;
  int64_t limit = 100;
  FlagSet flags{"example", "Does an example thing.\n"};

  Example() {
    flags.AddPositional("DIR", &dir);
    flags.Add(StringFlag("--project", "P", "the project (default: default)", &project));
    flags.Add(ListFlag("--tag", "T", "a tag; repeatable", &tags));
    flags.Add(SwitchFlag("--json", "print JSON", &json));
    flags.Add(DurationFlag("--timeout", "D", "how long to wait\nat the end", &timeout));
    flags.Add(DurationFlag("--interval", "D", "how often", &interval, /*positive=*/true));
    flags.Add(IntegerFlag("--limit", "N", "at most N", &limit, 1));
    Flag from_env = StringFlag("--from-env", "X", "defaults to the environment", &env_flag);
    from_env.env = "TRAINWATCH_FLAGS_TEST_VALUE";
    flags.Add(std::move(from_env));
  }
};

TEST(FlagsTest, ValuesSeparateOrAfterEqualsSwitchesAndPositional) {
  Example e;
  ASSERT_TRUE(e.flags
                  .Parse({"--project", "p1", "logs", "--timeout=90s", "--json", "--tag", "a",
                          "--tag=b", "--limit", "7", "--interval", "500ms"})
                  .ok());
  EXPECT_EQ(e.dir, "logs");
  EXPECT_EQ(e.project, "p1");
  EXPECT_EQ(e.timeout, 90);
  EXPECT_TRUE(e.json);
  EXPECT_THAT(e.tags, ::testing::ElementsAre("a", "b"));
  EXPECT_EQ(e.limit, 7);
  EXPECT_EQ(e.interval, 0.5);
}

TEST(FlagsTest, DefaultsStayWhenFlagsAreAbsent) {
  Example e;
  ASSERT_TRUE(e.flags.Parse({"logs"}).ok());
  EXPECT_EQ(e.project, "default");
  EXPECT_EQ(e.timeout, 600);
  EXPECT_FALSE(e.json);
  EXPECT_EQ(e.limit, 100);
}

TEST(FlagsTest, AValueIsTakenVerbatimEvenWhenItLooksLikeAFlag) {
  Example e;
  ASSERT_TRUE(e.flags.Parse({"--project", "--json", "logs", "--from-env=a=b"}).ok());
  EXPECT_EQ(e.project, "--json");
  EXPECT_FALSE(e.json);
  EXPECT_EQ(e.env_flag, "a=b");
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  auto error = [](std::vector<std::string> args) {
    Example e;
    Status s = e.flags.Parse(args);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    return s.message();
  };
  EXPECT_EQ(error({"logs", "--nope"}), "unknown flag '--nope'");
  EXPECT_EQ(error({"logs", "--nope=1"}), "unknown flag '--nope'");
  EXPECT_EQ(error({"logs", "-x"}), "unknown flag '-x'");
  EXPECT_EQ(error({"logs", "--project"}), "--project needs a value (--project P)");
  EXPECT_EQ(error({"logs", "--json=yes"}), "--json takes no value");
  EXPECT_EQ(error({"logs", "--limit", "ten"}), "--limit: bad number 'ten'");
  EXPECT_EQ(error({"logs", "--limit", "7x"}), "--limit: bad number '7x'");
  EXPECT_EQ(error({"logs", "--limit", "0"}), "--limit: must be at least 1");
  EXPECT_THAT(error({"logs", "--timeout", "soon"}), HasSubstr("--timeout: bad duration 'soon'"));
  EXPECT_EQ(error({"logs", "--interval", "0s"}), "--interval: must be positive");
  EXPECT_EQ(error({}), "missing DIR");
  EXPECT_EQ(error({"--json"}), "missing DIR");
  EXPECT_EQ(error({"logs", "more"}), "unexpected argument 'more'");
}

TEST(FlagsTest, ARequiredFlagMustBeGiven) {
  std::string run, dir;
  FlagSet set("export", "");
  set.AddPositional("RUN", &run);
  Flag tfevents = StringFlag("--tfevents", "DIR", "where to", &dir);
  tfevents.required = true;
  set.Add(std::move(tfevents));
  EXPECT_EQ(set.Parse({"r"}).message(), "missing --tfevents DIR");
  EXPECT_EQ(set.Parse({"--tfevents", "out"}).message(), "missing RUN");
  ASSERT_TRUE(set.Parse({"r", "--tfevents=out"}).ok());
  EXPECT_EQ(dir, "out");
  EXPECT_EQ(set.Usage().substr(0, set.Usage().find('\n')),
            "usage: trainwatch export RUN --tfevents DIR");
}

TEST(FlagsTest, DoubleDashEndsTheFlagsAndADashAloneIsPositional) {
  Example a;
  ASSERT_TRUE(a.flags.Parse({"--json", "--", "--weird-dir"}).ok());
  EXPECT_EQ(a.dir, "--weird-dir");
  Example b;
  ASSERT_TRUE(b.flags.Parse({"-"}).ok());
  EXPECT_EQ(b.dir, "-");
}

TEST(FlagsTest, PositionalListsAndOptionalPositionals) {
  std::string action, name;
  std::vector<std::string> files;
  FlagSet set("x", "");
  set.AddPositional("ACTION", &action);
  set.AddPositional("NAME", &name, /*required=*/false);
  ASSERT_TRUE(set.Parse({"list"}).ok());
  EXPECT_EQ(action, "list");
  EXPECT_EQ(name, "");
  ASSERT_TRUE(set.Parse({"revoke", "ci"}).ok());
  EXPECT_EQ(name, "ci");
  EXPECT_EQ(set.Parse({"revoke", "ci", "extra"}).message(), "unexpected argument 'extra'");

  FlagSet many("detect", "");
  many.AddPositionalList("FILE", &files);
  EXPECT_EQ(many.Parse({}).message(), "missing FILE");
  ASSERT_TRUE(many.Parse({"a.jsonl", "b.jsonl", "c.jsonl"}).ok());
  EXPECT_THAT(files, ::testing::ElementsAre("a.jsonl", "b.jsonl", "c.jsonl"));
}

TEST(FlagsTest, HelpWinsOverErrorsButNotAsAValue) {
  Example e;
  EXPECT_TRUE(e.flags.HelpRequested({"--nope", "--help"}));
  EXPECT_TRUE(e.flags.HelpRequested({"-h"}));
  EXPECT_FALSE(e.flags.HelpRequested({"--project", "-h", "logs"}));
  EXPECT_FALSE(e.flags.HelpRequested({"logs", "--", "--help"}));
}

TEST(FlagsTest, EnvironmentIsTheDefaultAndAFlagOverridesIt) {
  ::setenv("TRAINWATCH_FLAGS_TEST_VALUE", "from-env", 1);
  Example a;
  ASSERT_TRUE(a.flags.Parse({"logs"}).ok());
  EXPECT_EQ(a.env_flag, "from-env");
  Example b;
  ASSERT_TRUE(b.flags.Parse({"logs", "--from-env", "from-flag"}).ok());
  EXPECT_EQ(b.env_flag, "from-flag");
  ::setenv("TRAINWATCH_FLAGS_TEST_VALUE", "", 1);  // empty: as if unset
  Example c;
  ASSERT_TRUE(c.flags.Parse({"logs"}).ok());
  EXPECT_EQ(c.env_flag, "");
  ::unsetenv("TRAINWATCH_FLAGS_TEST_VALUE");
}

TEST(FlagsTest, EnvironmentErrorsNameTheVariable) {
  ::setenv("TRAINWATCH_FLAGS_TEST_LIMIT", "many", 1);
  int64_t limit = 1;
  FlagSet set("x", "");
  Flag f = IntegerFlag("--limit", "N", "", &limit, 1);
  f.env = "TRAINWATCH_FLAGS_TEST_LIMIT";
  set.Add(std::move(f));
  EXPECT_EQ(set.Parse({}).message(),
            "environment TRAINWATCH_FLAGS_TEST_LIMIT (--limit): bad number 'many'");
  ::unsetenv("TRAINWATCH_FLAGS_TEST_LIMIT");
}

TEST(FlagsTest, UsageIsGeneratedFromTheTable) {
  Example e;
  const std::string usage = e.flags.Usage();
  EXPECT_EQ(usage.substr(0, usage.find('\n')),
            "usage: trainwatch example DIR [--project P] [--tag T] [--json] [--timeout D] "
            "[--interval D]");
  EXPECT_THAT(
      usage,
      HasSubstr(
          "\n                          [--limit N] [--from-env X]\nDoes an example thing.\n"));
  EXPECT_THAT(usage, HasSubstr("\n  --project P   the project (default: default)\n"));
  EXPECT_THAT(usage, HasSubstr("\n  --json        print JSON\n"));
  EXPECT_THAT(usage, HasSubstr("\n  --timeout D   how long to wait\n                at the end\n"));
  EXPECT_THAT(
      usage,
      HasSubstr(
          "\n  --from-env X  defaults to the environment (env TRAINWATCH_FLAGS_TEST_VALUE)\n"));
  EXPECT_THAT(usage, HasSubstr("\n  -h, --help    print this help\n"));

  FlagSet custom("keys", "More.\n");
  custom.SetSynopsis("usage: trainwatch keys create\n       trainwatch keys list\n");
  EXPECT_EQ(custom.Usage(),
            "usage: trainwatch keys create\n       trainwatch keys list\nMore.\n"
            "  -h, --help  print this help\n");
}

TEST(FlagsTest, ParseCommandLineExitCodes) {
  Example ok;
  EXPECT_EQ(ParseCommandLine(ok.flags, {"logs"}), std::nullopt);

  Example help;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(ParseCommandLine(help.flags, {"--help"}), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), help.flags.Usage());

  Example bad;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ParseCommandLine(bad.flags, {"logs", "--nope"}), 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "trainwatch example: unknown flag '--nope'\n" + bad.flags.Usage());
  EXPECT_THAT(err, Not(HasSubstr("needs a value")));
}

}  // namespace
}  // namespace trainwatch::tools
