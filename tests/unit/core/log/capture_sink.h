// A LoggerFactory whose records land in a string, for tests.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>

#include "core/log/logger_factory.h"

namespace phalanx::log::testing {

class CapturedLogs {
 public:
  explicit CapturedLogs(LogOptions options = {})
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)), factory_({sink_}, options) {}

  LoggerFactory& factory() { return factory_; }
  std::string text() const { return out_.str(); }
  std::vector<std::string> lines() const {
    std::vector<std::string> result;
    std::istringstream in(out_.str());
    std::string line;
    while (std::getline(in, line)) result.push_back(line);
    return result;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  LoggerFactory factory_;
};

}  // namespace phalanx::log::testing
