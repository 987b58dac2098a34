#include "prom/promql_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <string>

namespace trainwatch::prom {
namespace {

// How deep parentheses, calls and aggregations may nest.
constexpr int kMaxDepth = 64;

const std::set<std::string> kAggregateOps = {"sum",   "avg",  "min",    "max",
                                             "count", "topk", "bottomk"};

bool IsNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class Parser {
 public:
  explicit Parser(std::string_view q) : q_(q) {}

  Result<ExprPtr> Parse() {
    Result<ExprPtr> e = Expression(0);
    if (!e.ok()) return e;
    Skip();
    if (pos_ < q_.size()) return Error("unexpected character '" + std::string(1, q_[pos_]) + "'");
    return e;
  }

 private:
  Status Error(const std::string& what) const {
    return Status::InvalidArgument("parse error at char " + std::to_string(pos_ + 1) + ": " + what);
  }

  void Skip() {
    while (pos_ < q_.size()) {
      if (std::isspace(static_cast<unsigned char>(q_[pos_]))) {
        ++pos_;
      } else if (q_[pos_] == '#') {  // a comment runs to the end of the line
        while (pos_ < q_.size() && q_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool Peek(std::string_view s) {
    Skip();
    return q_.substr(pos_, s.size()) == s;
  }
  bool Accept(std::string_view s) {
    if (!Peek(s)) return false;
    pos_ += s.size();
    return true;
  }

  // A name (metric, label, function), or "" when none is here.
  std::string Name() {
    Skip();
    size_t start = pos_;
    if (pos_ < q_.size() && IsNameStart(q_[pos_])) {
      while (pos_ < q_.size() && IsNameChar(q_[pos_])) ++pos_;
    }
    return std::string(q_.substr(start, pos_ - start));
  }

  // The next word, without consuming it.
  std::string PeekName() {
    size_t saved = pos_;
    std::string n = Name();
    pos_ = saved;
    return n;
  }

  // Binary operators by precedence, loosest first (Prometheus's: or < and unless < comparisons <
  // + - < * / % < ^).
  static int Precedence(const std::string& op) {
    if (op == "or") return 1;
    if (op == "and" || op == "unless") return 2;
    if (op == "==" || op == "!=" || op == "<=" || op == "<" || op == ">=" || op == ">") return 3;
    if (op == "+" || op == "-") return 4;
    if (op == "*" || op == "/" || op == "%") return 5;
    if (op == "^") return 6;
    return 0;
  }

  // The binary operator here ("" if none), not consumed.
  std::string PeekOperator() {
    Skip();
    for (std::string_view op : {"==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "^"}) {
      if (q_.substr(pos_, op.size()) == op) return std::string(op);
    }
    std::string word = Lower(PeekName());
    if (word == "and" || word == "or" || word == "unless") return word;
    return "";
  }

  Result<ExprPtr> Expression(int min_precedence) {
    if (++depth_ > kMaxDepth)
      return Error("expression nested deeper than " + std::to_string(kMaxDepth) + " levels");
    Result<ExprPtr> lhs = Unary();
    while (lhs.ok()) {
      const std::string op = PeekOperator();
      const int p = Precedence(op);
      if (op.empty() || p < min_precedence) break;
      pos_ += op.size();
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Kind::kBinary;
      e->text = op;
      if (PeekName() == "bool") {
        Name();
        e->return_bool = true;
      }
      if (PeekName() == "on" || PeekName() == "ignoring") {
        e->on = Name() == "on";
        e->has_matching = true;
        Result<std::vector<std::string>> labels = LabelList();
        if (!labels.ok()) return labels.status();
        e->matching = std::move(*labels);
      }
      if (PeekName() == "group_left" || PeekName() == "group_right") {
        return Error("group_left and group_right are not supported");
      }
      // ^ is right-associative; the others left.
      Result<ExprPtr> rhs = Expression(op == "^" ? p : p + 1);
      if (!rhs.ok()) return rhs;
      e->lhs = std::move(*lhs);
      e->rhs = std::move(*rhs);
      lhs = std::move(e);
    }
    --depth_;
    return lhs;
  }

  Result<ExprPtr> Unary() {
    Skip();
    if (Accept("-")) {
      Result<ExprPtr> inner = Unary();
      if (!inner.ok()) return inner;
      if ((*inner)->kind == Expr::Kind::kNumber) {
        (*inner)->number = -(*inner)->number;
        return inner;
      }
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Kind::kNegate;
      e->lhs = std::move(*inner);
      return e;
    }
    if (Accept("+")) return Unary();
    Result<ExprPtr> e = Primary();
    if (!e.ok()) return e;
    return Suffixes(std::move(*e));
  }

  // [range] and offset after a selector (or a subquery, which is not supported).
  Result<ExprPtr> Suffixes(ExprPtr e) {
    if (Peek("[")) {
      if (e->kind != Expr::Kind::kVectorSelector)
        return Error("ranges only allowed for vector selectors");
      ++pos_;
      Skip();
      size_t start = pos_;
      while (pos_ < q_.size() && q_[pos_] != ']' && q_[pos_] != ':') ++pos_;
      if (pos_ < q_.size() && q_[pos_] == ':') return Error("subqueries are not supported");
      if (pos_ >= q_.size()) return Error("unclosed range");
      Result<int64_t> range = ParsePromDuration(std::string(q_.substr(start, pos_ - start)));
      if (!range.ok()) return Error(range.status().message());
      ++pos_;
      e->kind = Expr::Kind::kMatrixSelector;
      e->range_ms = *range;
    }
    if (PeekName() == "offset") {
      if (e->kind != Expr::Kind::kVectorSelector && e->kind != Expr::Kind::kMatrixSelector) {
        return Error(
            "offset modifier must be preceded by an instant vector selector or range vector "
            "selector");
      }
      Name();
      Skip();
      bool negative = Accept("-");
      Skip();
      size_t start = pos_;
      while (pos_ < q_.size() && std::isalnum(static_cast<unsigned char>(q_[pos_]))) ++pos_;
      Result<int64_t> offset = ParsePromDuration(std::string(q_.substr(start, pos_ - start)));
      if (!offset.ok()) return Error(offset.status().message());
      e->offset_ms = negative ? -*offset : *offset;
    }
    return e;
  }

  Result<ExprPtr> Primary() {
    Skip();
    if (pos_ >= q_.size()) return Error("unexpected end of input");
    const char c = q_[pos_];
    if (c == '(') {
      ++pos_;
      Result<ExprPtr> inner = Expression(0);
      if (!inner.ok()) return inner;
      if (!Accept(")")) return Error("unclosed left parenthesis");
      return inner;
    }
    if (c == '"' || c == '\'' || c == '`') {
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Kind::kString;
      Result<std::string> s = String();
      if (!s.ok()) return s.status();
      e->text = std::move(*s);
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Number();
    if (c == '{') return Selector("");
    std::string name = Name();
    if (name.empty()) return Error("unexpected character '" + std::string(1, c) + "'");
    const std::string lower = Lower(name);
    if (lower == "inf" || lower == "nan") {
      auto e = std::make_unique<Expr>();
      e->number = lower == "inf" ? INFINITY : NAN;
      return e;
    }
    if (kAggregateOps.contains(lower) &&
        (Peek("(") || PeekName() == "by" || PeekName() == "without")) {
      return Aggregate(lower);
    }
    if (Peek("(")) return Call(name);
    return Selector(name);
  }

  Result<ExprPtr> Number() {
    size_t start = pos_;
    while (pos_ < q_.size() &&
           (std::isalnum(static_cast<unsigned char>(q_[pos_])) || q_[pos_] == '.' ||
            ((q_[pos_] == '+' || q_[pos_] == '-') && pos_ > start &&
             (q_[pos_ - 1] == 'e' || q_[pos_ - 1] == 'E')))) {
      ++pos_;
    }
    const std::string text(q_.substr(start, pos_ - start));
    auto e = std::make_unique<Expr>();
    auto r = std::from_chars(text.data(), text.data() + text.size(), e->number);
    if (r.ec == std::errc() && r.ptr == text.data() + text.size()) return e;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      uint64_t v = 0;
      auto h = std::from_chars(text.data() + 2, text.data() + text.size(), v, 16);
      if (h.ec == std::errc() && h.ptr == text.data() + text.size()) {
        e->number = static_cast<double>(v);
        return e;
      }
    }
    // A duration where a number may stand (Prometheus 2.42 reads none): refused.
    pos_ = start;
    return Error("bad number or duration syntax: \"" + text + "\"");
  }

  Result<std::string> String() {
    const char quote = q_[pos_++];
    std::string out;
    while (pos_ < q_.size() && q_[pos_] != quote) {
      char ch = q_[pos_++];
      if (ch == '\\' && quote != '`' && pos_ < q_.size()) {
        char e = q_[pos_++];
        switch (e) {
          case 'n':
            ch = '\n';
            break;
          case 't':
            ch = '\t';
            break;
          case '\\':
            ch = '\\';
            break;
          case '"':
            ch = '"';
            break;
          case '\'':
            ch = '\'';
            break;
          default:
            return Error("unknown escape sequence '\\" + std::string(1, e) + "'");
        }
      }
      out.push_back(ch);
    }
    if (pos_ >= q_.size()) return Error("unterminated quoted string");
    ++pos_;
    return out;
  }

  Result<std::vector<std::string>> LabelList() {
    if (!Accept("(")) return Error("expected '(' before the label list");
    std::vector<std::string> labels;
    if (Accept(")")) return labels;
    do {
      std::string l = Name();
      if (l.empty()) return Error("expected a label name");
      labels.push_back(std::move(l));
    } while (Accept(","));
    if (!Accept(")")) return Error("expected ')' after the label list");
    return labels;
  }

  Result<ExprPtr> Selector(const std::string& name) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kVectorSelector;
    if (!name.empty()) e->matchers.push_back({"__name__", LabelMatcher::Op::kEqual, name});
    if (Accept("{")) {
      while (!Accept("}")) {
        LabelMatcher m;
        m.name = Name();
        if (m.name.empty()) return Error("expected a label matcher");
        Skip();
        if (Accept("=~"))
          m.op = LabelMatcher::Op::kRegex;
        else if (Accept("!~"))
          m.op = LabelMatcher::Op::kNotRegex;
        else if (Accept("!="))
          m.op = LabelMatcher::Op::kNotEqual;
        else if (Accept("="))
          m.op = LabelMatcher::Op::kEqual;
        else
          return Error("expected a label matching operator");
        Skip();
        if (pos_ >= q_.size() || (q_[pos_] != '"' && q_[pos_] != '\'' && q_[pos_] != '`')) {
          return Error("expected a string after the label matcher");
        }
        Result<std::string> v = String();
        if (!v.ok()) return v.status();
        m.value = std::move(*v);
        e->matchers.push_back(std::move(m));
        if (!Accept(",") && !Peek("}")) return Error("expected ',' or '}' in the label matchers");
      }
    }
    // Prometheus refuses a selector that matches every series (all matchers match "").
    bool empty_only = true;
    for (const LabelMatcher& m : e->matchers) {
      if (!(m.op == LabelMatcher::Op::kEqual && m.value.empty()) &&
          m.op != LabelMatcher::Op::kNotRegex &&
          !(m.op == LabelMatcher::Op::kRegex && (m.value == ".*" || m.value.empty()))) {
        empty_only = false;
      }
    }
    if (empty_only) return Error("vector selector must contain at least one non-empty matcher");
    return e;
  }

  Result<ExprPtr> Call(const std::string& name) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kCall;
    e->text = name;
    Accept("(");
    if (!Accept(")")) {
      do {
        Result<ExprPtr> arg = Expression(0);
        if (!arg.ok()) return arg;
        e->args.push_back(std::move(*arg));
      } while (Accept(","));
      if (!Accept(")")) return Error("expected ')' after the arguments of " + name + "()");
    }
    return e;
  }

  Result<ExprPtr> Aggregate(const std::string& op) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kAggregate;
    e->text = op;
    auto grouping = [&]() -> Status {
      const std::string word = PeekName();
      if (word != "by" && word != "without") return Status::Ok();
      Name();
      e->without = word == "without";
      Result<std::vector<std::string>> labels = LabelList();
      if (!labels.ok()) return labels.status();
      e->grouping = std::move(*labels);
      return Status::Ok();
    };
    TW_RETURN_IF_ERROR(grouping());
    if (!Accept("(")) return Error("expected '(' after " + op);
    do {
      Result<ExprPtr> arg = Expression(0);
      if (!arg.ok()) return arg;
      e->args.push_back(std::move(*arg));
    } while (Accept(","));
    if (!Accept(")")) return Error("expected ')' after the arguments of " + op);
    if (e->grouping.empty() && !e->without) TW_RETURN_IF_ERROR(grouping());
    const size_t want = op == "topk" || op == "bottomk" ? 2 : 1;
    if (e->args.size() != want) {
      return Error("wrong number of arguments for aggregate expression provided, expected " +
                   std::to_string(want) + ", got " + std::to_string(e->args.size()));
    }
    return e;
  }

  std::string_view q_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<int64_t> ParsePromDuration(std::string_view text) {
  static const std::pair<std::string_view, int64_t> kUnits[] = {
      {"ms", 1},         {"s", 1000},        {"m", 60'000},        {"h", 3'600'000},
      {"d", 86'400'000}, {"w", 604'800'000}, {"y", 31'536'000'000}};
  int64_t total = 0;
  size_t i = 0;
  if (text.empty()) return Status::InvalidArgument("not a valid duration string: \"\"");
  while (i < text.size()) {
    size_t digits = i;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    int64_t n = 0;
    if (digits == i ||
        std::from_chars(text.data() + i, text.data() + digits, n).ec != std::errc()) {
      return Status::InvalidArgument("not a valid duration string: \"" + std::string(text) + "\"");
    }
    int64_t per = 0;
    size_t unit_len = 0;
    for (const auto& [unit, ms] : kUnits) {
      if (text.substr(digits, unit.size()) == unit && unit.size() > unit_len) {
        // "ms" before "m": the longest unit that matches.
        per = ms;
        unit_len = unit.size();
      }
    }
    if (per == 0 || n > (std::numeric_limits<int64_t>::max() - total) / per) {
      return Status::InvalidArgument("not a valid duration string: \"" + std::string(text) + "\"");
    }
    total += n * per;
    i = digits + unit_len;
  }
  return total;
}

Result<ExprPtr> ParsePromQL(std::string_view query) { return Parser(query).Parse(); }

}  // namespace trainwatch::prom
