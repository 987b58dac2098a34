#include "influx/influxql_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <string>

namespace trainwatch::influx::ql {
namespace {

struct Token {
  enum class Type { kEnd, kIdent, kString, kNumber, kInteger, kDuration, kRegex, kOp, kIllegal };
  Type type = Type::kEnd;
  std::string text;     // identifier (unquoted), string or regex contents, operator, number text
  bool quoted = false;  // a "double-quoted" identifier: never a keyword
  size_t pos = 0;       // offset in the query
};

int64_t UnitNanos(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "u" || unit == "\xc2\xb5") return 1000;
  if (unit == "ms") return 1000 * 1000;
  if (unit == "s") return 1000LL * 1000 * 1000;
  if (unit == "m") return 60LL * 1000 * 1000 * 1000;
  if (unit == "h") return 3600LL * 1000 * 1000 * 1000;
  if (unit == "d") return 86400LL * 1000 * 1000 * 1000;
  if (unit == "w") return 7 * 86400LL * 1000 * 1000 * 1000;
  return 0;
}

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Lexer {
 public:
  explicit Lexer(std::string_view q) : q_(q) {}

  Token Next() {
    while (pos_ < q_.size() && std::isspace(static_cast<unsigned char>(q_[pos_]))) ++pos_;
    Token t;
    t.pos = pos_;
    if (pos_ >= q_.size()) return t;
    const char c = q_[pos_];
    if (IsIdentStart(c)) {
      while (pos_ < q_.size() && IsIdentChar(q_[pos_])) ++pos_;
      t.type = Token::Type::kIdent;
      t.text = std::string(q_.substr(t.pos, pos_ - t.pos));
      return t;
    }
    if (c == '"' || c == '\'') return Quoted(c, t);
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < q_.size() &&
         std::isdigit(static_cast<unsigned char>(q_[pos_ + 1])))) {
      return Number(t);
    }
    for (std::string_view op : {"!=", "<>", "<=", ">=", "=~", "!~", "::"}) {
      if (q_.substr(pos_, 2) == op) {
        pos_ += 2;
        t.type = Token::Type::kOp;
        t.text = op == "<>" ? "!=" : std::string(op);
        return t;
      }
    }
    if (std::string_view("+-*/%=<>(),;.").find(c) != std::string_view::npos) {
      ++pos_;
      t.type = Token::Type::kOp;
      t.text = std::string(1, c);
      return t;
    }
    ++pos_;
    t.type = Token::Type::kIllegal;
    t.text = std::string(1, c);
    return t;
  }

  // A /regex/ starting at `pos` (the '/' the lexer took for division): \/ stands for '/'.
  Token Regex(size_t pos) {
    pos_ = pos + 1;
    Token t;
    t.pos = pos;
    std::string re;
    while (pos_ < q_.size() && q_[pos_] != '/') {
      if (q_[pos_] == '\\' && pos_ + 1 < q_.size() && q_[pos_ + 1] == '/') ++pos_;
      re.push_back(q_[pos_++]);
    }
    if (pos_ >= q_.size()) {
      t.type = Token::Type::kIllegal;
      t.text = "unterminated regex";
      return t;
    }
    ++pos_;
    t.type = Token::Type::kRegex;
    t.text = std::move(re);
    return t;
  }

 private:
  // 'string' or "identifier"; a backslash escapes the quote and itself (\n and \t too in strings).
  Token Quoted(char quote, Token t) {
    ++pos_;
    std::string out;
    while (pos_ < q_.size() && q_[pos_] != quote) {
      char ch = q_[pos_];
      if (ch == '\\' && pos_ + 1 < q_.size()) {
        char e = q_[++pos_];
        ch = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        if (e != quote && e != '\\' && e != 'n' && e != 't') out.push_back('\\');
      }
      out.push_back(ch);
      ++pos_;
    }
    if (pos_ >= q_.size()) {
      t.type = Token::Type::kIllegal;
      t.text = quote == '"' ? "unterminated identifier" : "unterminated string";
      return t;
    }
    ++pos_;
    t.type = quote == '"' ? Token::Type::kIdent : Token::Type::kString;
    t.quoted = quote == '"';
    t.text = std::move(out);
    return t;
  }

  // 15, 1.5, 1e3, or a duration 6h / 1h30m / 1700000000000ms.
  Token Number(Token t) {
    while (pos_ < q_.size() &&
           (std::isdigit(static_cast<unsigned char>(q_[pos_])) || q_[pos_] == '.'))
      ++pos_;
    if (pos_ < q_.size() && (q_[pos_] == 'e' || q_[pos_] == 'E') && pos_ + 1 < q_.size() &&
        (std::isdigit(static_cast<unsigned char>(q_[pos_ + 1])) || q_[pos_ + 1] == '-' ||
         q_[pos_ + 1] == '+')) {
      pos_ += 2;
      while (pos_ < q_.size() && std::isdigit(static_cast<unsigned char>(q_[pos_]))) ++pos_;
    }
    std::string_view number = q_.substr(t.pos, pos_ - t.pos);
    if (pos_ < q_.size() &&
        (std::isalpha(static_cast<unsigned char>(q_[pos_])) || q_[pos_] == '\xc2')) {
      // A duration: digits and units, repeated.
      while (pos_ < q_.size() &&
             (IsIdentChar(q_[pos_]) || q_[pos_] == '\xc2' || q_[pos_] == '\xb5'))
        ++pos_;
      t.type = Token::Type::kDuration;
      t.text = std::string(q_.substr(t.pos, pos_ - t.pos));
      return t;
    }
    t.type = number.find_first_of(".eE") == std::string_view::npos ? Token::Type::kInteger
                                                                   : Token::Type::kNumber;
    t.text = std::string(number);
    return t;
  }

  std::string_view q_;
  size_t pos_ = 0;
};

