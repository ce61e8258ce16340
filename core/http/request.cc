// Request accessors and request-target parsing (see request_target.h).
#include <optional>
#include <string>
#include <string_view>

#include "core/http/http_server.h"
#include "core/http/request_target.h"

namespace phalanx::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::string PercentDecode(std::string_view text, bool plus_as_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = HexValue(text[i + 1]);
      const int lo = HexValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_as_space && c == '+' ? ' ' : c);
  }
  return out;
}

void ParseTarget(std::string_view target, std::string* path,
                 std::vector<std::pair<std::string, std::string>>* query) {
  const size_t q = target.find('?');
  path->assign(target.substr(0, q));
  query->clear();
  if (q == std::string_view::npos) return;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view segment = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (segment.empty()) continue;
    const size_t eq = segment.find('=');
    if (eq == std::string_view::npos) {
      query->emplace_back(PercentDecode(segment, true), std::string());
    } else {
      query->emplace_back(PercentDecode(segment.substr(0, eq), true),
                          PercentDecode(segment.substr(eq + 1), true));
    }
  }
}

std::string_view Request::HeaderValue(std::string_view name) const {
  for (const Header& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  }
  return {};
}

std::optional<std::string_view> Request::QueryValue(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return std::string_view(value);
  }
  return std::nullopt;
}

}  // namespace phalanx::http
