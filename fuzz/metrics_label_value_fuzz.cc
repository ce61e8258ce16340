// Prometheus text exposition of outside strings (core/metrics/exposition.h): label values are pod,
// queue and node names. Contract: the escaped value stays on one line, inside its quotes, and a
// Prometheus parser's unescaping gives the value back.
#include <string>

#include "core/metrics/exposition.h"
#include "fuzz/fuzz_util.h"

namespace {

// The exposition format's unescaping (\\, \", \n); false on anything a scraper would reject.
bool Unescape(std::string_view escaped, bool quotes, std::string& out) {
  for (size_t i = 0; i < escaped.size(); ++i) {
    const char c = escaped[i];
    if (c == '\n') return false;
    if (quotes && c == '"') return false;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i == escaped.size()) return false;
    switch (escaped[i]) {
      case '\\': out += '\\'; break;
      case 'n': out += '\n'; break;
      case '"':
        if (!quotes) return false;
        out += '"';
        break;
      default: return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view value = phalanx::fuzz::AsText(data, size);
  std::string label;
  phalanx::metrics::AppendEscapedLabelValue(label, value);
  std::string back;
  FUZZ_CHECK(Unescape(label, true, back) && back == value, label);
  std::string help;
  phalanx::metrics::AppendEscapedHelp(help, value);
  back.clear();
  FUZZ_CHECK(Unescape(help, false, back) && back == value, help);
  return 0;
}
