#include "operator/lifecycle/preempt_request.h"

#include "core/json/json.h"
#include "operator/api/time_format.h"

namespace phalanx::op {

Result<PreemptRequest> ParsePreemptRequest(std::string_view text) {
  PHX_ASSIGN_OR_RETURN(json::Json j, json::Parse(text, 64 * 1024));
  const std::string path = "phalanx.io/preempt-request";
  PreemptRequest r;
  PHX_ASSIGN_OR_RETURN(r.request_id, json::GetString(j, "requestId", path));
  if (r.request_id.empty()) return InvalidArgumentError(path + ".requestId: must not be empty");
  PHX_ASSIGN_OR_RETURN(std::string deadline, json::GetString(j, "deadline", path));
  auto t = ParseRfc3339(deadline);
  if (!t.ok()) return t.status().WithContext(path + ".deadline");
  r.deadline = *t;
  if (j.contains("reason") && j["reason"].is_string()) r.reason = j["reason"].get<std::string>();
  if (j.contains("preemptor") && j["preemptor"].is_string()) r.preemptor = j["preemptor"].get<std::string>();
  return r;
}

std::string EncodePreemptNotice(const std::string& request_id, SystemTime deadline) {
  return json::Dump(json::Json{{"requestId", request_id}, {"deadline", FormatRfc3339(deadline)}});
}

}  // namespace phalanx::op
