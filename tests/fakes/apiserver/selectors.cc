#include "tests/fakes/apiserver/selectors.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace phalanx::fakes::apiserver {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on commas outside parentheses.
Result<std::vector<std::string_view>> SplitTopLevel(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      auto part = Trim(text.substr(start, i - start));
      if (!part.empty()) parts.push_back(part);
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      if (--depth < 0) return InvalidArgumentError("unbalanced ')' in selector");
    }
  }
  if (depth != 0) return InvalidArgumentError("unbalanced '(' in selector");
  return parts;
}

bool ValidKey(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

}  // namespace

Result<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector selector;
  PHX_ASSIGN_OR_RETURN(auto parts, SplitTopLevel(text));
  for (std::string_view part : parts) {
    Requirement r;
    auto bad = [&](std::string_view why) {
      return InvalidArgumentError("unable to parse requirement \"" + std::string(part) + "\": " +
                                  std::string(why));
    };
    if (part.front() == '!') {
      r.key = std::string(Trim(part.substr(1)));
      r.op = Op::kDoesNotExist;
    } else if (auto p = part.find('('); p != std::string_view::npos) {
      if (part.back() != ')') return bad("expected ')'");
      auto head = Trim(part.substr(0, p));
      const auto space = head.find_last_of(" \t");
      if (space == std::string_view::npos) return bad("expected 'in' or 'notin'");
      const auto word = head.substr(space + 1);
      r.key = std::string(Trim(head.substr(0, space)));
      if (word == "in") {
        r.op = Op::kIn;
      } else if (word == "notin") {
        r.op = Op::kNotIn;
      } else {
        return bad("expected 'in' or 'notin'");
      }
      auto inner = part.substr(p + 1, part.size() - p - 2);
      size_t start = 0;
      for (size_t i = 0; i <= inner.size(); ++i) {
        if (i == inner.size() || inner[i] == ',') {
          r.values.emplace_back(Trim(inner.substr(start, i - start)));
          start = i + 1;
        }
      }
      if (r.values.size() == 1 && r.values[0].empty()) return bad("values must not be empty");
    } else if (auto q = part.find("!="); q != std::string_view::npos) {
      r.key = std::string(Trim(part.substr(0, q)));
      r.op = Op::kNotEquals;
      r.values.emplace_back(Trim(part.substr(q + 2)));
    } else if (auto e = part.find('='); e != std::string_view::npos) {
      r.key = std::string(Trim(part.substr(0, e)));
      r.op = Op::kEquals;
      auto value = part.substr(e + 1);
      if (!value.empty() && value.front() == '=') value.remove_prefix(1);
      r.values.emplace_back(Trim(value));
    } else if (auto g = part.find_first_of("<>"); g != std::string_view::npos) {
      r.key = std::string(Trim(part.substr(0, g)));
      r.op = part[g] == '>' ? Op::kGreater : Op::kLess;
      r.values.emplace_back(Trim(part.substr(g + 1)));
      char* end = nullptr;
      std::strtoll(r.values[0].c_str(), &end, 10);
      if (r.values[0].empty() || *end != '\0') return bad("value must be an integer");
    } else {
      r.key = std::string(part);
      r.op = Op::kExists;
    }
    if (!ValidKey(r.key)) return bad("invalid label key");
    selector.requirements_.push_back(std::move(r));
  }
  return selector;
}

bool LabelSelector::Matches(const StoredObject& object) const {
  for (const auto& r : requirements_) {
    const std::string* value = object.Label(r.key);
    switch (r.op) {
      case Op::kEquals:
        if (value == nullptr || *value != r.values[0]) return false;
        break;
      case Op::kNotEquals:
        if (value != nullptr && *value == r.values[0]) return false;
        break;
      case Op::kIn:
        if (value == nullptr || std::find(r.values.begin(), r.values.end(), *value) == r.values.end())
          return false;
        break;
      case Op::kNotIn:
        if (value != nullptr && std::find(r.values.begin(), r.values.end(), *value) != r.values.end())
          return false;
        break;
      case Op::kExists:
        if (value == nullptr) return false;
        break;
      case Op::kDoesNotExist:
        if (value != nullptr) return false;
        break;
      case Op::kGreater:
      case Op::kLess: {
        if (value == nullptr) return false;
        char* end = nullptr;
        const long long have = std::strtoll(value->c_str(), &end, 10);
        if (value->empty() || *end != '\0') return false;
        const long long want = std::strtoll(r.values[0].c_str(), nullptr, 10);
        if (r.op == Op::kGreater ? !(have > want) : !(have < want)) return false;
        break;
      }
    }
  }
  return true;
}

Result<FieldSelector> FieldSelector::Parse(std::string_view text) {
  FieldSelector selector;
  PHX_ASSIGN_OR_RETURN(auto parts, SplitTopLevel(text));
  for (std::string_view part : parts) {
    Requirement r;
    size_t op_len = 1;
    size_t pos = part.find("!=");
    if (pos != std::string_view::npos) {
      r.equals = false;
      op_len = 2;
    } else {
      pos = part.find('=');
      if (pos == std::string_view::npos) {
        return InvalidArgumentError("invalid field selector \"" + std::string(part) +
                                    "\": expected =, == or !=");
      }
      r.equals = true;
      if (pos + 1 < part.size() && part[pos + 1] == '=') op_len = 2;
    }
    r.path = std::string(Trim(part.substr(0, pos)));
    r.value = std::string(Trim(part.substr(pos + op_len)));
    if (r.path.empty()) return InvalidArgumentError("invalid field selector: empty field");
    selector.requirements_.push_back(std::move(r));
  }
  return selector;
}

bool FieldSelector::Matches(const StoredObject& object) const {
  for (const auto& r : requirements_) {
    if ((object.Field(r.path) == r.value) != r.equals) return false;
  }
  return true;
}

const std::string* FieldSelector::EqualsValue(std::string_view path) const {
  for (const auto& r : requirements_) {
    if (r.equals && r.path == path) return &r.value;
  }
  return nullptr;
}

}  // namespace phalanx::fakes::apiserver
