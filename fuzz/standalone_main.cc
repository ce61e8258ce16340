// The fuzz smoke (`make test`, ctest label `fuzz`): a main() for a fuzz target in the g++ build,
// where libFuzzer is not available. It replays every file of the directories it is given (the
// committed corpus and the regression inputs of past findings), then runs -runs=N deterministic
// mutations of them: bit flips, byte insertions and deletions, truncation, splicing two inputs,
// repeating a slice, and interesting bytes ({ } [ ] " : , \ NUL 0xff, newline). The seed is fixed,
// so a failure reproduces: the input that broke the contract is written to -crash_dir (default
// the working directory) before the target aborts, like libFuzzer's crash-<id> files.
//   <target> [-runs=N] [-seed=S] [-max_len=BYTES] [-crash_dir=DIR] DIR_OR_FILE...
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::string g_crash_path;       // where the current input goes if the target aborts
const std::string* g_current = nullptr;

void SaveCurrentInput() {
  if (g_current == nullptr || g_crash_path.empty()) return;
  if (std::FILE* f = std::fopen(g_crash_path.c_str(), "wb")) {
    std::fwrite(g_current->data(), 1, g_current->size(), f);
    std::fclose(f);
    std::fprintf(stderr, "fuzz smoke: the failing input is in %s\n", g_crash_path.c_str());
  }
}

extern "C" void OnAbort(int) {
  SaveCurrentInput();
  std::signal(SIGABRT, SIG_DFL);
  std::abort();
}

void Run(const std::string& input) {
  g_current = &input;
  // A copy of exactly `size` bytes, so reads past the end are not hidden by std::string's NUL.
  std::vector<uint8_t> bytes(input.begin(), input.end());
  LLVMFuzzerTestOneInput(bytes.empty() ? nullptr : bytes.data(), bytes.size());
  g_current = nullptr;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string Mutate(const std::vector<std::string>& pool, std::mt19937_64& rng, size_t max_len) {
  static constexpr char kInteresting[] = {'{', '}', '[', ']', '"', ':', ',', '\\', '\0', '\xff',
                                          '\n', '-', '0', '9', 'e', ' ', '\'', '#', '&', '*'};
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  std::string s = pool.empty() ? std::string() : pool[pick(pool.size())];
  const int rounds = 1 + static_cast<int>(pick(4));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(8)) {
      case 0:  // bit flip
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // interesting byte replaces one
        if (!s.empty()) s[pick(s.size())] = kInteresting[pick(sizeof kInteresting)];
        break;
      case 2:  // insert an interesting byte
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)), kInteresting[pick(sizeof kInteresting)]);
        break;
      case 3:  // delete a run
        if (!s.empty()) {
          const size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        }
        break;
      case 4:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 5: {  // splice: a prefix of this one, a suffix of another
        const std::string& other = pool.empty() ? s : pool[pick(pool.size())];
        s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
        break;
      }
      case 6:  // repeat a slice (deep nesting, long lists)
        if (!s.empty()) {
          const size_t at = pick(s.size());
          const std::string slice = s.substr(at, 1 + pick(std::min<size_t>(32, s.size() - at)));
          const size_t times = 1 + pick(64);
          std::string rep;
          for (size_t i = 0; i < times; ++i) rep += slice;
          s.insert(at, rep);
        }
        break;
      default:  // a random byte somewhere
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
    }
  }
  if (s.size() > max_len) s.resize(max_len);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 2000;
  uint64_t seed = 1;
  size_t max_len = 64 * 1024;
  fs::path crash_dir = ".";
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("-runs=", 0) == 0) {
      runs = std::strtol(arg.c_str() + 6, nullptr, 10);
    } else if (arg.rfind("-seed=", 0) == 0) {
      seed = std::strtoull(arg.c_str() + 6, nullptr, 10);
    } else if (arg.rfind("-max_len=", 0) == 0) {
      max_len = std::strtoull(arg.c_str() + 9, nullptr, 10);
    } else if (arg.rfind("-crash_dir=", 0) == 0) {
      crash_dir = arg.substr(11);
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "usage: %s [-runs=N] [-seed=S] [-max_len=BYTES] [-crash_dir=DIR] DIR_OR_FILE...\n", argv[0]);
      return 2;
    } else {
      inputs.emplace_back(arg);
    }
  }
  g_crash_path = (crash_dir / fs::path(argv[0]).filename()).string() + ".crash";
  std::signal(SIGABRT, OnAbort);

  std::vector<fs::path> files;
  for (const fs::path& p : inputs) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& entry : fs::directory_iterator(p)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    }  // a directory that does not exist yet (no regressions) is fine
  }
  std::sort(files.begin(), files.end());

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> pool;
  pool.reserve(files.size());
  for (const fs::path& f : files) {
    pool.push_back(ReadFile(f));
    Run(pool.back());
  }
  Run(std::string());  // the empty input
  std::mt19937_64 rng(seed);
  for (long i = 0; i < runs; ++i) Run(Mutate(pool, rng, max_len));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz smoke %s: %zu files replayed, %ld mutations, %.2f s, no contract broken\n",
              fs::path(argv[0]).filename().c_str(), files.size(), runs, seconds);
  return 0;
}
