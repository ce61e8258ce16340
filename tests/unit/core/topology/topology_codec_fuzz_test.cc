// Random-mutation robustness: the reference documents mutated with a seeded RNG must
// decode to either a valid topology that round-trips, or InvalidArgument with a message
// that starts with a JSON path — never a crash, hang or other status code.
// Deterministic by default; PHALANX_FUZZ_SEED=<n> and PHALANX_FUZZ_ROUNDS=<n> explore
// further by hand (e.g. under ASan), and a failure prints the document to replay.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/topology/reference_machines.h"
#include "core/topology/topology_codec.h"

namespace phalanx::topology {
namespace {

using nlohmann::json;

constexpr uint32_t kSeed = 20240607;
constexpr int kByteMutationsPerDoc = 350;
constexpr int kTreeMutationsPerDoc = 350;

const char* const kFragments[] = {"\"",
                                  "{",
                                  "}",
                                  "[",
                                  "]",
                                  ",",
                                  ":",
                                  "-1",
                                  "1e309",
                                  "null",
                                  "true",
                                  "\"NV4\"",
                                  "\"X\"",
                                  "\"SYS\"",
                                  "99999999999999999999",
                                  "0",
                                  "\\u0000",
                                  "\"GPU-dup\"",
                                  "{\"a\":[[[]]]}",
                                  "\xff",
                                  " "};

std::string MutateBytes(std::string doc, std::mt19937& rng) {
  auto pick = [&rng](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int edits = 1 + static_cast<int>(pick(3));
  for (int e = 0; e < edits && !doc.empty(); ++e) {
    size_t at = pick(doc.size());
    switch (pick(5)) {
      case 0:  // overwrite one byte with any byte value
        doc[at] = static_cast<char>(pick(256));
        break;
      case 1:  // delete a short range
        doc.erase(at, 1 + pick(16));
        break;
      case 2:  // duplicate a range in place
        doc.insert(at, doc.substr(at, 1 + pick(64)));
        break;
      case 3:  // insert a JSON-ish fragment
        doc.insert(at, kFragments[pick(std::size(kFragments))]);
        break;
      default:  // swap a digit for another digit: keeps the syntax, changes the meaning
        for (size_t k = at; k < doc.size(); ++k) {
          if (doc[k] >= '0' && doc[k] <= '9') {
            doc[k] = static_cast<char>('0' + pick(10));
            break;
          }
        }
        break;
    }
  }
  return doc;
}

json RandomValue(std::mt19937& rng, const json& donor) {
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0:
      return nullptr;
    case 1:
      return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    case 2:
      return std::uniform_int_distribution<int64_t>(-3, 80)(rng);
    case 3:
      return std::uniform_int_distribution<uint64_t>(0, UINT64_MAX)(rng);
    case 4:
      return std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
    case 5:
      return "NV" + std::to_string(std::uniform_int_distribution<int>(0, 70)(rng));
    case 6:
      return json::array();
    case 7:
      return json::object();
    case 8:
      return std::string(std::uniform_int_distribution<size_t>(0, 300)(rng), 'G');
    default:
      return donor;  // a value of the right shape from elsewhere in the document
  }
}

// Collects pointers to every value in the tree (iteratively; the tree is shallow).
std::vector<json*> AllValues(json& root) {
  std::vector<json*> out = {&root};
  for (size_t k = 0; k < out.size(); ++k) {
    json& v = *out[k];
    if (v.is_structured()) {
      for (auto& child : v) out.push_back(&child);
    }
  }
  return out;
}

std::string MutateTree(const std::string& text, std::mt19937& rng) {
  json doc = json::parse(text);
  int edits = 1 + std::uniform_int_distribution<int>(0, 2)(rng);
  for (int e = 0; e < edits; ++e) {
    std::vector<json*> values = AllValues(doc);
    auto pick = [&rng](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    json& target = *values[pick(values.size())];
    json donor = *values[pick(values.size())];
    switch (pick(4)) {
      case 0:
        if (&target != &doc) target = RandomValue(rng, donor);
        break;
      case 1:  // drop a key or an element
        if (target.is_object() && !target.empty()) {
          auto it = target.begin();
          std::advance(it, static_cast<long>(pick(target.size())));
          target.erase(it);
        } else if (target.is_array() && !target.empty()) {
          target.erase(pick(target.size()));
        }
        break;
      case 2:  // duplicate an element (duplicate GPUs, MIG devices, rows)
        if (target.is_array() && !target.empty()) {
          json copy = target[pick(target.size())];
          target.push_back(std::move(copy));
        }
        break;
      default:  // swap two elements (out-of-order GPUs, asymmetric rows)
        if (target.is_array() && target.size() >= 2) {
          size_t a = pick(target.size());
          size_t b = pick(target.size());
          if (a != b) std::swap(target[a], target[b]);
        }
        break;
    }
  }
  return doc.dump();
}

uint32_t EnvOr(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

bool StartsWithPath(const std::string& message) {
  for (const char* prefix :
       {"<root>: ", "version: ", "gpus", "links", "nvlinkDomain: ", "driverVersion: ", "cudaVersion: "}) {
    if (message.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

struct Outcome {
  int accepted = 0;
  int rejected = 0;
};

// Decodes `doc`; fails the test unless the outcome is one of the two allowed ones.
void CheckOne(const std::string& doc, Outcome& outcome) {
  Result<NodeTopology> r = DecodeTopology(doc);
  if (r.ok()) {
    ++outcome.accepted;
    // Whatever is accepted is a valid topology: it encodes, and re-decodes to itself.
    Result<std::string> again = EncodeTopology(*r);
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << doc;
    Result<NodeTopology> back = DecodeTopology(*again);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, *r) << doc;
  } else {
    ++outcome.rejected;
    ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status() << "\n" << doc;
    ASSERT_TRUE(StartsWithPath(r.status().message())) << r.status();
  }
}

TEST(TopologyCodecFuzzTest, MutatedReferenceDocumentsNeverCrashTheDecoder) {
  std::mt19937 rng(EnvOr("PHALANX_FUZZ_SEED", kSeed));
  const int rounds = static_cast<int>(EnvOr("PHALANX_FUZZ_ROUNDS", 1));
  Outcome outcome;
  for (int round = 0; round < rounds; ++round) {
    for (NodeTopology (*build)() : {&MakeDgxH100Node, &MakeA100MigNode, &MakePcie4GpuNode}) {
      const std::string original = *EncodeTopology(build());
      for (int n = 0; n < kByteMutationsPerDoc + kTreeMutationsPerDoc; ++n) {
        std::string doc = n < kByteMutationsPerDoc ? MutateBytes(original, rng) : MutateTree(original, rng);
        ASSERT_NO_FATAL_FAILURE(CheckOne(doc, outcome));
      }
    }
  }
  EXPECT_EQ(outcome.accepted + outcome.rejected, rounds * 3 * (kByteMutationsPerDoc + kTreeMutationsPerDoc));
  // Both outcomes occur, so the mutations exercise the semantic checks and not only the
  // JSON parser.
  EXPECT_GT(outcome.accepted, rounds * 50);
  EXPECT_GT(outcome.rejected, rounds * 1000);
}

}  // namespace
}  // namespace phalanx::topology
