#include "influx/influxql_conditions.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace trainwatch::influx {
namespace {

using ql::Expr;

// A time operand: 1700000000000ms, a nanosecond integer, an RFC 3339 string, now(), and sums and
// differences of those with durations.
Result<int64_t> TimeValue(const Expr& e, int64_t now) {
  switch (e.kind) {
    case Expr::Kind::kDuration:
    case Expr::Kind::kInteger:
      return e.integer;
    case Expr::Kind::kNumber:
      return static_cast<int64_t>(e.number);
    case Expr::Kind::kString: {
      if (std::optional<int64_t> t = ParseRfc3339(e.text)) return *t;
      return Status::InvalidArgument("invalid time '" + e.text + "'");
    }
    case Expr::Kind::kCall:
      if (e.text == "now" && e.args.empty()) return now;
      break;
    case Expr::Kind::kBinary:
      if (e.op == "+" || e.op == "-") {
        Result<int64_t> a = TimeValue(*e.lhs, now);
        if (!a.ok()) return a;
        Result<int64_t> b = TimeValue(*e.rhs, now);
        if (!b.ok()) return b;
        return e.op == "+" ? *a + *b : *a - *b;
      }
      break;
    default:
      break;
  }
  return Status::InvalidArgument("invalid time expression");
}

bool IsTimeRef(const Expr& e) { return e.kind == Expr::Kind::kVarRef && e.text == "time"; }

bool MentionsTime(const Expr& e) {
  if (IsTimeRef(e)) return true;
  return (e.lhs && MentionsTime(*e.lhs)) || (e.rhs && MentionsTime(*e.rhs));
}

}  // namespace

std::optional<int64_t> ParseRfc3339(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    // A date alone is midnight UTC.
    if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &consumed) != 3 ||
        static_cast<size_t>(consumed) != text.size()) {
      return std::nullopt;
    }
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t ns = static_cast<int64_t>(timegm(&tm)) * kSecondNs;
  size_t i = static_cast<size_t>(consumed);
  if (i < text.size() && text[i] == '.') {
    int64_t scale = kSecondNs / 10;
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
         ++i, scale /= 10) {
      ns += (text[i] - '0') * scale;
    }
  }
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i + 6 == text.size() && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':') {
    int h = std::atoi(text.substr(i + 1, 2).c_str()), m = std::atoi(text.substr(i + 4, 2).c_str());
    ns -= (text[i] == '+' ? 1 : -1) * (h * 3600LL + m * 60LL) * kSecondNs;
    i += 6;
  }
  if (i != text.size()) return std::nullopt;
  return ns;
}

Status SplitConditions(const Expr* e, int64_t now, Conditions* out) {
  if (e == nullptr) return Status::Ok();
  if (e->kind == Expr::Kind::kBinary && e->op == "AND") {
    TW_RETURN_IF_ERROR(SplitConditions(e->lhs.get(), now, out));
    return SplitConditions(e->rhs.get(), now, out);
  }
  if (e->kind == Expr::Kind::kBinary && (IsTimeRef(*e->lhs) || IsTimeRef(*e->rhs))) {
    const bool time_left = IsTimeRef(*e->lhs);
    Result<int64_t> t = TimeValue(time_left ? *e->rhs : *e->lhs, now);
    if (!t.ok()) return t.status();
    std::string op = e->op;
    if (!time_left)
      op = op == "<" ? ">" : op == ">" ? "<" : op == "<=" ? ">=" : op == ">=" ? "<=" : op;
    if (op == ">")
      out->from = std::max(out->from, *t + 1);
    else if (op == ">=")
      out->from = std::max(out->from, *t);
    else if (op == "<")
      out->to = std::min(out->to, *t - 1);
    else if (op == "<=")
      out->to = std::min(out->to, *t);
    else if (op == "=") {
      out->from = std::max(out->from, *t);
      out->to = std::min(out->to, *t);
    } else {
      return Status::InvalidArgument("invalid time comparison operator: " + e->op);
    }
    return Status::Ok();
  }
  if (MentionsTime(*e))
    return Status::InvalidArgument("invalid time condition: time may only be ANDed");
  out->tags.push_back(e);
  return Status::Ok();
}

Result<bool> Matches(const Expr& e, const FieldSeries& s) {
  if (e.kind == Expr::Kind::kBoolean) return e.boolean;
  if (e.kind != Expr::Kind::kBinary) return Status::InvalidArgument("invalid condition");
  if (e.op == "AND" || e.op == "OR") {
    Result<bool> a = Matches(*e.lhs, s);
    if (!a.ok()) return a;
    if (e.op == "AND" && !*a) return false;
    if (e.op == "OR" && *a) return true;
    return Matches(*e.rhs, s);
  }
  const Expr* ref = e.lhs.get();
  const Expr* operand = e.rhs.get();
  if (ref->kind != Expr::Kind::kVarRef) std::swap(ref, operand);
  if (ref->kind != Expr::Kind::kVarRef)
    return Status::InvalidArgument("invalid condition: no tag named");
  if (ref->text == s.field || (ref->cast == "field")) {
    return Status::InvalidArgument("conditions on field values are not supported: " + ref->text);
  }
  auto tag = s.tags.find(ref->text);
  const std::string value = tag == s.tags.end() ? "" : tag->second;
  if (e.op == "=~" || e.op == "!~") {
    if (operand->kind != Expr::Kind::kRegex)
      return Status::InvalidArgument("=~ and !~ take a /regex/");
    RE2 re(operand->text, RE2::Quiet);
    if (!re.ok())
      return Status::InvalidArgument("invalid regex /" + operand->text + "/: " + re.error());
    return RE2::PartialMatch(value, re) == (e.op == "=~");
  }
  if (operand->kind != Expr::Kind::kString && operand->kind != Expr::Kind::kVarRef) {
    return Status::InvalidArgument("a tag compares with a 'string': " + ref->text);
  }
  if (e.op == "=") return value == operand->text;
  if (e.op == "!=") return value != operand->text;
  return Status::InvalidArgument("invalid tag comparison operator: " + e.op);
}

}  // namespace trainwatch::influx
