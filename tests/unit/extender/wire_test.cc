// Wire format edge cases: nulls, missing lists, malformed JSON, exact reply shapes.
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "extender/objects/k8s_objects.h"
#include "extender/verbs/wire.h"

namespace phalanx::extender {
namespace {

constexpr std::string_view kPod =
    R"({"metadata":{"name":"p","namespace":"ns","uid":"u1"},"spec":{"containers":[{"name":"c",)"
    R"("resources":{"limits":{"nvidia.com/gpu":"2"}}}]}})";

std::string Body(std::string_view rest) { return std::string(R"({"Pod":)") + std::string(kPod) + std::string(rest) + "}"; }

TEST(WireTest, ParsesNodeNamesWithNodesNull) {
  json::FastJsonParser parser;
  auto args = ParseFilterArgs(Body(R"(,"Nodes":null,"NodeNames":["a","b"])"), parser);
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(args->node_names, (std::vector<std::string_view>{"a", "b"}));
  EXPECT_FALSE(args->full_nodes);
  EXPECT_EQ(args->pod.gpus, 2);
  EXPECT_EQ(args->pod.gpu_container, "c");
  EXPECT_EQ(args->pod.Key(), "ns/p");
}

// Plain names are viewed in place between their quotes (in the parser's padded copy of the
// body); escaped ones are unescaped; spaces around tokens and non-strings as before.
TEST(WireTest, NodeNamesReadPlainInPlaceAndEscapedUnescaped) {
  json::FastJsonParser parser;
  const std::string body = Body(R"(,"NodeNames":[ "a" , "b\"c","d\u0041",  "e\\f" ,"" ])");
  auto args = ParseFilterArgs(body, parser);
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(args->node_names, (std::vector<std::string_view>{"a", "b\"c", "dA", "e\\f", ""}));
  for (const char* bad : {R"(,"NodeNames":["a",1])", R"(,"NodeNames":["a",null])", R"(,"NodeNames":[{"x":"y"}])"}) {
    auto r = ParseFilterArgs(Body(bad), parser);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("NodeNames[]"), std::string::npos) << r.status().message();
  }
}

TEST(WireTest, MissingOrNullListsMeanNoCandidates) {
  json::FastJsonParser parser;
  for (const char* rest : {"", R"(,"NodeNames":null)", R"(,"Nodes":null,"NodeNames":null)", R"(,"NodeNames":[])"}) {
    auto args = ParseFilterArgs(Body(rest), parser);
    ASSERT_TRUE(args.ok()) << rest;
    EXPECT_TRUE(args->node_names.empty()) << rest;
  }
}

TEST(WireTest, FullNodesListGivesNamesAndRawItems) {
  json::FastJsonParser parser;
  auto args = ParseFilterArgs(
      Body(R"(,"Nodes":{"metadata":{},"items":[{"metadata":{"name":"n1"}},{"metadata":{"name":"n2"}}]},"NodeNames":null)"),
      parser);
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_TRUE(args->full_nodes);
  EXPECT_EQ(args->node_names, (std::vector<std::string_view>{"n1", "n2"}));
  ASSERT_EQ(args->raw_nodes.size(), 2u);
  EXPECT_EQ(args->raw_nodes[1], R"({"metadata":{"name":"n2"}})");
}

std::string ReadRegression(const std::string& name) {
  std::ifstream in(std::string(PHALANX_TEST_SOURCE_DIR) + "/fuzz/regressions/extender_filter_args/" + name,
                   std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// libFuzzer (make fuzz, 2026-11-29): a malformed body parsed right after a longer one, with the
// same parser as the server's thread keeps it. simdjson's raw_json_token() walked structural
// indexes the longer document had left and gave a view ~4 GB long: reading it crashed the extender.
// Since FastJsonParser zeroes its padding simdjson reports the structure; Contains() still guards.
TEST(WireTest, AMalformedBodyAfterALongerOneIsAnErrorNotAWildRead) {
  const std::string longer = ReadRegression("stale-index-1-longer-document");
  const std::string malformed = ReadRegression("stale-index-2-malformed-after-it");
  ASSERT_GT(longer.size(), malformed.size());
  json::FastJsonParser parser;
  (void)ParseFilterArgs(longer, parser);
  auto args = ParseFilterArgs(malformed, parser);
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().message().rfind("NodeNames[]: ", 0), 0u) << args.status().message();
}

TEST(WireTest, RejectsMalformedInputWithAClearMessage) {
  json::FastJsonParser parser;
  struct Case {
    std::string body;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{{"{", "JSON"},
                                         {"[]", "expected an object"},
                                         {R"({"NodeNames":["a"]})", "Pod: missing"},
                                         {R"({"Pod":null,"NodeNames":["a"]})", "Pod: missing"},
                                         {Body(R"(,"NodeNames":"a")"), "NodeNames: expected an array"},
                                         {Body(R"(,"NodeNames":[1])"), "NodeNames[]"},
                                         {R"({"Pod":{"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1.5"}}}]}}})",
                                          "nvidia.com/gpu"}}) {
    auto args = ParseFilterArgs(c.body, parser);
    ASSERT_FALSE(args.ok()) << c.body;
    EXPECT_NE(std::string(args.status().message()).find(c.expect), std::string::npos)
        << c.body << " -> " << args.status().message();
  }
}

TEST(WireTest, EncodesFilterResultWithGoFieldNames) {
  FilterResult r;
  r.passed = {"a"};
  r.failed = {{"b", "Insufficient \"gpu\""}};
  EXPECT_EQ(EncodeFilterResult(r),
            R"({"Nodes":null,"NodeNames":["a"],"FailedNodes":{"b":"Insufficient \"gpu\""},)"
            R"("FailedAndUnresolvableNodes":{},"Error":""})");
  FilterResult empty;
  EXPECT_EQ(EncodeFilterResult(empty),
            R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");
}

