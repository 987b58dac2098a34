// Annotation templates.
#include "rules/template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace trainwatch::rules {
namespace {

TEST(TemplateTest, ExpandsEveryVariable) {
  Result<Template> t = Template::Parse(
      "{{ $alert }}: {{$metric}} is {{ $value }} at step {{ $step }} in {{ $run }} ({{ $project "
      "}}, "
      "team {{ $labels.team }}, {{ $labels.missing }}done)");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::map<std::string, std::string> labels = {{"team", "vision"}};
  TemplateVars vars{.value = 0.51234567,
                    .step = 1200,
                    .run = "r1",
                    .project = "p",
                    .alert = "HighLoss",
                    .metric = "loss",
                    .labels = &labels};
  EXPECT_EQ("HighLoss: loss is 0.512346 at step 1200 in r1 (p, team vision, done)",
            t->Expand(vars));
  EXPECT_THAT(t->label_refs(), ::testing::ElementsAre("team", "missing"));
}

TEST(TemplateTest, PlainTextAndBraces) {
  Result<Template> t = Template::Parse("no placeholders { here }");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ("no placeholders { here }", t->Expand({}));
}

TEST(TemplateTest, Errors) {
  EXPECT_EQ(
      "unknown template variable '{{ $val }}' (known: $value, $step, $run, $project, $alert, "
      "$metric, "
      "$labels.<name>)",
      Template::Parse("x {{ $val }}").status().message());
  EXPECT_EQ("unclosed '{{' at offset 3", Template::Parse("x {{ $value").status().message());
  EXPECT_FALSE(Template::Parse("{{ $labels. }}").ok());
  EXPECT_FALSE(Template::Parse("{{ value }}").ok());
}

TEST(TemplateTest, FormatsValues) {
  EXPECT_EQ("NaN", FormatValue(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_EQ("+Inf", FormatValue(std::numeric_limits<double>::infinity()));
  EXPECT_EQ("-Inf", FormatValue(-std::numeric_limits<double>::infinity()));
  EXPECT_EQ("1e-05", FormatValue(1e-5));
  EXPECT_EQ("12", FormatValue(12));
}

}  // namespace
}  // namespace trainwatch::rules
