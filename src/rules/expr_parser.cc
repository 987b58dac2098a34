// The expression lexer and recursive-descent parser (grammar: docs/rules.md, "Expressions").
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "common/strings.h"
#include "rules/expr.h"

namespace trainwatch::rules {
namespace {

constexpr int kMaxDepth = 64;  // nesting of parentheses, unary operators and calls

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':';
}
bool IsSlashContinuation(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

enum class Tok {
  kNumber,
  kName,
  kQuotedName,
  kLParen,
  kRParen,
  kComma,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kGt,
  kGe,
  kLt,
  kLe,
  kEq,
  kNe,
  kAnd,
  kOr,
  kNot,
  kEnd,
};

struct Token {
  Tok kind;
  std::string_view text;  // as written (a quoted name without its backticks)
  size_t column;          // 1-based
  double number = 0;
};

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd:
      return "the end";
    case Tok::kQuotedName:
      return "'`" + std::string(t.text) + "`'";
    default:
      return "'" + std::string(t.text) + "'";
  }
}

Status ErrorAt(size_t column, const std::string& message) {
  return Status::InvalidArgument("column " + std::to_string(column) + ": " + message);
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Result<std::vector<Token>> Run() {
    std::vector<Token> tokens;
    while (true) {
      while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ == text_.size()) break;
      Result<Token> t = Next();
      if (!t.ok()) return t.status();
      tokens.push_back(*t);
    }
    tokens.push_back(Token{Tok::kEnd, "", text_.size() + 1});
    return tokens;
  }

 private:
  Result<Token> Next() {
    const size_t start = pos_;
    const size_t column = start + 1;
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < text_.size() &&
         std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
      return Number();
    }
    if (IsNameStart(c)) return Name();
    if (c == '`') {
      size_t close = text_.find('`', pos_ + 1);
      if (close == std::string_view::npos)
        return ErrorAt(column, "unterminated `quoted name`: missing the closing backtick");
      std::string_view name = text_.substr(pos_ + 1, close - pos_ - 1);
      if (name.empty()) return ErrorAt(column, "empty `quoted name`");
      if (name.find('\n') != std::string_view::npos)
        return ErrorAt(column, "a `quoted name` cannot span lines");
      pos_ = close + 1;
      return Token{Tok::kQuotedName, name, column};
    }
    auto op = [&](Tok kind, size_t len) {
      pos_ += len;
      return Token{kind, text_.substr(start, len), column};
    };
    const char next = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
    switch (c) {
      case '(':
        return op(Tok::kLParen, 1);
      case ')':
        return op(Tok::kRParen, 1);
      case ',':
        return op(Tok::kComma, 1);
      case '+':
        return op(Tok::kPlus, 1);
      case '-':
        return op(Tok::kMinus, 1);
      case '*':
        return op(Tok::kStar, 1);
      case '/':
        return op(Tok::kSlash, 1);
      case '>':
        return next == '=' ? op(Tok::kGe, 2) : op(Tok::kGt, 1);
      case '<':
        return next == '=' ? op(Tok::kLe, 2) : op(Tok::kLt, 1);
      case '=':
        if (next == '=') return op(Tok::kEq, 2);
        return ErrorAt(column, "'=' is not an operator; compare with '=='");
      case '!':
        if (next == '=') return op(Tok::kNe, 2);
        return ErrorAt(column, "'!' is not an operator; negate with 'not'");
      case '&':
        return ErrorAt(column, "'&' is not an operator; use 'and'");
      case '|':
        return ErrorAt(column, "'|' is not an operator; use 'or'");
      default:
        break;
    }
    return ErrorAt(column,
                   "unexpected character '" + std::string(1, c) +
                       "' (quote metric names with unusual characters in backticks: `val/acc@1`)");
  }

  Result<Token> Number() {
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
      if (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) {
        while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) ++p;
        pos_ = p;
      }
    }
    std::string_view literal = text_.substr(start, pos_ - start);
    if (pos_ < text_.size() && (IsNameChar(text_[pos_]) || text_[pos_] == '`')) {
      return ErrorAt(pos_ + 1, "unexpected '" + std::string(1, text_[pos_]) +
                                   "' after the number '" + std::string(literal) + "'");
    }
    double v = 0;
    auto [end, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), v);
    if (ec != std::errc() || end != literal.data() + literal.size()) {
      return ErrorAt(start + 1, "bad number '" + std::string(literal) + "'");
    }
    return Token{Tok::kNumber, literal, start + 1, v};
  }

  Token Name() {
    const size_t start = pos_;
    ++pos_;
    while (pos_ < text_.size()) {
      if (IsNameChar(text_[pos_])) {
        ++pos_;
      } else if (text_[pos_] == '/' && pos_ + 1 < text_.size() &&
                 IsSlashContinuation(text_[pos_ + 1])) {
        pos_ += 2;  // `train/loss`: a slash between name characters belongs to the name
      } else {
        break;
      }
    }
    std::string_view word = text_.substr(start, pos_ - start);
    Token t{Tok::kName, word, start + 1};
    if (EqualsIgnoreCase(word, "and"))
      t.kind = Tok::kAnd;
    else if (EqualsIgnoreCase(word, "or"))
      t.kind = Tok::kOr;
    else if (EqualsIgnoreCase(word, "not"))
      t.kind = Tok::kNot;
    else if (EqualsIgnoreCase(word, "inf"))
      t = Token{Tok::kNumber, word, start + 1, std::numeric_limits<double>::infinity()};
    else if (EqualsIgnoreCase(word, "nan"))
      t = Token{Tok::kNumber, word, start + 1, std::numeric_limits<double>::quiet_NaN()};
    return t;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

// Builds an Expr's node array. Every node is typed: a number or a condition (a truth value).
class ExprParser {
 public:
  explicit ExprParser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<Expr> Run(std::string text) {
    Result<Parsed> root = ParseOr();
    if (!root.ok()) return root.status();
    const Token& t = Peek();
    if (t.kind != Tok::kEnd) {
      if (t.kind == Tok::kRParen) return ErrorAt(t.column, "unmatched ')'");
      return ErrorAt(t.column, "expected an operator, got " + Describe(t));
    }
    if (!root->condition) {
      return ErrorAt(1, "the expression is a number, not a condition; compare it, e.g. 'loss > 1'");
    }
    if (expr_.metrics_.empty()) return ErrorAt(1, "the expression reads no metric");
    expr_.root_ = root->node;
    expr_.text_ = std::move(text);
    return std::move(expr_);
  }

 private:
  using Op = Expr::Op;
  struct Parsed {
    int node;
    bool condition;  // a truth value (comparison, and/or/not, isnan/isfinite) rather than a number
  };

  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Take() { return tokens_[pos_++]; }
  const Token* Previous() const { return pos_ > 0 ? &tokens_[pos_ - 1] : nullptr; }

  int Add(Expr::Node node) {
    expr_.nodes_.push_back(node);
    return static_cast<int>(expr_.nodes_.size() - 1);
  }

  Status NeedNumber(const Parsed& p, const Token& op, std::string_view side) {
    if (!p.condition) return Status::Ok();
    return ErrorAt(op.column, "'" + std::string(op.text) + "' needs a number on its " +
                                  std::string(side) + ", got a condition");
  }
  Status NeedCondition(const Parsed& p, const Token& op, std::string_view side) {
    if (p.condition) return Status::Ok();
    return ErrorAt(op.column, "'" + std::string(op.text) + "' needs a condition on its " +
                                  std::string(side) +
                                  ", got a number (compare it, e.g. 'loss > 1')");
  }

  Result<Parsed> ParseOr() {
    TW_ASSIGN_OR_RETURN(Parsed lhs, ParseAnd());
    while (Peek().kind == Tok::kOr) {
      const Token& op = Take();
      TW_ASSIGN_OR_RETURN(Parsed rhs, ParseAnd());
      TW_RETURN_IF_ERROR(NeedCondition(lhs, op, "left"));
      TW_RETURN_IF_ERROR(NeedCondition(rhs, op, "right"));
      lhs = Parsed{Add(Expr::Node{.op = Op::kOr, .lhs = lhs.node, .rhs = rhs.node}), true};
    }
    return lhs;
  }

  Result<Parsed> ParseAnd() {
    TW_ASSIGN_OR_RETURN(Parsed lhs, ParseNot());
    while (Peek().kind == Tok::kAnd) {
      const Token& op = Take();
      TW_ASSIGN_OR_RETURN(Parsed rhs, ParseNot());
      TW_RETURN_IF_ERROR(NeedCondition(lhs, op, "left"));
      TW_RETURN_IF_ERROR(NeedCondition(rhs, op, "right"));
      lhs = Parsed{Add(Expr::Node{.op = Op::kAnd, .lhs = lhs.node, .rhs = rhs.node}), true};
    }
    return lhs;
  }

  Result<Parsed> ParseNot() {
    if (Peek().kind != Tok::kNot) return ParseComparison();
    const Token& op = Take();
    if (++depth_ > kMaxDepth) return ErrorAt(op.column, "the expression nests too deeply");
    TW_ASSIGN_OR_RETURN(Parsed operand, ParseNot());
    --depth_;
    TW_RETURN_IF_ERROR(NeedCondition(operand, op, "right"));
    return Parsed{Add(Expr::Node{.op = Op::kNot, .lhs = operand.node}), true};
  }

  static std::optional<Op> ComparisonOp(Tok kind) {
    switch (kind) {
      case Tok::kGt:
        return Op::kGt;
      case Tok::kGe:
        return Op::kGe;
      case Tok::kLt:
        return Op::kLt;
      case Tok::kLe:
        return Op::kLe;
      case Tok::kEq:
        return Op::kEq;
      case Tok::kNe:
        return Op::kNe;
      default:
        return std::nullopt;
    }
  }

  Result<Parsed> ParseComparison() {
    TW_ASSIGN_OR_RETURN(Parsed lhs, ParseSum());
    std::optional<Op> op = ComparisonOp(Peek().kind);
    if (!op) return lhs;
    const Token& tok = Take();
    TW_ASSIGN_OR_RETURN(Parsed rhs, ParseSum());
    TW_RETURN_IF_ERROR(NeedNumber(lhs, tok, "left"));
    TW_RETURN_IF_ERROR(NeedNumber(rhs, tok, "right"));
    if (ComparisonOp(Peek().kind)) {
      return ErrorAt(Peek().column, "comparisons cannot be chained; combine them with 'and'");
    }
    int node = Add(Expr::Node{.op = *op, .lhs = lhs.node, .rhs = rhs.node});
    if (expr_.value_node_ < 0) expr_.value_node_ = node;
    return Parsed{node, true};
  }

  Result<Parsed> ParseSum() {
    TW_ASSIGN_OR_RETURN(Parsed lhs, ParseProduct());
    while (Peek().kind == Tok::kPlus || Peek().kind == Tok::kMinus) {
      const Token& tok = Take();
      TW_ASSIGN_OR_RETURN(Parsed rhs, ParseProduct());
      TW_RETURN_IF_ERROR(NeedNumber(lhs, tok, "left"));
      TW_RETURN_IF_ERROR(NeedNumber(rhs, tok, "right"));
      Op op = tok.kind == Tok::kPlus ? Op::kAdd : Op::kSub;
      lhs = Parsed{Add(Expr::Node{.op = op, .lhs = lhs.node, .rhs = rhs.node}), false};
    }
    return lhs;
  }

  Result<Parsed> ParseProduct() {
    TW_ASSIGN_OR_RETURN(Parsed lhs, ParseUnary());
    while (Peek().kind == Tok::kStar || Peek().kind == Tok::kSlash) {
      const Token& tok = Take();
      TW_ASSIGN_OR_RETURN(Parsed rhs, ParseUnary());
      TW_RETURN_IF_ERROR(NeedNumber(lhs, tok, "left"));
      TW_RETURN_IF_ERROR(NeedNumber(rhs, tok, "right"));
      Op op = tok.kind == Tok::kStar ? Op::kMul : Op::kDiv;
      lhs = Parsed{Add(Expr::Node{.op = op, .lhs = lhs.node, .rhs = rhs.node}), false};
    }
    return lhs;
  }

  Result<Parsed> ParseUnary() {
    if (Peek().kind != Tok::kMinus && Peek().kind != Tok::kPlus) return ParsePrimary();
    const Token& tok = Take();
    if (++depth_ > kMaxDepth) return ErrorAt(tok.column, "the expression nests too deeply");
    TW_ASSIGN_OR_RETURN(Parsed operand, ParseUnary());
    --depth_;
    TW_RETURN_IF_ERROR(NeedNumber(operand, tok, "right"));
    if (tok.kind == Tok::kPlus) return operand;
    return Parsed{Add(Expr::Node{.op = Op::kNeg, .lhs = operand.node}), false};
  }

  Status ExpectedOperand() {
    const Token& t = Peek();
    const Token* prev = Previous();
    std::string what = "expected a number or a metric name";
    if (prev != nullptr) what += " after '" + std::string(prev->text) + "'";
    if (t.kind != Tok::kEnd) what += ", got " + Describe(t);
    return ErrorAt(t.column, what);
  }

  int MetricIndex(std::string_view name) {
    for (size_t i = 0; i < expr_.metrics_.size(); ++i) {
      if (expr_.metrics_[i] == name) return static_cast<int>(i);
    }
    expr_.metrics_.emplace_back(name);
    return static_cast<int>(expr_.metrics_.size() - 1);
  }

  Result<Parsed> ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case Tok::kNumber:
        Take();
        return Parsed{Add(Expr::Node{.op = Op::kNumber, .number = t.number}), false};
      case Tok::kQuotedName:
        Take();
        return Parsed{Add(Expr::Node{.op = Op::kMetric, .ref = MetricIndex(t.text)}), false};
      case Tok::kName:
        Take();
        if (Peek().kind == Tok::kLParen) return ParseCall(t);
        return Parsed{Add(Expr::Node{.op = Op::kMetric, .ref = MetricIndex(t.text)}), false};
      case Tok::kLParen: {
        Take();
        if (++depth_ > kMaxDepth) return ErrorAt(t.column, "the expression nests too deeply");
        TW_ASSIGN_OR_RETURN(Parsed inner, ParseOr());
        --depth_;
        if (Peek().kind != Tok::kRParen) {
          return ErrorAt(Peek().column, "expected ')' to close the '(' at column " +
                                            std::to_string(t.column) + ", got " + Describe(Peek()));
        }
        Take();
        return inner;
      }
      default:
        return ExpectedOperand();
    }
  }

  static std::optional<WindowFn> WindowFunction(std::string_view name) {
    if (name == "mean") return WindowFn::kMean;
    if (name == "sum") return WindowFn::kSum;
    if (name == "max") return WindowFn::kMax;
    if (name == "min") return WindowFn::kMin;
    if (name == "delta") return WindowFn::kDelta;
    return std::nullopt;
  }

  // After `name` with '(' next.
  Result<Parsed> ParseCall(const Token& name) {
    const Token& open = Take();
    if (++depth_ > kMaxDepth) return ErrorAt(open.column, "the expression nests too deeply");
    Result<Parsed> result = Status::Internal("unreachable");
    if (std::optional<WindowFn> fn = WindowFunction(name.text)) {
      result = ParseWindowArgs(name, *fn);
    } else if (name.text == "abs" || name.text == "isnan" || name.text == "isfinite") {
      TW_ASSIGN_OR_RETURN(Parsed arg, ParseOr());
      if (arg.condition) {
        return ErrorAt(name.column, std::string(name.text) + "() needs a number, got a condition");
      }
      Op op = name.text == "abs" ? Op::kAbs : name.text == "isnan" ? Op::kIsNan : Op::kIsFinite;
      result = Parsed{Add(Expr::Node{.op = op, .lhs = arg.node}), op != Op::kAbs};
    } else {
      return ErrorAt(name.column,
                     "unknown function '" + std::string(name.text) +
                         "' (functions: mean, sum, max, min, delta, abs, isnan, isfinite)");
    }
    if (!result.ok()) return result;
    if (Peek().kind != Tok::kRParen) {
      return ErrorAt(Peek().column, "expected ')' to close " + std::string(name.text) +
                                        "( at column " + std::to_string(name.column) + ", got " +
                                        Describe(Peek()));
    }
    Take();
    --depth_;
    return result;
  }

  Result<Parsed> ParseWindowArgs(const Token& name, WindowFn fn) {
    const std::string usage = std::string(name.text) +
                              "() takes a metric name and a number of records, e.g. " +
                              std::string(name.text) + "(loss, 100)";
    const Token& metric = Peek();
    if (metric.kind != Tok::kName && metric.kind != Tok::kQuotedName) {
      return ErrorAt(metric.column, usage);
    }
    Take();
    if (metric.kind == Tok::kName && Peek().kind == Tok::kLParen)
      return ErrorAt(metric.column, usage);
    if (Peek().kind != Tok::kComma) return ErrorAt(Peek().column, usage);
    Take();
    const Token& count = Peek();
    if (count.kind != Tok::kNumber) return ErrorAt(count.column, usage);
    Take();
    const double n = count.number;
    if (!(n >= 1 && n <= static_cast<double>(kMaxWindow)) || n != std::floor(n)) {
      return ErrorAt(count.column, "the window of " + std::string(name.text) +
                                       "() must be a whole number of records from 1 to " +
                                       std::to_string(kMaxWindow) + ", got " +
                                       std::string(count.text));
    }
    MetricIndex(metric.text);
    WindowRef ref{fn, std::string(metric.text), static_cast<int64_t>(n)};
    int index = -1;
    for (size_t i = 0; i < expr_.windows_.size(); ++i) {
      if (expr_.windows_[i] == ref) index = static_cast<int>(i);
    }
    if (index < 0) {
      expr_.windows_.push_back(std::move(ref));
      index = static_cast<int>(expr_.windows_.size() - 1);
    }
    return Parsed{Add(Expr::Node{.op = Op::kWindow, .ref = index}), false};
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  Expr expr_;
};