// Shared reasons are escaped once and reused; past the cache's few entries every reason is
// still escaped in full. The reply must read the same either way.
TEST(WireTest, SharedFailReasonsEncodeLikeCopies) {
  const FailReason shared("held by \"tier\" 0");
  FilterResult r;
  std::string want_failed, want_unresolvable;
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) names.push_back("n" + std::to_string(i));
  for (int i = 0; i < 12; ++i) {
    r.failed.emplace_back(names[static_cast<size_t>(i)], shared);
    want_failed += fmt::format("{}\"{}\":\"held by \\\"tier\\\" 0\"", i ? "," : "", names[static_cast<size_t>(i)]);
    // Twelve distinct reasons, each used twice: more than the cache holds.
    const FailReason own(fmt::format("reason\t{}", i));
    r.unresolvable.emplace_back(names[static_cast<size_t>(i)], own);
    r.unresolvable.emplace_back(names[static_cast<size_t>(i)], own);
    want_unresolvable += fmt::format("{}\"{}\":\"reason\\t{}\",\"{}\":\"reason\\t{}\"", i ? "," : "",
                                     names[static_cast<size_t>(i)], i, names[static_cast<size_t>(i)], i);
  }
  EXPECT_EQ(r.failed[3].second.id(), shared.id());
  EXPECT_EQ(EncodeFilterResult(r), "{\"Nodes\":null,\"NodeNames\":[],\"FailedNodes\":{" + want_failed +
                                       "},\"FailedAndUnresolvableNodes\":{" + want_unresolvable + "},\"Error\":\"\"}");
}

// AppendJsonString tests 8 bytes a step before escaping byte by byte: every byte value that
// needs escaping, at every position of strings longer and shorter than a step, and UTF-8, must
// come out as the plain byte-by-byte escape does.
TEST(WireTest, JsonStringEscapesEveryByteThatNeedsItWhereverItIs) {
  auto reference = [](std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"') out += "\\\"";
      else if (c == '\\') out += "\\\\";
      else if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
      else out += c;
    }
    return out + "\"";
  };
  std::vector<char> specials = {'"', '\\', static_cast<char>(0x7f), static_cast<char>(0xc3), static_cast<char>(0xa9)};
  for (int c = 0; c < 0x20; ++c) specials.push_back(static_cast<char>(c));
  for (size_t length : {1u, 7u, 8u, 9u, 16u, 23u}) {
    for (size_t at = 0; at < length; ++at) {
      for (char special : specials) {
        std::string s(length, 'n');
        s[at] = special;
        std::string got;
        AppendJsonString(got, s);
        EXPECT_EQ(got, reference(s)) << "length " << length << ", byte " << static_cast<int>(special) << " at " << at;
      }
    }
  }
}

TEST(WireTest, EncodesPrioritiesAsABareArray) {
  EXPECT_EQ(EncodeHostPriorities({{"a", 10}, {"b", 0}}), R"([{"Host":"a","Score":10},{"Host":"b","Score":0}])");
  EXPECT_EQ(EncodeHostPriorities({}), "[]");
  // Scores outside 0..10 and a name that needs escaping (the appending path) read the same.
  EXPECT_EQ(EncodeHostPriorities({{"a-long-node-name.example", -3}, {"b", 123}}),
            R"([{"Host":"a-long-node-name.example","Score":-3},{"Host":"b","Score":123}])");
  EXPECT_EQ(EncodeHostPriorities({{"a", 1}, {"q\"x", 7}}), R"([{"Host":"a","Score":1},{"Host":"q\"x","Score":7}])");
}

