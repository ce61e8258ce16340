// CRD schema validation: a custom resource checked against its CRD's openAPIV3Schema on create,
// update, patch and /status writes, as kube-apiserver does (apiextensions-apiserver structural
// schema validation, then x-kubernetes-validations), with its error wording: one 422 Invalid
// naming every failing field ("spec.quotas[0].nominal: Invalid value: ...").
//
// Keywords checked: type (object, array, string, integer, number, boolean; nullable),
// properties, additionalProperties (a schema), items, required, minimum/maximum (and their
// boolean exclusive forms), minLength/maxLength, pattern (searched, as Go's MatchString),
// enum, minItems/maxItems, format date-time, x-kubernetes-int-or-string,
// x-kubernetes-preserve-unknown-fields. Under metadata only name and generateName, as the real
// server. Not done: defaulting, pruning of unknown fields, multipleOf, other formats, list-map
// key uniqueness.
//
// CEL: the fake has no CEL interpreter. It evaluates the x-kubernetes-validations rules listed in
// crd_schema.cc (KnownRules: matched by the exact rule text, each re-implemented in C++ with the
// semantics kube-apiserver gives it) and ignores any other rule. A CRD whose rules the fake does
// not know is served without them (its tests must not rely on them).
// Pure, thread-compatible.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "tests/fakes/apiserver/api_error.h"
#include "tests/fakes/apiserver/kind_registry.h"

namespace phalanx::fakes::apiserver {

struct SchemaError {
  std::string field;    // "spec.quotas[0].nominal"
  std::string message;  // "spec.quotas[0].nominal: Invalid value: \"number\": at most 3 decimals"
};

// `schema`: a version's openAPIV3Schema; `object`: the whole custom resource.
std::vector<SchemaError> ValidateAgainstSchema(const json::Json& schema, const json::Json& object);

// The 422 kube-apiserver answers for `object` of a CRD kind ("GpuQueue.phalanx.io \"x\" is
// invalid: <field>: ...", details.causes naming each field), or nullopt: valid, or a kind
// without a schema (built-in kinds, CRDs created without one).
std::optional<ApiError> ValidateCustomResource(const KindInfo& kind, const json::Json& object);

// Whether the fake evaluates this x-kubernetes-validations rule (tests of the fake itself).
bool IsKnownCelRule(const std::string& rule);

}  // namespace phalanx::fakes::apiserver
