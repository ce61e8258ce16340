// HTTP/1.1 response framing (see wire_format.h).
#include "core/http/wire_format.h"

#include <boost/beast/http/status.hpp>

#include <cstdio>

namespace phalanx::http::internal {
namespace {

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
    case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool IsValidHeaderName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

bool IsServerOwnedHeader(std::string_view name) {
  auto lower_equals = [&](std::string_view want) {
    if (name.size() != want.size()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
      char c = name[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != want[i]) return false;
    }
    return true;
  };
  return lower_equals("content-length") || lower_equals("transfer-encoding") ||
         lower_equals("connection");
}

void AppendHeader(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->append(": ");
  for (char c : value) out->push_back(c == '\r' || c == '\n' || c == '\0' ? ' ' : c);
  out->append("\r\n");
}

std::string_view KubeReason(int status) {
  switch (status) {
    case 400: return "BadRequest";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 413: return "RequestEntityTooLarge";
    case 431: return "RequestHeaderFieldsTooLarge";
    case 503: return "ServiceUnavailable";
    default: return status >= 500 ? "InternalError" : "Unknown";
  }
}

}  // namespace

std::string_view ReasonPhrase(int status) {
  if (status < 100 || status > 999) return "Unknown";
  const auto phrase =
      boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  if (phrase.empty() || phrase.front() == '<') return "Unknown";  // "<unknown-status>"
  return {phrase.data(), phrase.size()};
}

bool StatusAllowsBody(int status) {
  return !(status < 200 || status == 204 || status == 304);
}

std::string FormatResponseHead(int status, std::string_view content_type,
                               const std::vector<Header>& headers, const HeadOptions& options) {
  std::string out;
  out.reserve(128 + 32 * headers.size());
  char status_line[32];
  std::snprintf(status_line, sizeof(status_line), "HTTP/1.1 %d ", status);
  out.append(status_line);
  out.append(ReasonPhrase(status));
  out.append("\r\n");
  if (!content_type.empty()) AppendHeader(&out, "Content-Type", content_type);
  for (const Header& h : headers) {
    if (!IsValidHeaderName(h.name) || IsServerOwnedHeader(h.name)) continue;
    AppendHeader(&out, h.name, h.value);
  }
  switch (options.framing) {
    case Framing::kContentLength:
      if (status >= 200 && status != 204) {
        AppendHeader(&out, "Content-Length", std::to_string(options.content_length));
      }
      break;
    case Framing::kChunked:
      AppendHeader(&out, "Transfer-Encoding", "chunked");
      break;
    case Framing::kUntilClose:
      break;
  }
  if (options.close) {
    AppendHeader(&out, "Connection", "close");
  } else if (options.http10_keep_alive) {
    AppendHeader(&out, "Connection", "keep-alive");
  }
  out.append("\r\n");
  return out;
}

std::string FrameChunk(std::string_view data) {
  char size_line[24];
  const int n = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", data.size());
  std::string out;
  out.reserve(static_cast<size_t>(n) + data.size() + 2);
  out.append(size_line, static_cast<size_t>(n));
  out.append(data);
  out.append("\r\n");
  return out;
}

void AppendJsonString(std::string* out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xf]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

Response ErrorResponse(int status, std::string_view message) {
  Response response;
  response.status = status;
  response.body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)";
  AppendJsonString(&response.body, message);
  response.body += R"(,"reason":")";
  response.body += KubeReason(status);
  response.body += R"(","code":)";
  response.body += std::to_string(status);
  response.body += "}";
  return response;
}

}  // namespace phalanx::http::internal
