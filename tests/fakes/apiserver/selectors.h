// Label and field selectors, parsed from the query string as the real server does
// (k8s.io/apimachinery labels and fields packages):
//   labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a` (exists), `!a`, `a>1`, `a<1`
//   fields: `path=value`, `path==value`, `path!=value`, comma separated (AND)
// Field paths: metadata.name, metadata.namespace, spec.nodeName, status.phase, spec.schedulerName
// are indexed; any other dotted path is evaluated on the object (the real server accepts only
// the fields each kind registers: the fake is more permissive).
// Pure. Thread-compatible (immutable after parsing).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "tests/fakes/apiserver/stored_object.h"

namespace phalanx::fakes::apiserver {

class LabelSelector {
 public:
  static Result<LabelSelector> Parse(std::string_view text);
  bool Matches(const StoredObject& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist, kGreater, kLess };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  static Result<FieldSelector> Parse(std::string_view text);
  bool Matches(const StoredObject& object) const;
  bool empty() const { return requirements_.empty(); }
  // The value required for `path` with `=`, if any (metadata.name narrows a watch to one object).
  const std::string* EqualsValue(std::string_view path) const;

 private:
  struct Requirement {
    std::string path, value;
    bool equals;
  };
  std::vector<Requirement> requirements_;
};

}  // namespace phalanx::fakes::apiserver
