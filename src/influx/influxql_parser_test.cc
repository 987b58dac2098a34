#include "influx/influxql_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::influx::ql {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kSecond = 1000LL * 1000 * 1000;

Statement One(std::string_view q) {
  auto parsed = ParseInfluxQL(q);
  EXPECT_TRUE(parsed.ok()) << q << ": " << parsed.status().ToString();
  if (!parsed.ok() || parsed->size() != 1) return CreateDatabaseStatement{"<failed>"};
  return std::move((*parsed)[0]);
}

std::string Error(std::string_view q) {
  auto parsed = ParseInfluxQL(q);
  EXPECT_FALSE(parsed.ok()) << q;
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(InfluxQLParserTest, TheGrafanaPanelQueryWithItsMacrosExpanded) {
  Statement st =
      One("SELECT mean(\"value\") FROM \"training_metrics\" WHERE (\"metric_name\" = 'loss') AND "
          "time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(10s) fill(null)");
  auto& s = std::get<SelectStatement>(st);
  ASSERT_EQ(s.fields.size(), 1u);
  const Expr& call = *s.fields[0].expr;
  EXPECT_EQ(call.kind, Expr::Kind::kCall);
  EXPECT_EQ(call.text, "mean");
  ASSERT_EQ(call.args.size(), 1u);
  EXPECT_EQ(call.args[0]->kind, Expr::Kind::kVarRef);
  EXPECT_EQ(call.args[0]->text, "value");
  ASSERT_EQ(s.sources.size(), 1u);
  EXPECT_EQ(s.sources[0].measurement, "training_metrics");
  ASSERT_NE(s.condition, nullptr);
  // ((metric_name = 'loss') AND time >= ...) AND time <= ...
  EXPECT_EQ(s.condition->op, "AND");
  EXPECT_EQ(s.condition->rhs->op, "<=");
  EXPECT_EQ(s.condition->rhs->rhs->kind, Expr::Kind::kDuration);
  EXPECT_EQ(s.condition->rhs->rhs->integer, 1700003600000LL * 1000 * 1000);
  const Expr& tag = *s.condition->lhs->lhs;
  EXPECT_EQ(tag.op, "=");
  EXPECT_EQ(tag.lhs->text, "metric_name");
  EXPECT_EQ(tag.rhs->kind, Expr::Kind::kString);
  EXPECT_EQ(tag.rhs->text, "loss");
  EXPECT_EQ(s.interval_ns, 10 * kSecond);
  EXPECT_EQ(s.fill, Fill::kNull);
}

TEST(InfluxQLParserTest, SelectClauses) {
  Statement st =
      One("select percentile(value, 95) AS p95, max(\"value\")*2, \"host\"::tag from "
          "mydb.autogen.\"cpu\", /^gpu.*/ "
          "where host =~ /gpu[0-9]+/ and \"index\" != '0' or time > now() - 6h "
          "group by time(1m, -30s), \"host\", * fill(previous) order by time desc limit 10 offset "
          "2 slimit 3 "
          "soffset 1 tz('Europe/Paris')");
  auto& s = std::get<SelectStatement>(st);
  ASSERT_EQ(s.fields.size(), 3u);
  EXPECT_EQ(s.fields[0].alias, "p95");
  EXPECT_EQ(s.fields[0].expr->args[1]->integer, 95);
  EXPECT_EQ(s.fields[1].expr->op, "*");
  EXPECT_EQ(s.fields[2].expr->cast, "tag");
  EXPECT_EQ(s.sources[0].database, "mydb");
  EXPECT_EQ(s.sources[0].retention_policy, "autogen");
  EXPECT_EQ(s.sources[0].measurement, "cpu");
  EXPECT_EQ(s.sources[1].regex, "^gpu.*");
  EXPECT_EQ(s.condition->op, "OR") << "AND binds tighter than OR";
  EXPECT_EQ(s.condition->lhs->op, "AND");
  EXPECT_EQ(s.condition->lhs->lhs->rhs->kind, Expr::Kind::kRegex);
  EXPECT_EQ(s.condition->lhs->lhs->rhs->text, "gpu[0-9]+");
  const Expr& since = *s.condition->rhs->rhs;
  EXPECT_EQ(since.op, "-");
  EXPECT_EQ(since.lhs->text, "now");
  EXPECT_EQ(since.rhs->integer, 6 * 3600 * kSecond);
  EXPECT_EQ(s.interval_ns, 60 * kSecond);
  EXPECT_EQ(s.offset_ns, -30 * kSecond);
  EXPECT_THAT(s.group_by_tags, ElementsAre("host"));
  EXPECT_TRUE(s.group_by_all_tags);
  EXPECT_EQ(s.fill, Fill::kPrevious);
  EXPECT_TRUE(s.descending);
  EXPECT_EQ(s.limit, 10);
  EXPECT_EQ(s.offset, 2);
  EXPECT_EQ(s.slimit, 3);
  EXPECT_EQ(s.soffset, 1);
  EXPECT_EQ(s.tz, "Europe/Paris");
}

TEST(InfluxQLParserTest, FillsWildcardsAndTimeLiterals) {
  EXPECT_EQ(std::get<SelectStatement>(One("SELECT * FROM m")).fields[0].expr->kind,
            Expr::Kind::kWildcard);
  EXPECT_EQ(std::get<SelectStatement>(One("SELECT count(*) FROM m")).fields[0].expr->args[0]->kind,
            Expr::Kind::kWildcard);
  EXPECT_EQ(std::get<SelectStatement>(One("SELECT *::field FROM m")).fields[0].expr->cast, "field");
  auto s = std::get<SelectStatement>(One("SELECT v FROM m GROUP BY time(5m) fill(-1.5)"));
  EXPECT_EQ(s.fill, Fill::kNumber);
  EXPECT_EQ(s.fill_value, -1.5);
  EXPECT_EQ(std::get<SelectStatement>(One("SELECT v FROM m fill(none)")).fill, Fill::kNone);
  EXPECT_EQ(std::get<SelectStatement>(One("SELECT v FROM m fill(linear)")).fill, Fill::kLinear);
  s = std::get<SelectStatement>(One("SELECT v FROM m WHERE time > '2024-01-01T00:00:00Z'"));
  EXPECT_EQ(s.condition->rhs->kind, Expr::Kind::kString);
  s = std::get<SelectStatement>(One("SELECT v FROM \"my \\\"m\\\"\" WHERE t = 'it\\'s'"));
  EXPECT_EQ(s.sources[0].measurement, "my \"m\"");
  EXPECT_EQ(s.condition->rhs->text, "it's");
  s = std::get<SelectStatement>(One("SELECT v FROM db..m"));
  EXPECT_EQ(s.sources[0].database, "db");
  EXPECT_EQ(s.sources[0].retention_policy, "");
  EXPECT_EQ(s.sources[0].measurement, "m");
  s = std::get<SelectStatement>(One("SELECT v FROM m WHERE a = true AND b = -3 AND c = 1.5e3"));
  EXPECT_TRUE(s.condition->lhs->lhs->rhs->boolean);
  EXPECT_EQ(s.condition->lhs->rhs->rhs->integer, -3);
  EXPECT_EQ(s.condition->rhs->rhs->number, 1500.0);
}

TEST(InfluxQLParserTest, MetadataStatementsGrafanaSends) {
  EXPECT_EQ(std::get<ShowStatement>(One("SHOW DATABASES")).what, ShowStatement::What::kDatabases);
  auto rp = std::get<ShowStatement>(One("SHOW RETENTION POLICIES on \"training\""));
  EXPECT_EQ(rp.what, ShowStatement::What::kRetentionPolicies);
  EXPECT_EQ(rp.database, "training");
  auto m = std::get<ShowStatement>(One("SHOW MEASUREMENTS WITH MEASUREMENT =~ /train/ LIMIT 100"));
  EXPECT_EQ(m.what, ShowStatement::What::kMeasurements);
  EXPECT_EQ(m.measurement_op, "=~");
  EXPECT_EQ(m.measurement_operand->text, "train");
  EXPECT_EQ(m.limit, 100);
  auto keys = std::get<ShowStatement>(One("SHOW TAG KEYS FROM \"training_metrics\""));
  EXPECT_EQ(keys.what, ShowStatement::What::kTagKeys);
  EXPECT_EQ(keys.sources[0].measurement, "training_metrics");
  auto values = std::get<ShowStatement>(One(
      "SHOW TAG VALUES FROM \"training_metrics\" WITH KEY = \"run\" WHERE \"project\" = 'vision'"));
  EXPECT_EQ(values.what, ShowStatement::What::kTagValues);
  EXPECT_EQ(values.key_op, "=");
  EXPECT_THAT(values.keys, ElementsAre("run"));
  EXPECT_EQ(values.condition->rhs->text, "vision");
  auto in = std::get<ShowStatement>(One("show tag values with key in (\"host\", \"index\")"));
  EXPECT_EQ(in.key_op, "IN");
  EXPECT_THAT(in.keys, ElementsAre("host", "index"));
  auto re = std::get<ShowStatement>(One("SHOW TAG VALUES WITH KEY =~ /ho.*/"));
  EXPECT_EQ(re.key_regex, "ho.*");
  EXPECT_EQ(std::get<ShowStatement>(One("SHOW FIELD KEYS FROM cpu")).what,
            ShowStatement::What::kFieldKeys);
  EXPECT_EQ(std::get<ShowStatement>(One("SHOW SERIES LIMIT 5")).limit, 5);
  EXPECT_EQ(std::get<CreateDatabaseStatement>(One("CREATE DATABASE \"training\"")).name,
            "training");
}

TEST(InfluxQLParserTest, SeveralStatements) {
  auto parsed = ParseInfluxQL("SELECT a FROM m; SELECT b FROM n;");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->size(), 2u);
}

