// `phalanx explain NS/NAME`: why a pod (or its gang) is pending, in words. The extender owns the
// answer (it holds the ledger, the gang plans and the admission queue); this command only asks
// its debug endpoint, GET <extender>/debug/explain?pod=NS/NAME on --metrics-addr, and prints it.
// For a running gang the answer includes what protects it as a preemption victim
// (docs/algorithms.md §8.3): "preemptible after 14:05:10 UTC (min run 15m; ...)" or
// "preempted 1/1 today: not preemptible until 09:12:00 UTC".
// Typical use from a laptop:
//   kubectl -n phalanx-system port-forward deploy/phalanx-scheduler 8080 &
//   phalanx explain team-a/llama-a1-0
#include <cstdlib>
#include <iostream>
#include <string>

#include <fmt/format.h>
// cpprest's U() macro breaks fmt's headers; this file needs neither.
#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/http_client.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"

namespace phalanx::cli {
namespace {

struct ExplainFlags {
  std::string pod;  // NS/NAME
  std::string extender_url;
  int timeout_seconds = 10;
  bool json = false;
};

// Prints a JSON explanation for humans. The extender's document (docs/extender.md) carries a
// one-line `summary` and a list of `reasons`; anything else it adds is shown as key: value so a
// newer extender never hides information from an older CLI.
void PrintExplanation(const nlohmann::json& doc) {
  if (!doc.is_object()) {
    std::cout << doc.dump(2) << "\n";
    return;
  }
  for (const char* key : {"summary", "explanation", "message"}) {
    if (doc.contains(key) && doc[key].is_string()) std::cout << doc[key].get<std::string>() << "\n";
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "summary" || key == "explanation" || key == "message") continue;
    if (value.is_array()) {
      std::cout << key << ":\n";
      for (const auto& item : value) {
        std::cout << "  - " << (item.is_string() ? item.get<std::string>() : item.dump()) << "\n";
      }
    } else {
      std::cout << key << ": " << (value.is_string() ? value.get<std::string>() : value.dump()) << "\n";
    }
  }
}

int RunExplain(const ExplainFlags& flags) {
  const auto slash = flags.pod.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == flags.pod.size() ||
      flags.pod.find('/', slash + 1) != std::string::npos) {
    std::cerr << "phalanx explain: expected NAMESPACE/NAME, got '" << flags.pod << "'\n";
    return 2;
  }
  try {
    web::http::client::http_client_config config;
    config.set_timeout(std::chrono::seconds(flags.timeout_seconds));
    web::http::client::http_client client(flags.extender_url, config);
    web::uri_builder path("/debug/explain");
    path.append_query("pod", flags.pod);
    web::http::http_response response = client.request(web::http::methods::GET, path.to_string()).get();
    const std::string body = response.extract_utf8string(true).get();
    if (response.status_code() != web::http::status_codes::OK) {
      std::cerr << fmt::format("phalanx explain: extender answered HTTP {}: {}\n", response.status_code(), body);
      return 1;
    }
    const std::string type = response.headers().content_type();
    if (flags.json || type.find("json") == std::string::npos) {
      std::cout << body << (body.ends_with('\n') ? "" : "\n");
      return 0;
    }
    auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      std::cout << body << "\n";
      return 0;
    }
    PrintExplanation(doc);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << fmt::format(
        "phalanx explain: cannot reach the extender at {}: {}\n"
        "  (is it running? from outside the cluster: kubectl -n phalanx-system port-forward "
        "deploy/phalanx-scheduler 8080, or set --extender / PHALANX_EXTENDER_URL)\n",
        flags.extender_url, e.what());
    return 1;
  }
}

}  // namespace

void RegisterExplainCommand(CommandRegistry& registry) {
  auto flags = std::make_shared<ExplainFlags>();
  const char* env_url = std::getenv("PHALANX_EXTENDER_URL");
  flags->extender_url = env_url != nullptr && *env_url != '\0' ? env_url : "http://127.0.0.1:8080";
  registry.Add({
      .name = "explain",
      .description = "Explain why a pod or its gang is pending, or what protects it from preemption (asks the extender's /debug/explain)",
      .configure =
          [flags](CLI::App& app) {
            app.add_option("pod", flags->pod, "The pod, as NAMESPACE/NAME")->required();
            app.add_option("--extender", flags->extender_url,
                           "Base URL of the extender's --metrics-addr (env PHALANX_EXTENDER_URL)")
                ->capture_default_str();
            app.add_option("--timeout", flags->timeout_seconds, "Seconds to wait for the answer")
                ->check(CLI::Range(1, 600))
                ->capture_default_str();
            app.add_flag("--json", flags->json, "Print the extender's JSON answer as is");
          },
      .run = [flags] { return RunExplain(*flags); },
  });
}

}  // namespace phalanx::cli
