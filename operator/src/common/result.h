// Result<T>: a value or an Error, returned across module boundaries instead of throwing.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kubedist {

// What went wrong, in words a user can act on, plus a machine-readable kind for callers that branch.
struct Error {
  enum class Kind {
    kInvalid,        // bad input (spec, config, flag); retrying will not help
    kNotFound,       // HTTP 404
    kConflict,       // HTTP 409 with reason Conflict (stale resourceVersion)
    kAlreadyExists,  // HTTP 409 with reason AlreadyExists
    kGone,           // HTTP 410: the resourceVersion is too old, relist
    kUnprocessable,  // HTTP 422: the API server rejected the object
    kRetryable,      // HTTP 429 / 5xx / transport errors: retry with backoff
    kForbidden,      // HTTP 401 / 403
    kUnserializable, // a request body that cannot be written as JSON (text not UTF-8): never sent, never retried
    kOther,
  };
  Kind kind = Kind::kOther;
  std::string message;
  int http_status = 0;

  static Error invalid(std::string m) { return {Kind::kInvalid, std::move(m), 0}; }
};

const char* to_string(Error::Kind kind);

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}      // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }

 private:
  std::optional<Error> e_;
};

}  // namespace kubedist
