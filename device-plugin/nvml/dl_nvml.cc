#include "device-plugin/nvml/dl_nvml.h"

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace phalanx::nvml {
namespace {

struct EntrySymbol {
  std::string_view method;
  std::string_view symbol;
};

// Every (method, symbol) pair in preference order, for error messages.
constexpr EntrySymbol kEntrySymbols[] = {
#define NVML_SYMBOL(method, symbol) {#method, #symbol},
#include "device-plugin/nvml/nvml_entry_points.inc"
};

// dlsym returns an object pointer; POSIX guarantees it converts to a function
// pointer, which memcpy expresses without a conditionally-supported cast.
template <typename Fn>
Fn ToFunction(void* symbol) {
  Fn fn;
  static_assert(sizeof(fn) == sizeof(symbol));
  std::memcpy(&fn, &symbol, sizeof(fn));
  return fn;
}

std::string CandidateList(std::string_view method) {
  std::string out;
  for (const EntrySymbol& e : kEntrySymbols) {
    if (e.method != method) continue;
    if (!out.empty()) out += "|";
    out += e.symbol;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<DlNvml>> DlNvml::Load(std::string_view path) {
  std::string p(path);
  // RTLD_LOCAL: NVML's symbols must not satisfy other libraries' lookups (and the fake
  // must not leak into the process's global scope between tests).
  void* handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return FailedPreconditionError(
        fmt::format("cannot load NVML library {} (is the NVIDIA driver installed?): {}", p,
                    err != nullptr ? err : "unknown dlopen error"));
  }
  std::unique_ptr<DlNvml> nvml(new DlNvml(handle, std::move(p)));
  PHX_RETURN_IF_ERROR(nvml->ResolveSymbols());
  return nvml;
}

DlNvml::DlNvml(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

DlNvml::~DlNvml() {
  if (handle_ != nullptr) dlclose(handle_);
}

Status DlNvml::ResolveSymbols() {
  // First exported symbol of each method's list wins.
#define NVML_SYMBOL(method, symbol)                          \
  if (method##_ == nullptr) {                                \
    if (void* sym = dlsym(handle_, #symbol)) {               \
      method##_ = ToFunction<method##Fn>(sym);               \
      method##_symbol_ = #symbol;                            \
    }                                                        \
  }
#include "device-plugin/nvml/nvml_entry_points.inc"

  if (void* sym = dlsym(handle_, "nvmlErrorString")) {
    error_string_ = ToFunction<ErrorStringFn>(sym);
  }

  std::vector<std::string> missing;
#define NVML_FUNCTION(method, required, params, args) \
  if ((required) && method##_ == nullptr) missing.push_back(CandidateList(#method));
#include "device-plugin/nvml/nvml_entry_points.inc"
  if (error_string_ == nullptr) missing.push_back("nvmlErrorString");
  if (!missing.empty()) {
    return FailedPreconditionError(fmt::format(
        "{} is not a usable NVML library: missing required symbols {}", path_,
        fmt::join(missing, ", ")));
  }
  return OkStatus();
}

std::string_view DlNvml::ResolvedSymbol(std::string_view method) const {
#define NVML_FUNCTION(m, required, params, args) \
  if (method == #m) return m##_symbol_;
#include "device-plugin/nvml/nvml_entry_points.inc"
  return {};
}

#define NVML_FUNCTION(method, required, params, args)                 \
  nvmlReturn_t DlNvml::method params {                                \
    return method##_ != nullptr ? method##_ args                      \
                                : NVML_ERROR_FUNCTION_NOT_FOUND;      \
  }
#include "device-plugin/nvml/nvml_entry_points.inc"

const char* DlNvml::ErrorString(nvmlReturn_t result) {
  const char* text = error_string_ != nullptr ? error_string_(result) : nullptr;
  return text != nullptr ? text : "unknown NVML error";
}

}  // namespace phalanx::nvml
