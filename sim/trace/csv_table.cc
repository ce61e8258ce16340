#include "sim/trace/csv_table.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace phalanx::sim {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

void Split(std::string_view row, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  while (true) {
    size_t comma = row.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(Trim(row.substr(start)));
      return;
    }
    out.push_back(Trim(row.substr(start, comma - start)));
    start = comma + 1;
  }
}

}  // namespace

Result<CsvTable> CsvTable::Open(const std::string& path) {
  CsvTable t;
  t.path_ = path;
  t.in_.open(path, std::ios::binary);
  if (!t.in_) return NotFoundError(fmt::format("cannot open trace {}", path));
  std::string line;
  while (std::getline(t.in_, line)) {
    ++t.line_;
    std::string_view v = Trim(line);
    if (v.empty() || v.front() == '#') continue;
    std::vector<std::string_view> cols;
    Split(v, cols);
    for (auto c : cols) t.header_.emplace_back(c);
    return t;
  }
  return InvalidArgumentError(fmt::format("{}: empty file (expected a header row)", path));
}

std::optional<int> CsvTable::Column(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == name) return static_cast<int>(i);
  return std::nullopt;
}

Result<int> CsvTable::RequireColumn(std::string_view name) const {
  if (auto c = Column(name)) return *c;
  return InvalidArgumentError(fmt::format("{}: missing column \"{}\" in the header (has: {})", path_, name,
                                          fmt::join(header_, ",")));
}

bool CsvTable::Next() {
  while (std::getline(in_, row_)) {
    ++line_;
    std::string_view v = Trim(row_);
    if (v.empty() || v.front() == '#') continue;
    Split(v, fields_);
    return true;
  }
  return false;
}

std::string_view CsvTable::Field(int col) const {
  return static_cast<size_t>(col) < fields_.size() ? fields_[static_cast<size_t>(col)] : std::string_view();
}

Status CsvTable::Error(int col, std::string_view problem) const {
  const std::string name = static_cast<size_t>(col) < header_.size() ? header_[static_cast<size_t>(col)] : "?";
  return InvalidArgumentError(fmt::format("{}:{}: {}: {}", path_, line_, name, problem));
}

Result<double> CsvTable::Double(int col) const {
  std::string_view f = Field(col);
  if (f.empty()) return Error(col, "missing value");
  double v = 0;
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || p != f.data() + f.size()) return Error(col, fmt::format("not a number: \"{}\"", f));
  // from_chars reads "nan" and "inf": a NaN submit time breaks the sort by submit time.
  if (!std::isfinite(v)) return Error(col, fmt::format("not a finite number: \"{}\"", f));
  return v;
}

Result<int64_t> CsvTable::Int(int col) const {
  std::string_view f = Field(col);
  if (f.empty()) return Error(col, "missing value");
  int64_t v = 0;
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || p != f.data() + f.size()) {
    // Accept integral values written as floats ("8.0").
    double d = 0;
    auto [p2, ec2] = std::from_chars(f.data(), f.data() + f.size(), d);
    // The range check first: casting a double outside int64_t ("1e30") is undefined.
    if (ec2 == std::errc() && p2 == f.data() + f.size() && std::fabs(d) < 9.2e18 &&
        d == static_cast<double>(static_cast<int64_t>(d)))
      return static_cast<int64_t>(d);
    return Error(col, fmt::format("not an integer: \"{}\"", f));
  }
  return v;
}

double SeededUnit(uint64_t seed, uint64_t index, uint64_t salt) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + index * 0xBF58476D1CE4E5B9ULL + salt * 0x94D049BB133111EBULL + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace phalanx::sim
