// /fake/* control endpoints: fault injection and inspection for tests that run the
// fake-apiserver binary in another process (in-process tests call FakeApiServer directly).
// Not authenticated and not part of the Kubernetes API.
//   POST   /fake/faults          a rule (faults.h): {"name":"n","verb":"create","resource":"pods",
//                                 "namespace":"ml","client":"phalanx-operator","pathContains":"",
//                                 "kind":"status|timeout|reset|slow|watch-gone|watch-close|watch-stall",
//                                 "code":429,"retryAfterSeconds":1,"after":0,"count":2 (-1: until
//                                 cleared),"probability":0.2,"seed":7,"delayMs":500,"afterApply":true}
//   GET    /fake/faults          {"rules":[...],"fired":{"<name>":N}}
//   DELETE /fake/faults          clear rules and latency (fired counts stay)
//   POST   /fake/latency?ms=N    add N ms to every API request
//   POST   /fake/drop-watches    end every watch stream
//   POST   /fake/compact         forget the event history (older versions -> 410)
//   POST   /fake/restart?downMs=N  refuse connections for N ms, then serve again
//   POST   /fake/tokens          {"token":"t","username":"u","uid":"...","groups":["g"]}
//   POST   /fake/seed            an object, an array or a List: inserted as given
//   GET    /fake/requests        the recorded requests
//   GET    /fake/request-counts  {"<client>":{"<verb>":{"<resource>":N}}} (request_counts.h)
//   DELETE /fake/request-counts  start counting from zero
//   GET    /fake/state           {"resourceVersion":N,"watches":N}
#pragma once

#include "core/http/http_server.h"

namespace phalanx::fakes::apiserver {

class FakeApiServer;
class Scheduler;

void AddControlEndpoints(http::HttpServer& server, FakeApiServer& fake, Scheduler& scheduler);

}  // namespace phalanx::fakes::apiserver
