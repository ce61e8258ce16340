// The preempt reply with nodeCacheCapable: false. kube-scheduler sends full Pods in
// NodeNameToVictims but reads back only NodeNameToMetaVictims (HTTPExtender.ProcessPreemption
// converts the reply's UIDs against its node cache), so an answer in NodeNameToVictims would be
// read as "no victims": preemption silently vetoed.
#include <gtest/gtest.h>

#include "core/json/json.h"
#include "extender/verbs/wire.h"

namespace phalanx::extender {
namespace {

// Shaped like tests/data/fixtures/kube-scheduler-v1.26/preempt-001 with the full-Pods map.
constexpr std::string_view kFullModeRequest =
    R"({"Pod":{"metadata":{"name":"preemptor-high","namespace":"default","uid":"1a7a6043"},)"
    R"("spec":{"containers":[{"name":"main","resources":{"requests":{"nvidia.com/gpu":"1"}}}],"priority":1000}},)"
    R"("NodeNameToVictims":{"fake-gpu-node-2":{"Pods":[)"
    R"({"metadata":{"name":"victim-low","namespace":"default","uid":"c0a012a6"},)"
    R"("spec":{"nodeName":"fake-gpu-node-2","containers":[{"name":"main"}]},"status":{"phase":"Running"}}],)"
    R"("NumPDBViolations":1}},"NodeNameToMetaVictims":null})";

TEST(PreemptWireTest, FullModeVictimsAreParsedFromPods) {
  auto args = ParsePreemptArgs(kFullModeRequest);
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_FALSE(args->meta);
  EXPECT_EQ(args->victims.at("fake-gpu-node-2"), std::vector<std::string>{"c0a012a6"});
  EXPECT_EQ(args->pdb_violations.at("fake-gpu-node-2"), 1);
  EXPECT_TRUE(args->raw_pods.contains("c0a012a6"));
}

TEST(PreemptWireTest, FullModeReplyIsMetaVictims) {
  auto args = ParsePreemptArgs(kFullModeRequest);
  ASSERT_TRUE(args.ok());
  PreemptResult r;
  r.meta = false;
  r.victims["fake-gpu-node-2"] = {"c0a012a6"};
  r.pdb_violations["fake-gpu-node-2"] = 1;
  const json::Json reply = json::Json::parse(EncodePreemptResult(r, *args));
  ASSERT_TRUE(reply["NodeNameToMetaVictims"].is_object()) << reply.dump();
  EXPECT_TRUE(reply["NodeNameToVictims"].is_null());
  const json::Json& node = reply["NodeNameToMetaVictims"]["fake-gpu-node-2"];
  ASSERT_EQ(node["Pods"].size(), 1u);
  EXPECT_EQ(node["Pods"][0]["UID"], "c0a012a6");
  EXPECT_EQ(node["NumPDBViolations"], 1);
}

TEST(PreemptWireTest, FullModeReplyNamesOnlyPodsTheSchedulerSent) {
  auto args = ParsePreemptArgs(kFullModeRequest);
  ASSERT_TRUE(args.ok());
  PreemptResult r;
  r.meta = false;
  r.victims["fake-gpu-node-2"] = {"c0a012a6", "not-offered"};
  const json::Json reply = json::Json::parse(EncodePreemptResult(r, *args));
  EXPECT_EQ(reply["NodeNameToMetaVictims"]["fake-gpu-node-2"]["Pods"].size(), 1u) << reply.dump();
}

TEST(PreemptWireTest, FullModeVetoIsAnEmptyMetaMap) {
  auto args = ParsePreemptArgs(kFullModeRequest);
  ASSERT_TRUE(args.ok());
  PreemptResult veto;
  veto.meta = false;
  EXPECT_EQ(EncodePreemptResult(veto, *args), R"({"NodeNameToVictims":null,"NodeNameToMetaVictims":{}})");
}

}  // namespace
}  // namespace phalanx::extender
