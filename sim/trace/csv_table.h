// Minimal CSV reading for trace files: a header row names the columns, fields are
// comma-separated without quoting (all supported traces are), '#' starts a comment line.
// Errors name the file and line.
#pragma once

#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/result.h"

namespace phalanx::sim {

class CsvTable {
 public:
  static Result<CsvTable> Open(const std::string& path);

  // Column index by (trimmed) header name; nullopt if absent.
  std::optional<int> Column(std::string_view name) const;
  // InvalidArgument naming the file and the missing column.
  Result<int> RequireColumn(std::string_view name) const;

  // Next data row (blank and '#' lines skipped); false at end of file.
  bool Next();
  int line() const { return line_; }
  const std::string& path() const { return path_; }
  // Trimmed field `col` of the current row ("" if the row is shorter).
  std::string_view Field(int col) const;

  // Typed fields; errors read "<file>:<line>: <column>: <problem>".
  Result<double> Double(int col) const;
  Result<int64_t> Int(int col) const;
  Status Error(int col, std::string_view problem) const;

 private:
  std::string path_;
  std::ifstream in_;
  std::vector<std::string> header_;
  std::string row_;
  std::vector<std::string_view> fields_;
  int line_ = 0;
};

// Deterministic per-job randomness for readers that assign tiers/checkpoints by a
// seeded rule: a uniform value in [0, 1) from (seed, index, salt) (splitmix64).
double SeededUnit(uint64_t seed, uint64_t index, uint64_t salt);

}  // namespace phalanx::sim