// The counted encoder (every name plain) and the appending one (a name needs escaping) must
// write the same bytes: one reply each way, compared with the text built by hand, names of
// every length around the 8-byte steps of the plain test and the 4/8/16/32-byte copies.
TEST(WireTest, FilterReplyIsTheSameWhetherNamesNeedEscapingOrNot) {
  for (bool escaped : {false, true}) {
    std::vector<std::string> names;
    for (int len = 1; len <= 40; ++len) names.push_back(std::string(static_cast<size_t>(len), 'n') + "-" + std::to_string(len));
    if (escaped) names.push_back("tab\there");
    FilterResult r;
    r.error = "late \"x\"";
    static const std::string kReasonA = "reason a";
    const FailReason a = FailReason::Static(kReasonA), b("reason \"b\"");
    std::string want_passed, want_failed, want_unresolvable;
    auto quote = [](const std::string& n) {
      std::string q = "\"";
      for (char c : n) q += c == '\t' ? std::string("\\t") : std::string(1, c);
      return q + "\"";
    };
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& n = names[i];
      if (i % 3 == 0) {
        r.passed.push_back(n);
        want_passed += (want_passed.empty() ? "" : ",") + quote(n);
      } else if (i % 3 == 1) {
        r.failed.emplace_back(n, a);
        want_failed += (want_failed.empty() ? "" : ",") + quote(n) + R"(:"reason a")";
      } else {
        r.unresolvable.emplace_back(n, i % 2 ? a : b);
        want_unresolvable += (want_unresolvable.empty() ? "" : ",") + quote(n) + (i % 2 ? R"(:"reason a")" : R"(:"reason \"b\"")");
      }
    }
    EXPECT_EQ(EncodeFilterResult(r), R"({"Nodes":null,"NodeNames":[)" + want_passed + R"(],"FailedNodes":{)" +
                                         want_failed + R"(},"FailedAndUnresolvableNodes":{)" + want_unresolvable +
                                         R"(},"Error":"late \"x\""})")
        << (escaped ? "appending" : "counted");
  }
}

// A static reason is shared without an owner: copies keep its identity and text.
TEST(WireTest, StaticFailReasonCopiesShareTheText) {
  static const std::string text = "Insufficient nvidia.com/gpu";
  const FailReason r = FailReason::Static(text);
  const FailReason copy = r;
  EXPECT_EQ(copy.id(), &text);
  EXPECT_EQ(copy.str(), "Insufficient nvidia.com/gpu");
}

TEST(WireTest, PreemptMetaVictimsRoundTrip) {
  auto args = ParsePreemptArgs(std::string(R"({"Pod":)") + std::string(kPod) +
                               R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"v1"}],"NumPDBViolations":1}}})");
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_TRUE(args->meta);
  EXPECT_EQ(args->victims.at("n"), std::vector<std::string>{"v1"});
  PreemptResult r;
  r.victims["n"] = {"v1"};
  r.pdb_violations["n"] = 1;
  EXPECT_EQ(EncodePreemptResult(r, *args),
            R"({"NodeNameToVictims":null,"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"v1"}],"NumPDBViolations":1}}})");
  PreemptResult veto;
  EXPECT_EQ(EncodePreemptResult(veto, *args), R"({"NodeNameToVictims":null,"NodeNameToMetaVictims":{}})");
}

TEST(WireTest, BindArgsNeedNameNamespaceAndNode) {
  auto ok = ParseBindArgs(R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->node, "n");
  auto missing = ParseBindArgs(R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":null})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("Node"), std::string::npos);
  EXPECT_FALSE(ParseBindArgs(R"({"PodName":5})").ok());
  EXPECT_EQ(EncodeBindResult("x\"y"), R"({"Error":"x\"y"})");
}

}  // namespace
}  // namespace phalanx::extender

namespace phalanx::extender {
namespace {

// phalanx.io/devices per container: kubelet allocates container by container, so a pod with
// GPUs in two containers gets each one's devices under its own name (issue 24 §2; before, every
// device went under the first GPU container).
TEST(DeviceAssignmentTest, SplitsThePodsGpusOverItsGpuContainers) {
  auto doc = json::Parse(R"({"metadata":{"name":"p","namespace":"ns","uid":"u1"},"spec":{"containers":[
      {"name":"c1","resources":{"limits":{"nvidia.com/gpu":"1"}}},
      {"name":"side"},
      {"name":"c2","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}})");
  ASSERT_TRUE(doc.ok());
  auto pod = ParsePod(*doc);
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  EXPECT_EQ(pod->gpus, 3);
  const DeviceAssignment got = AssignGpusToContainers(*pod, {"GPU-a", "GPU-b", "GPU-c"});
  EXPECT_EQ(got, (DeviceAssignment{{"c1", {"GPU-a"}}, {"c2", {"GPU-b", "GPU-c"}}}));
  EXPECT_EQ(EncodeDeviceAssignment(got), R"({"c1":["GPU-a"],"c2":["GPU-b","GPU-c"]})");
  EXPECT_TRUE(AssignGpusToContainers(*pod, {}).empty());
  PodInfo unnamed;  // built in code (tests, old records): the first GPU container's name or "main"
  EXPECT_EQ(AssignGpusToContainers(unnamed, {"GPU-a"}), (DeviceAssignment{{"main", {"GPU-a"}}}));
}

}  // namespace
}  // namespace phalanx::extender