bool IsKeyword(const Token& t, std::string_view word) {
  if (t.type != Token::Type::kIdent || t.quoted || t.text.size() != word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(t.text[i])) != word[i]) return false;
  }
  return true;
}

// Words that end an expression or a clause: never a bare identifier.
constexpr std::string_view kReserved[] = {"select", "from",   "where",  "group",   "by",   "order",
                                          "limit",  "offset", "slimit", "soffset", "fill", "as",
                                          "and",    "or",     "show",   "with",    "on",   "in",
                                          "asc",    "desc",   "tz",     "create",  "into"};

bool IsReserved(const Token& t) {
  for (std::string_view w : kReserved) {
    if (IsKeyword(t, w)) return true;
  }
  return false;
}

// A number literal as a double; false for one beyond a double or malformed ("1.2.3").
bool ToDouble(const std::string& text, double* out) {
  auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

// What InfluxDB says a statement may start with.
constexpr const char* kStatementStarts =
    "SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL";

// How deep parentheses and calls may nest: a query is typed by a person or a dashboard, never
// thousands of levels deep, and the parser recurses once per level.
constexpr int kMaxDepth = 64;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class Parser {
 public:
  explicit Parser(std::string_view q) : q_(q), lexer_(q) { Advance(); }

  Result<std::vector<Statement>> Statements() {
    std::vector<Statement> out;
    while (true) {
      while (IsOp(";")) Advance();
      if (tok_.type == Token::Type::kEnd) break;
      Result<Statement> s = OneStatement();
      if (!s.ok()) return s.status();
      out.push_back(std::move(*s));
      if (tok_.type != Token::Type::kEnd && !IsOp(";")) return Expected(";");
    }
    return out;  // none for a query of only ';' (InfluxDB answers it with nothing)
  }

 private:
  void Advance() { tok_ = lexer_.Next(); }
  bool IsOp(std::string_view op) const { return tok_.type == Token::Type::kOp && tok_.text == op; }
  bool Accept(std::string_view word) {
    if (!IsKeyword(tok_, word)) return false;
    Advance();
    return true;
  }
  bool AcceptOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Advance();
    return true;
  }

  // "found X, expected Y at line L, char C", as InfluxDB says it.
  Status Expected(std::string_view what) const {
    std::string found;
    switch (tok_.type) {
      case Token::Type::kEnd:
        found = "EOF";
        break;
      case Token::Type::kString:
        found = "'" + tok_.text + "'";
        break;
      case Token::Type::kIllegal:
        found = tok_.text;
        break;
      default:
        found = IsReserved(tok_) ? Upper(tok_.text) : tok_.text;
    }
    return Status::InvalidArgument("found " + found + ", expected " + std::string(what) + " " +
                                   Where());
  }

  // "at line L, char C" of the current token (both 1-based). InfluxDB's scanner places the end
  // of a query one character further when the query does not end in a blank: so does this.
  std::string Where() const {
    size_t line = 1, column = 1;
    if (tok_.type == Token::Type::kEnd && !q_.empty() &&
        !std::isspace(static_cast<unsigned char>(q_.back()))) {
      ++column;
    }
    for (size_t i = 0; i < tok_.pos && i < q_.size(); ++i) {
      if (q_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "at line " + std::to_string(line) + ", char " + std::to_string(column);
  }
  static std::string Upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    return s;
  }

  Status ExpectKeyword(std::string_view word) {
    if (Accept(word)) return Status::Ok();
    return Expected(Upper(std::string(word)));
  }

  Result<Statement> OneStatement() {
    if (Accept("select")) {
      Result<SelectStatement> s = Select();
      if (!s.ok()) return s.status();
      return Statement(std::move(*s));
    }
    if (Accept("show")) {
      Result<ShowStatement> s = Show();
      if (!s.ok()) return s.status();
      return Statement(std::move(*s));
    }
    if (Accept("create")) {
      TW_RETURN_IF_ERROR(ExpectKeyword("database"));
      Result<std::string> name = Identifier();
      if (!name.ok()) return name.status();
      return Statement(CreateDatabaseStatement{std::move(*name)});
    }
    // InfluxDB's list, though of these only SELECT, SHOW and CREATE DATABASE are served.
    return Expected(kStatementStarts);
  }

  Result<std::string> Identifier() {
    if (tok_.type != Token::Type::kIdent || (!tok_.quoted && IsReserved(tok_)))
      return Expected("identifier");
    std::string name = tok_.text;
    Advance();
    return name;
  }

  // A whole non-negative integer (LIMIT, OFFSET, ...).
  Result<int64_t> Integer() {
    int64_t v = 0;
    if (tok_.type != Token::Type::kInteger ||
        std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), v).ec !=
            std::errc()) {
      return Expected("integer");
    }
    Advance();
    return v;
  }

  Result<std::string> RegexHere() {
    if (!IsOp("/")) return Expected("regex");
    tok_ = lexer_.Regex(tok_.pos);
    if (tok_.type != Token::Type::kRegex) return Expected("regex");
    std::string re = tok_.text;
    Advance();
    return re;
  }

  Result<SelectStatement> Select() {
    SelectStatement s;
    do {
      Field f;
      Result<ExprPtr> e = IsOp("*") ? Wildcard() : Expression();
      if (!e.ok()) return e.status();
      f.expr = std::move(*e);
      if (Accept("as")) {
        Result<std::string> alias = Identifier();
        if (!alias.ok()) return alias.status();
        f.alias = std::move(*alias);
      }
      s.fields.push_back(std::move(f));
    } while (AcceptOp(","));
    TW_RETURN_IF_ERROR(ExpectKeyword("from"));
    Result<std::vector<Source>> sources = Sources();
    if (!sources.ok()) return sources.status();
    s.sources = std::move(*sources);
    if (Accept("where")) {
      Result<ExprPtr> c = Expression();
      if (!c.ok()) return c.status();
      s.condition = std::move(*c);
    }
    if (Accept("group")) {
      TW_RETURN_IF_ERROR(ExpectKeyword("by"));
      TW_RETURN_IF_ERROR(GroupBy(&s));
    }
    if (Accept("fill")) TW_RETURN_IF_ERROR(FillOption(&s));
    if (Accept("order")) {
      TW_RETURN_IF_ERROR(ExpectKeyword("by"));
      if (!IsKeyword(tok_, "time")) return Expected("time");
      Advance();
      if (Accept("desc")) {
        s.descending = true;
      } else {
        (void)Accept("asc");
      }
    }
    for (auto [word, target] : {std::pair{"limit", &s.limit}, std::pair{"offset", &s.offset},
                                std::pair{"slimit", &s.slimit}, std::pair{"soffset", &s.soffset}}) {
      if (Accept(word)) {
        Result<int64_t> n = Integer();
        if (!n.ok()) return n.status();
        *target = *n;
      }
    }
    if (Accept("tz")) {
      if (!AcceptOp("(") || tok_.type != Token::Type::kString) return Expected("string");
      s.tz = tok_.text;
      Advance();
      if (!AcceptOp(")")) return Expected(")");
    }
    return s;
  }

  Result<ExprPtr> Wildcard() {
    Advance();  // *
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kWildcard;
    if (AcceptOp("::")) {
      Result<std::string> type = Identifier();
      if (!type.ok()) return type.status();
      e->cast = Lower(*type);
    }
    return e;
  }

  Result<std::vector<Source>> Sources() {
    std::vector<Source> out;
    do {
      Source src;
      if (IsOp("/")) {
        Result<std::string> re = RegexHere();
        if (!re.ok()) return re.status();
        src.regex = std::move(*re);
      } else {
        // name, rp.name, db.rp.name or db..name
        std::vector<std::string> parts;
        Result<std::string> first = Identifier();
        if (!first.ok()) return first.status();
        parts.push_back(std::move(*first));
        while (AcceptOp(".")) {
          if (IsOp(".")) {
            parts.emplace_back();  // db..name: the default retention policy
            continue;
          }
          if (IsOp("/") && parts.size() >= 1) {
            Result<std::string> re = RegexHere();
            if (!re.ok()) return re.status();
            src.regex = std::move(*re);
            break;
          }
          Result<std::string> part = Identifier();
          if (!part.ok()) return part.status();
          parts.push_back(std::move(*part));
        }
        if (parts.size() > 3 || (src.regex && parts.size() > 2))
          return Expected("at most db.rp.measurement");
        if (src.regex) {
          src.database = parts.size() == 2 ? parts[0] : "";
          src.retention_policy = parts.back();
        } else {
          src.measurement = parts.back();
          if (parts.size() >= 2) src.retention_policy = parts[parts.size() - 2];
          if (parts.size() == 3) src.database = parts[0];
        }
      }
      out.push_back(std::move(src));
    } while (AcceptOp(","));
    return out;
  }

  Status GroupBy(SelectStatement* s) {
    do {
      if (IsKeyword(tok_, "time") && !tok_.quoted) {
        Advance();
        if (!AcceptOp("(")) return Expected("(");
        Result<int64_t> interval = DurationHere();
        if (!interval.ok()) return interval.status();
        if (*interval <= 0)
          return Status::InvalidArgument("group by time interval must be positive " + Where());
        s->interval_ns = *interval;
        if (AcceptOp(",")) {
          bool negative = AcceptOp("-");
          Result<int64_t> offset = DurationHere();
          if (!offset.ok()) return offset.status();
          s->offset_ns = negative ? -*offset : *offset;
        }
        if (!AcceptOp(")")) return Expected(")");
      } else if (AcceptOp("*")) {
        s->group_by_all_tags = true;
      } else if (IsOp("/")) {
        Result<std::string> re = RegexHere();
        if (!re.ok()) return re.status();
        s->group_by_tag_regexes.push_back(std::move(*re));
      } else {
        Result<std::string> tag = Identifier();
        if (!tag.ok()) return tag.status();
        if (AcceptOp("::")) {
          Result<std::string> type = Identifier();  // "host"::tag
          if (!type.ok()) return type.status();
        }
        s->group_by_tags.push_back(std::move(*tag));
      }
    } while (AcceptOp(","));
    return Status::Ok();
  }

  Result<int64_t> DurationHere() {
    if (tok_.type != Token::Type::kDuration) return Expected("duration");
    Result<int64_t> d = ParseInfluxDuration(tok_.text);
    if (!d.ok()) return Expected("duration");
    Advance();
    return d;
  }

  Status FillOption(SelectStatement* s) {
    if (!AcceptOp("(")) return Expected("(");
    bool negative = AcceptOp("-");
    if (tok_.type == Token::Type::kInteger || tok_.type == Token::Type::kNumber) {
      s->fill = Fill::kNumber;
      if (!ToDouble(tok_.text, &s->fill_value)) return Expected("number");
      if (negative) s->fill_value = -s->fill_value;
    } else if (!negative && IsKeyword(tok_, "null")) {
      s->fill = Fill::kNull;
    } else if (!negative && IsKeyword(tok_, "none")) {
      s->fill = Fill::kNone;
    } else if (!negative && IsKeyword(tok_, "previous")) {
      s->fill = Fill::kPrevious;
    } else if (!negative && IsKeyword(tok_, "linear")) {
      s->fill = Fill::kLinear;
    } else {
      return Expected("null, none, previous, linear or a number");
    }
    Advance();
    if (!AcceptOp(")")) return Expected(")");
    return Status::Ok();
  }

  Result<ShowStatement> Show() {
    ShowStatement s;
    if (Accept("databases")) {
      s.what = ShowStatement::What::kDatabases;
      return s;
    }
    if (Accept("retention")) {
      TW_RETURN_IF_ERROR(ExpectKeyword("policies"));
      s.what = ShowStatement::What::kRetentionPolicies;
      TW_RETURN_IF_ERROR(On(&s));
      return s;
    }
    if (Accept("measurements")) {
      s.what = ShowStatement::What::kMeasurements;
      TW_RETURN_IF_ERROR(On(&s));
      if (Accept("with")) {
        TW_RETURN_IF_ERROR(ExpectKeyword("measurement"));
        if (!(IsOp("=") || IsOp("!=") || IsOp("=~") || IsOp("!~")))
          return Expected("=, !=, =~, !~");
        s.measurement_op = tok_.text;
        Advance();
        auto operand = std::make_unique<Expr>();
        if (s.measurement_op.back() == '~') {
          Result<std::string> re = RegexHere();
          if (!re.ok()) return re.status();
          operand->kind = Expr::Kind::kRegex;
          operand->text = std::move(*re);
        } else {
          Result<std::string> name = Identifier();
          if (!name.ok()) return name.status();
          operand->kind = Expr::Kind::kVarRef;
          operand->text = std::move(*name);
        }
        s.measurement_operand = std::move(operand);
      }
      TW_RETURN_IF_ERROR(WhereLimitOffset(&s));
      return s;
    }
    if (Accept("field")) {
      TW_RETURN_IF_ERROR(ExpectKeyword("keys"));
      s.what = ShowStatement::What::kFieldKeys;
      TW_RETURN_IF_ERROR(On(&s));
      TW_RETURN_IF_ERROR(From(&s));
      TW_RETURN_IF_ERROR(WhereLimitOffset(&s));
      return s;
    }
    if (Accept("series")) {
      s.what = ShowStatement::What::kSeries;
      TW_RETURN_IF_ERROR(On(&s));
      TW_RETURN_IF_ERROR(From(&s));
      TW_RETURN_IF_ERROR(WhereLimitOffset(&s));
      return s;
    }
    if (Accept("tag")) {
      if (Accept("keys")) {
        s.what = ShowStatement::What::kTagKeys;
        TW_RETURN_IF_ERROR(On(&s));
        TW_RETURN_IF_ERROR(From(&s));
        TW_RETURN_IF_ERROR(WhereLimitOffset(&s));
        return s;
      }
      TW_RETURN_IF_ERROR(ExpectKeyword("values"));
      s.what = ShowStatement::What::kTagValues;
      TW_RETURN_IF_ERROR(On(&s));
      TW_RETURN_IF_ERROR(From(&s));
      TW_RETURN_IF_ERROR(ExpectKeyword("with"));
      TW_RETURN_IF_ERROR(ExpectKeyword("key"));
      TW_RETURN_IF_ERROR(TagKeyOperand(&s));
      TW_RETURN_IF_ERROR(WhereLimitOffset(&s));
      return s;
    }
    return Expected(
        "DATABASES, MEASUREMENTS, TAG KEYS, TAG VALUES, FIELD KEYS, RETENTION POLICIES, SERIES");
  }

  Status On(ShowStatement* s) {
    if (!Accept("on")) return Status::Ok();
    Result<std::string> db = Identifier();
    if (!db.ok()) return db.status();
    s->database = std::move(*db);
    return Status::Ok();
  }

  Status From(ShowStatement* s) {
    if (!Accept("from")) return Status::Ok();
    Result<std::vector<Source>> sources = Sources();
    if (!sources.ok()) return sources.status();
    s->sources = std::move(*sources);
    return Status::Ok();
  }

  Status TagKeyOperand(ShowStatement* s) {
    if (Accept("in")) {
      s->key_op = "IN";
      if (!AcceptOp("(")) return Expected("(");
      do {
        Result<std::string> key = Identifier();
        if (!key.ok()) return key.status();
        s->keys.push_back(std::move(*key));
      } while (AcceptOp(","));
      if (!AcceptOp(")")) return Expected(")");
      return Status::Ok();
    }
    if (!(IsOp("=") || IsOp("!=") || IsOp("=~") || IsOp("!~")))
      return Expected("=, !=, =~, !~, IN");
    s->key_op = tok_.text;
    Advance();
    if (s->key_op.back() == '~') {
      Result<std::string> re = RegexHere();
      if (!re.ok()) return re.status();
      s->key_regex = std::move(*re);
      return Status::Ok();
    }
    Result<std::string> key = Identifier();
    if (!key.ok()) return key.status();
    s->keys.push_back(std::move(*key));
    return Status::Ok();
  }

  Status WhereLimitOffset(ShowStatement* s) {
    if (Accept("where")) {
      Result<ExprPtr> c = Expression();
      if (!c.ok()) return c.status();
      s->condition = std::move(*c);
    }
    for (auto [word, target] : {std::pair{"limit", &s->limit}, std::pair{"offset", &s->offset}}) {
      if (Accept(word)) {
        Result<int64_t> n = Integer();
        if (!n.ok()) return n.status();
        *target = *n;
      }
    }
    return Status::Ok();
  }

  // Expressions, loosest first: OR, AND, comparisons, + -, * / %, unary minus, operands.
  Result<ExprPtr> Expression() {
    if (depth_ >= kMaxDepth) {
      return Status::InvalidArgument("expression nested deeper than " + std::to_string(kMaxDepth) +
                                     " levels " + Where());
    }
    ++depth_;
    Result<ExprPtr> e = Or();
    --depth_;
    return e;
  }

  static ExprPtr Binary(std::string op, ExprPtr lhs, ExprPtr rhs) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kBinary;
    e->op = std::move(op);
    e->lhs = std::move(lhs);
    e->rhs = std::move(rhs);
    return e;
  }

  Result<ExprPtr> Or() {
    Result<ExprPtr> lhs = And();
    while (lhs.ok() && Accept("or")) {
      Result<ExprPtr> rhs = And();
      if (!rhs.ok()) return rhs.status();
      lhs = Binary("OR", std::move(*lhs), std::move(*rhs));
    }
    return lhs;
  }

  Result<ExprPtr> And() {
    Result<ExprPtr> lhs = Comparison();
    while (lhs.ok() && Accept("and")) {
      Result<ExprPtr> rhs = Comparison();
      if (!rhs.ok()) return rhs.status();
      lhs = Binary("AND", std::move(*lhs), std::move(*rhs));
    }
    return lhs;
  }

  Result<ExprPtr> Comparison() {
    Result<ExprPtr> lhs = Additive();
    if (!lhs.ok()) return lhs;
    for (std::string_view op : {"=~", "!~", "=", "!=", "<=", ">=", "<", ">"}) {
      if (!IsOp(op)) continue;
      Advance();
      if (op == "=~" || op == "!~") {
        Result<std::string> re = RegexHere();
        if (!re.ok()) return re.status();
        auto rhs = std::make_unique<Expr>();
        rhs->kind = Expr::Kind::kRegex;
        rhs->text = std::move(*re);
        return Binary(std::string(op), std::move(*lhs), std::move(rhs));
      }
      Result<ExprPtr> rhs = Additive();
      if (!rhs.ok()) return rhs.status();
      return Binary(std::string(op), std::move(*lhs), std::move(*rhs));
    }
    return lhs;
  }

  Result<ExprPtr> Additive() {
    Result<ExprPtr> lhs = Multiplicative();
    while (lhs.ok() && (IsOp("+") || IsOp("-"))) {
      std::string op = tok_.text;
      Advance();
      Result<ExprPtr> rhs = Multiplicative();
      if (!rhs.ok()) return rhs.status();
      lhs = Binary(op, std::move(*lhs), std::move(*rhs));
    }
    return lhs;
  }

  Result<ExprPtr> Multiplicative() {
    Result<ExprPtr> lhs = Unary();
    while (lhs.ok() && (IsOp("*") || IsOp("/") || IsOp("%"))) {
      std::string op = tok_.text;
      Advance();
      Result<ExprPtr> rhs = Unary();
      if (!rhs.ok()) return rhs.status();
      lhs = Binary(op, std::move(*lhs), std::move(*rhs));
    }
    return lhs;
  }

  Result<ExprPtr> Unary() {
    if (!AcceptOp("-")) return Operand();
    Result<ExprPtr> e = Operand();
    if (!e.ok()) return e;
    Expr& x = **e;
    if (x.kind == Expr::Kind::kNumber) {
      x.number = -x.number;
    } else if (x.kind == Expr::Kind::kInteger || x.kind == Expr::Kind::kDuration) {
      x.integer = -x.integer;
    } else {
      auto zero = std::make_unique<Expr>();
      zero->kind = Expr::Kind::kInteger;
      return Binary("-", std::move(zero), std::move(*e));
    }
    return e;
  }

  Result<ExprPtr> Operand() {
    auto e = std::make_unique<Expr>();
    switch (tok_.type) {
      case Token::Type::kInteger:
        e->kind = Expr::Kind::kInteger;
        if (std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), e->integer).ec !=
            std::errc()) {
          e->kind = Expr::Kind::kNumber;  // beyond int64: a float, as InfluxDB reads it
          if (!ToDouble(tok_.text, &e->number)) return Expected("number");
        }
        Advance();
        return e;
      case Token::Type::kNumber:
        e->kind = Expr::Kind::kNumber;
        if (!ToDouble(tok_.text, &e->number)) return Expected("number");
        Advance();
        return e;
      case Token::Type::kDuration: {
        Result<int64_t> d = DurationHere();
        if (!d.ok()) return d.status();
        e->kind = Expr::Kind::kDuration;
        e->integer = *d;
        return e;
      }
      case Token::Type::kString:
        e->kind = Expr::Kind::kString;
        e->text = tok_.text;
        Advance();
        return e;
      case Token::Type::kIdent:
        return IdentOperand(std::move(e));
      case Token::Type::kOp:
        if (AcceptOp("(")) {
          Result<ExprPtr> inner = Expression();
          if (!inner.ok()) return inner;
          if (!AcceptOp(")")) return Expected(")");
          return inner;
        }
        if (IsOp("/")) {
          Result<std::string> re = RegexHere();
          if (!re.ok()) return re.status();
          e->kind = Expr::Kind::kRegex;
          e->text = std::move(*re);
          return e;
        }
        break;
      default:
        break;
    }
    return Expected("identifier, string, number, bool");
  }

  Result<ExprPtr> IdentOperand(ExprPtr e) {
    if (!tok_.quoted && (IsKeyword(tok_, "true") || IsKeyword(tok_, "false"))) {
      e->kind = Expr::Kind::kBoolean;
      e->boolean = IsKeyword(tok_, "true");
      Advance();
      return e;
    }
    if (!tok_.quoted && IsReserved(tok_)) return Expected("identifier, string, number, bool");
    std::string name = tok_.text;
    const bool quoted = tok_.quoted;
    Advance();
    if (!quoted && IsOp("(")) {
      Advance();
      e->kind = Expr::Kind::kCall;
      e->text = Lower(std::move(name));
      if (!AcceptOp(")")) {
        do {
          Result<ExprPtr> arg = IsOp("*") ? Wildcard() : Expression();
          if (!arg.ok()) return arg.status();
          e->args.push_back(std::move(*arg));
        } while (AcceptOp(","));
        if (!AcceptOp(")")) return Expected(")");
      }
      return e;
    }
    e->kind = Expr::Kind::kVarRef;
    e->text = std::move(name);
    if (AcceptOp("::")) {
      Result<std::string> type = Identifier();
      if (!type.ok()) return type.status();
      e->cast = Lower(std::move(*type));
    }
    return e;
  }

  std::string_view q_;
  Lexer lexer_;
  Token tok_;
  int depth_ = 0;
};

}  // namespace

Result<int64_t> ParseInfluxDuration(std::string_view text) {
  int64_t total = 0;
  size_t i = 0;
  if (text.empty()) return Status::InvalidArgument("invalid duration ''");
  while (i < text.size()) {
    size_t digits = i;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    size_t unit_end = digits;
    while (unit_end < text.size() && !std::isdigit(static_cast<unsigned char>(text[unit_end])))
      ++unit_end;
    int64_t n = 0;
    const int64_t per = UnitNanos(text.substr(digits, unit_end - digits));
    if (digits == i || per == 0 ||
        std::from_chars(text.data() + i, text.data() + digits, n).ec != std::errc() ||
        n > (std::numeric_limits<int64_t>::max() - total) / per) {
      return Status::InvalidArgument("invalid duration '" + std::string(text) + "'");
    }
    total += n * per;
    i = unit_end;
  }
  return total;
}

Result<std::vector<Statement>> ParseInfluxQL(std::string_view query) {
  return Parser(query).Statements();
}

}  // namespace trainwatch::influx::ql