TEST(InfluxQLParserTest, ErrorsSayWhatWasFoundWhereInInfluxDbsWords) {
  EXPECT_EQ(Error("SELECT FROM m"),
            "found FROM, expected identifier, string, number, bool at line 1, char 8");
  EXPECT_EQ(Error("SELECT v m"), "found m, expected FROM at line 1, char 10");
  EXPECT_EQ(Error("SELEC v FROM m"),
            "found SELEC, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, "
            "ALTER, SET, KILL at line 1, char 1");
  EXPECT_TRUE(ParseInfluxQL(";").value().empty());
  // Where InfluxDB's scanner says the query ended: one further unless it ends in a blank.
  EXPECT_EQ(Error("SELECT"),
            "found EOF, expected identifier, string, number, bool at line 1, char 8");
  EXPECT_EQ(Error("SELECT "),
            "found EOF, expected identifier, string, number, bool at line 1, char 8");
  EXPECT_EQ(Error("SELECT v FROM"), "found EOF, expected identifier at line 1, char 15");
  EXPECT_EQ(Error("SELECT v FROM m; SELEC"),
            "found SELEC, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, "
            "ALTER, SET, KILL at "
            "line 1, char 18");
  EXPECT_THAT(Error("SELECT v FROM m\nGROUP BY time(x)"),
              HasSubstr("expected duration at line 2, char 15"));
  EXPECT_THAT(Error("SELECT v FROM m WHERE t =~ 'x'"), HasSubstr("expected regex"));
  EXPECT_THAT(Error("SELECT v FROM m WHERE t = 'x"), HasSubstr("unterminated string"));
  EXPECT_THAT(Error("SELECT v FROM m WHERE t =~ /x"), HasSubstr("expected regex"));
  EXPECT_THAT(Error("SELECT v FROM m LIMIT x"), HasSubstr("expected integer"));
  EXPECT_THAT(Error("SELECT v FROM m fill(sideways)"),
              HasSubstr("expected null, none, previous, linear"));
  EXPECT_THAT(Error("SHOW TAG VALUES FROM m"), HasSubstr("expected WITH"));
  EXPECT_THAT(Error("SHOW STUFF"), HasSubstr("expected DATABASES"));
  EXPECT_THAT(Error("SELECT v FROM m extra"), HasSubstr("found extra, expected ;"));
  EXPECT_THAT(Error("SELECT v FROM a.b.c.d"), HasSubstr("expected at most db.rp.measurement"));
  EXPECT_THAT(Error("SELECT v FROM m GROUP BY time(0s)"), HasSubstr("must be positive"));
  EXPECT_THAT(Error("SELECT v FROM m WHERE x = 888E444"), HasSubstr("expected number"));
  EXPECT_THAT(Error("SELECT " + std::string(100000, '(') + "v FROM m"),
              HasSubstr("nested deeper than 64 levels at line 1, char 72"));
  EXPECT_THAT(Error("SELECT " + std::string(1000, 'f') + "(" + "v FROM m"), HasSubstr("expected"));
}

TEST(InfluxQLParserTest, Durations) {
  EXPECT_EQ(ParseInfluxDuration("6h").value(), 6 * 3600 * kSecond);
  EXPECT_EQ(ParseInfluxDuration("1h30m").value(), 5400 * kSecond);
  EXPECT_EQ(ParseInfluxDuration("1700000000000ms").value(), 1700000000000LL * 1000 * 1000);
  EXPECT_EQ(ParseInfluxDuration("5u").value(), 5000);
  EXPECT_EQ(ParseInfluxDuration("2w").value(), 14 * 86400 * kSecond);
  EXPECT_FALSE(ParseInfluxDuration("5").ok());
  EXPECT_FALSE(ParseInfluxDuration("h").ok());
  EXPECT_FALSE(ParseInfluxDuration("5y").ok());
  EXPECT_FALSE(ParseInfluxDuration("99999999999999999999h").ok());
}

}  // namespace
}  // namespace trainwatch::influx::ql
