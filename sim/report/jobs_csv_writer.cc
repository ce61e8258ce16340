// --jobs-csv: every job's fate under every policy, one CSV row each (docs/simulator.md
// "Per-job results"). Text fields are quoted as RFC 4180 asks (only when they hold a comma,
// a quote or a line break, so plain values stay awk-friendly); lines end in "\n".
#include <iterator>

#include <fmt/format.h>

#include "sim/report/writers.h"

namespace phalanx::sim {
namespace {

void AppendText(std::string& out, const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) {
    out += text;
    return;
  }
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

// "" for a time that never happened (< 0). Numbers are written as the shortest text that
// reads back as the same double ("{}"), so means over the file match the report's own.
void AppendTime(std::string& out, double seconds) {
  if (seconds >= 0) fmt::format_to(std::back_inserter(out), "{}", seconds);
}

const char* OutcomeName(JobOutcome o) {
  switch (o) {
    case JobOutcome::kDone: return "done";
    case JobOutcome::kUnfinished: return "unfinished";
    case JobOutcome::kNeverFits: return "never-fits";
  }
  return "unfinished";
}

}  // namespace

std::string RenderJobsCsv(const std::vector<PolicyReport>& policies) {
  std::string out =
      "policy,job,name,tier,queue,pool,members,gpus_per_member,mig_profile,submit,queueing_seconds,first_start,"
      "finish,preemptions,lost_gpu_hours,first_node_group,outcome\n";
  for (const PolicyReport& p : policies) {
    for (const JobResult& j : p.job_results) {
      AppendText(out, p.policy);
      fmt::format_to(std::back_inserter(out), ",{},", j.job);
      AppendText(out, j.name);
      out += ',';
      AppendText(out, j.tier);
      out += ',';
      AppendText(out, j.queue);
      out += ',';
      AppendText(out, j.pool);
      fmt::format_to(std::back_inserter(out), ",{},{},", j.members, j.gpus_per_member);
      AppendText(out, j.mig_profile);
      fmt::format_to(std::back_inserter(out), ",{},{},", j.submit, j.queueing_s);
      AppendTime(out, j.first_start);
      out += ',';
      AppendTime(out, j.finish);
      fmt::format_to(std::back_inserter(out), ",{},{},", j.preemptions, j.lost_gpu_hours);
      AppendText(out, j.first_node_group);
      out += ',';
      out += OutcomeName(j.outcome);
      out += '\n';
    }
  }
  return out;
}

}  // namespace phalanx::sim