Result<Expr> Expr::Parse(std::string_view text) {
  if (text.size() > kMaxExprLength) {
    return Status::InvalidArgument("column " + std::to_string(kMaxExprLength + 1) +
                                   ": the expression is longer than " +
                                   std::to_string(kMaxExprLength) + " bytes");
  }
  // Columns count from the start of the text as given; only the stored text is trimmed.
  Result<std::vector<Token>> tokens = Lexer(text).Run();
  if (!tokens.ok()) return tokens.status();
  size_t first = text.find_first_not_of(" \t\r\n");
  size_t last = text.find_last_not_of(" \t\r\n");
  std::string trimmed =
      first == std::string_view::npos ? "" : std::string(text.substr(first, last - first + 1));
  if (trimmed.empty()) return ErrorAt(1, "empty expression");
  return ExprParser(std::move(*tokens)).Run(std::move(trimmed));
}

bool IsBareMetricName(std::string_view name) {
  if (name.empty() || !IsNameStart(name[0])) return false;
  for (size_t i = 1; i < name.size(); ++i) {
    if (IsNameChar(name[i])) continue;
    if (name[i] == '/' && i + 1 < name.size() && IsSlashContinuation(name[i + 1])) continue;
    return false;
  }
  for (std::string_view keyword : {"and", "or", "not", "inf", "nan"}) {
    if (EqualsIgnoreCase(name, keyword)) return false;
  }
  return true;
}

}  // namespace trainwatch::rules
