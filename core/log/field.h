// Field: one structured key/value of a log record (STYLE §2.5: lowerCamelCase keys,
// objects as namespace/name, errors under "err").
//
//   PHX_LOG_INFO(logger, "Bound gang members", kv("gang", gang), kv("nodes", 4));
//
// A value keeps its kind so the JSON format can write numbers as numbers: strings (and
// anything with .str(), a fmt formatter or operator<<, rendered as text), signed and
// unsigned integers (enums as their underlying integer), doubles, bools. Status renders
// as its ToString(), durations as seconds ("0.25s").
// Lifetime: an lvalue std::string or string_view is referenced, not copied; a Field is
// meant to live within the logging statement that creates it (as with the macros).
// Rvalue strings and rendered values are owned. Thread-compatible.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "core/base/status.h"

namespace phalanx::log {

class Field {
 public:
  using Value = std::variant<std::string_view, std::string, int64_t, uint64_t, double, bool>;

  template <typename V>
  Field(std::string_view key, V&& value)  // NOLINT: implicit for {"key", value} lists
      : key_(key), value_(ToValue(std::forward<V>(value))) {}

  std::string_view key() const { return key_; }
  const Value& value() const { return value_; }

 private:
  template <typename V>
  static Value ToValue(V&& v) {
    using D = std::remove_cvref_t<V>;
    if constexpr (std::is_same_v<D, bool>) {
      return v;
    } else if constexpr (std::is_same_v<D, char>) {
      return std::string(1, v);
    } else if constexpr (std::is_enum_v<D>) {
      return ToValue(static_cast<std::underlying_type_t<D>>(v));
    } else if constexpr (std::is_integral_v<D> && std::is_signed_v<D>) {
      return static_cast<int64_t>(v);
    } else if constexpr (std::is_integral_v<D>) {
      return static_cast<uint64_t>(v);
    } else if constexpr (std::is_floating_point_v<D>) {
      return static_cast<double>(v);
    } else if constexpr (std::is_same_v<D, std::string>) {
      if constexpr (std::is_lvalue_reference_v<V>) {
        return std::string_view(v);
      } else {
        return std::string(std::move(v));
      }
    } else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>) {
      return v == nullptr ? std::string_view("(null)") : std::string_view(v);
    } else if constexpr (std::is_convertible_v<const D&, std::string_view>) {
      return std::string_view(v);
    } else if constexpr (std::is_same_v<D, Status>) {
      return v.ToString();
    } else if constexpr (requires { typename D::rep; typename D::period; v.count(); }) {
      return fmt::format("{}s", std::chrono::duration<double>(v).count());
    } else if constexpr (requires { { v.str() } -> std::convertible_to<std::string_view>; }) {
      if constexpr (std::is_lvalue_reference_v<V> &&
                    std::is_lvalue_reference_v<decltype(v.str())>) {
        return std::string_view(v.str());
      } else {
        return std::string(v.str());
      }
    } else if constexpr (fmt::is_formattable<D>::value) {
      return fmt::format("{}", v);
    } else {
      std::ostringstream out;
      out << v;
      return std::move(out).str();
    }
  }

  std::string_view key_;
  Value value_;
};

// kv("gang", gang): the spelling used inside PHX_LOG_* calls.
template <typename V>
Field kv(std::string_view key, V&& value) {
  return Field(key, std::forward<V>(value));
}

}  // namespace phalanx::log
