// Status: the outcome of an operation, as a value (leveldb/abseil style).
//
// Codes follow the abseil/gRPC canonical set so a Status maps 1:1 onto grpc::Status,
// and each code tells the caller what to do next:
//   kUnavailable        transient (network, 429/5xx, timeouts): retry the call with backoff
//   kAborted            conflict (HTTP 409): re-read, then retry the read-modify-write
//   kOutOfRange         the watch's resourceVersion is gone (HTTP 410): relist
//   kNotFound / kAlreadyExists / kPermissionDenied / kInvalidArgument: don't retry as is
//   kFailedPrecondition the system is not in a state where this can work; retry after it changes
//   kInternal           a bug or an invariant broken
// An OK status holds no allocation, so success is free. Thread-compatible.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace phalanx {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // Empty for OK.
  const std::string& message() const;
  // "NOT_FOUND: pod ml/a not found"; "OK" for OK.
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>" (no-op on OK): adds the
  // caller's view while keeping the code, like ABSL_RETURN_IF_ERROR(...) << context.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

inline Status OkStatus() { return Status(); }
Status CancelledError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status UnauthenticatedError(std::string message);

inline bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }
inline bool IsAlreadyExists(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }
inline bool IsInvalidArgument(const Status& s) { return s.code() == StatusCode::kInvalidArgument; }
inline bool IsUnavailable(const Status& s) { return s.code() == StatusCode::kUnavailable; }
inline bool IsAborted(const Status& s) { return s.code() == StatusCode::kAborted; }

std::ostream& operator<<(std::ostream& os, const Status& s);
std::ostream& operator<<(std::ostream& os, StatusCode code);

}  // namespace phalanx

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define PHX_RETURN_IF_ERROR(expr)                    \
  do {                                               \
    ::phalanx::Status phx_status_ = (expr);          \
    if (!phx_status_.ok()) return phx_status_;       \
  } while (0)
