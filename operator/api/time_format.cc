#include "operator/api/time_format.h"

#include <cctype>
#include <ctime>

#include <fmt/format.h>

namespace phalanx::op {

SystemTime TruncateToSeconds(SystemTime time) {
  return std::chrono::time_point_cast<std::chrono::seconds>(time);
}

double SecondsBetween(SystemTime a, SystemTime b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string FormatRfc3339(SystemTime time) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(TruncateToSeconds(time));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

namespace {

bool ReadDigits(std::string_view text, size_t& pos, size_t count, int& out) {
  if (pos + count > text.size()) return false;
  int value = 0;
  for (size_t i = 0; i < count; ++i) {
    const char c = text[pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  pos += count;
  out = value;
  return true;
}

bool Expect(std::string_view text, size_t& pos, char c) {
  if (pos >= text.size() || (text[pos] != c && std::tolower(text[pos]) != c)) return false;
  ++pos;
  return true;
}

}  // namespace

Result<SystemTime> ParseRfc3339(std::string_view text) {
  auto bad = [&] { return InvalidArgumentError(fmt::format("invalid RFC 3339 time \"{}\"", text)); };
  size_t pos = 0;
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!ReadDigits(text, pos, 4, year) || !Expect(text, pos, '-') || !ReadDigits(text, pos, 2, month) ||
      !Expect(text, pos, '-') || !ReadDigits(text, pos, 2, day) || !Expect(text, pos, 't') ||
      !ReadDigits(text, pos, 2, hour) || !Expect(text, pos, ':') || !ReadDigits(text, pos, 2, minute) ||
      !Expect(text, pos, ':') || !ReadDigits(text, pos, 2, second)) {
    return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad();
  }
  std::chrono::nanoseconds fraction{0};
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = 100'000'000;
    size_t digits = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      fraction += std::chrono::nanoseconds((text[pos] - '0') * scale);
      scale /= 10;
      ++pos;
      ++digits;
    }
    if (digits == 0) return bad();
  }
  int offset_seconds = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '+' ? 1 : -1;
    ++pos;
    int oh = 0, om = 0;
    if (!ReadDigits(text, pos, 2, oh) || !Expect(text, pos, ':') || !ReadDigits(text, pos, 2, om)) {
      return bad();
    }
    offset_seconds = sign * (oh * 3600 + om * 60);
  } else {
    return bad();
  }
  if (pos != text.size()) return bad();
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t secs = timegm(&tm) - offset_seconds;
  // SystemTime counts nanoseconds in an int64: beyond about ±292 years of 1970 the conversion
  // overflows (undefined behaviour; "1013-01-02T03:04:05Z" came back as a time in 1597).
  if (secs < -kMaxRfc3339Seconds || secs > kMaxRfc3339Seconds) {
    return InvalidArgumentError(fmt::format("RFC 3339 time \"{}\" is outside the years 1678-2261", text));
  }
  return std::chrono::system_clock::from_time_t(secs) +
         std::chrono::duration_cast<SystemTime::duration>(fraction);
}

}  // namespace phalanx::op
