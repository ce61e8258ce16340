// Request-target parsing: split "/path?query" and percent-decode the query (RFC 3986 §2.1,
// HTML form rules for '+'). Pure functions, no allocation beyond the outputs. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace phalanx::http {

// Decodes %XX escapes; with `plus_as_space`, '+' becomes ' ' (query strings). A malformed escape
// ("%zz", a trailing "%4") is kept literally rather than rejected: clients such as kubectl never
// send one, and a lenient decoder cannot turn a valid request into an error.
std::string PercentDecode(std::string_view text, bool plus_as_space);

// Splits `target` at the first '?': the path stays encoded (routing compares raw paths), the
// query becomes decoded (name, value) pairs in order. Empty segments ("a&&b") are skipped; a
// segment without '=' has an empty value.
void ParseTarget(std::string_view target, std::string* path,
                 std::vector<std::pair<std::string, std::string>>* query);

}  // namespace phalanx::http
