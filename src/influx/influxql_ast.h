// The InfluxQL statements Grafana's InfluxDB data source and the `influx` shell send, as a syntax
// tree (docs/influx.md lists the subset). Produced by ParseInfluxQL (influxql_parser.h); what the
// statements mean against trainwatch's store is the executor's business.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace trainwatch::influx::ql {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kNumber,    // 1.5 (number)
    kInteger,   // 15 (integer)
    kString,    // 'text' (text)
    kRegex,     // /re/ (text: the pattern, unescaped)
    kBoolean,   // true / false (boolean)
    kDuration,  // 6h, 1700000000000ms (integer: nanoseconds)
    kVarRef,    // value, "metric_name", "host"::tag (text: the name; cast: "tag", "field", ...)
    kWildcard,  // * (cast: "tag"/"field" for *::tag)
    kCall,      // mean("value"), now(), percentile("value", 95) (text: the name, lower case)
    kBinary,    // lhs op rhs (op: + - * / % = != < <= > >= =~ !~ AND OR)
  };
  Kind kind = Kind::kNumber;
  double number = 0;
  int64_t integer = 0;
  bool boolean = false;
  std::string text;
  std::string cast;
  std::string op;
  std::vector<ExprPtr> args;
  ExprPtr lhs, rhs;
};

// FROM db.rp.measurement, or a regular expression over measurement names.
struct Source {
  std::string database;          // "" when not given
  std::string retention_policy;  // "" when not given
  std::string measurement;       // "" for a regex
  std::optional<std::string> regex;
};

struct Field {
  ExprPtr expr;
  std::string alias;  // "" when not given
};

enum class Fill { kNull, kNone, kNumber, kPrevious, kLinear };

struct SelectStatement {
  std::vector<Field> fields;
  std::vector<Source> sources;
  ExprPtr condition;                   // null when there is no WHERE
  std::optional<int64_t> interval_ns;  // GROUP BY time(interval[, offset])
  int64_t offset_ns = 0;
  std::vector<std::string> group_by_tags;
  std::vector<std::string> group_by_tag_regexes;
  bool group_by_all_tags = false;  // GROUP BY *
  Fill fill = Fill::kNull;
  double fill_value = 0;                                   // Fill::kNumber
  bool descending = false;                                 // ORDER BY time DESC
  int64_t limit = 0, offset = 0, slimit = 0, soffset = 0;  // 0: none
  std::string tz;
};

struct ShowStatement {
  enum class What {
    kDatabases,
    kMeasurements,
    kTagKeys,
    kTagValues,
    kFieldKeys,
    kRetentionPolicies,
    kSeries
  };
  What what = What::kDatabases;
  std::string database;         // ON db
  std::vector<Source> sources;  // FROM ...
  // SHOW MEASUREMENTS WITH MEASUREMENT =~ /re/ or = name: op and operand.
  std::string measurement_op;
  ExprPtr measurement_operand;
  // SHOW TAG VALUES WITH KEY: op (=, !=, =~, !~, IN) and the keys or the pattern.
  std::string key_op;
  std::vector<std::string> keys;
  std::string key_regex;
  ExprPtr condition;  // WHERE
  int64_t limit = 0, offset = 0;
};

struct CreateDatabaseStatement {
  std::string name;
};

using Statement = std::variant<SelectStatement, ShowStatement, CreateDatabaseStatement>;

}  // namespace trainwatch::influx::ql
