// The benchmark gate's yardstick (bench/check): a fixed CPU workload of the kinds the measured
// code does — sorting structs, hash-map inserts and lookups, string building — timed on this
// machine now. The gate divides each measured time by this one, so a committed baseline holds
// on a faster or slower (or busier) machine; only a change in the code moves the ratio.
// Prints {"seconds": <best of --reps>} on stdout.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Item {
  std::uint64_t key;
  int size;
  double score;
};

// Deterministic: the same work on every run, nothing the optimiser can drop (the checksum is printed).
std::uint64_t Workload() {
  std::uint64_t x = 88172645463325252ULL, sum = 0;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::vector<Item> items(200'000);
  for (auto& it : items) it = {next(), static_cast<int>(next() % 64), static_cast<double>(next() % 1000) / 7.0};
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.size != b.size ? a.size > b.size : a.score != b.score ? a.score < b.score : a.key < b.key;
  });
  std::unordered_map<std::string, std::uint64_t> names;
  names.reserve(50'000);
  std::string name;
  for (int i = 0; i < 100'000; ++i) {
    name.assign("node-");
    name += std::to_string(next() % 50'000);
    names[name] += static_cast<std::uint64_t>(i);
  }
  for (const auto& it : items) sum += it.key ^ static_cast<std::uint64_t>(it.size);
  for (const auto& [k, v] : names) sum += v + k.size();
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  }
  double best = 1e9;
  std::uint64_t check = 0;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    check ^= Workload();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("{\"seconds\": %.6f, \"checksum\": %llu}\n", best, static_cast<unsigned long long>(check));
  return 0;
}
