// Status and Result<T>: the error model of the whole code base.
//
// Fallible functions return a [[nodiscard]] Status or Result<T>; exceptions are reserved for the
// edges (start-up configuration, the Python binding). Errors gain context as they travel up:
//   return status.WithContext("replaying WAL segment 12");
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace trainwatch {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // the caller sent something malformed; never retry unchanged
  kNotFound,
  kAlreadyExists,
  kResourceExhausted,  // a limit was hit (body size, series count, disk full)
  kCorruption,         // stored bytes failed a check
  kIoError,
  kUnavailable,        // shutting down or temporarily unable; retry later
  kInternal,
  kUnauthenticated,   // no valid credentials (HTTP 401)
  kPermissionDenied,  // valid credentials, not allowed to do this (HTTP 403)
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) { return {StatusCode::kAlreadyExists, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status IoError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
  // An I/O error from errno, e.g. IoErrorFromErrno("opening wal/000012.log", errno).
  static Status IoErrorFromErrno(std::string_view what, int err);
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status Unauthenticated(std::string msg) { return {StatusCode::kUnauthenticated, std::move(msg)}; }
  static Status PermissionDenied(std::string msg) { return {StatusCode::kPermissionDenied, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy with "context: " prepended to the message; OK stays OK.
  Status WithContext(std::string_view context) const;
  // "InvalidArgument: message" (or "OK").
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(data_).ok() && "Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace trainwatch

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define TW_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::trainwatch::Status _tw_status = (expr);    \
    if (!_tw_status.ok()) return _tw_status;     \
  } while (0)

#define TW_CONCAT_INNER(a, b) a##b
#define TW_CONCAT(a, b) TW_CONCAT_INNER(a, b)
// `TW_ASSIGN_OR_RETURN(auto x, Fn());` declares x from a Result or returns its Status.
#define TW_ASSIGN_OR_RETURN(decl, expr) TW_ASSIGN_OR_RETURN_IMPL(TW_CONCAT(_tw_result_, __LINE__), decl, expr)
#define TW_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  decl = std::move(tmp).value()
