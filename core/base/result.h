// Result<T>: a T or the Status explaining why there is none (abseil's StatusOr).
// Replaceable by std::expected once the toolchain moves to C++23. Thread-compatible.
#pragma once

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>

#include "core/base/status.h"

namespace phalanx {

template <typename T>
class [[nodiscard]] Result {
 public:
  // Implicit from a value or an error status, so `return value;` and
  // `return NotFoundError(...);` both work. A Result is never built from an OK status.
  Result(const T& value) : value_(value) {}                       // NOLINT
  Result(T&& value) : value_(std::move(value)) {}                 // NOLINT
  Result(Status status) : status_(std::move(status)) {            // NOLINT
    assert(!status_.ok() && "Result built from an OK Status without a value");
    if (status_.ok()) status_ = InternalError("Result built from OK status without a value");
  }
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, T> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, Result<T>>>>
  Result(U&& value) : value_(std::forward<U>(value)) {}          // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  const T& value() const& { assert(ok()); return *value_; }
  T& value() & { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }

  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  Status status_;  // OK iff value_ has a value
  std::optional<T> value_;
};

}  // namespace phalanx

#define PHX_CONCAT_INNER_(a, b) a##b
#define PHX_CONCAT_(a, b) PHX_CONCAT_INNER_(a, b)

// PHX_ASSIGN_OR_RETURN(auto x, Compute()); returns Compute()'s status on error.
#define PHX_ASSIGN_OR_RETURN(lhs, rexpr) \
  PHX_ASSIGN_OR_RETURN_IMPL_(PHX_CONCAT_(phx_result_, __LINE__), lhs, rexpr)
#define PHX_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                               \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
