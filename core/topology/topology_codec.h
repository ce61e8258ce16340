// The `phalanx.io/gpu-topology` node annotation, version 1 <-> NodeTopology.
// The contract (format, example, validation rules, compatibility) is
// docs/contracts/gpu-topology.md; this codec is its only implementation.
//
// Encoding is deterministic (compact JSON, fixed key order, optional fields omitted when
// empty), so the same model always yields the same bytes and the device plugin can skip
// a PATCH when nothing changed. Decode(Encode(t)) == t for every valid t.
//
// Decoding is strict and never crashes: any document that is not a valid version-1
// topology yields InvalidArgument whose message starts with the JSON path of the
// offending field (`links[2][5]: asymmetric: ...`, `gpus[3].uuid: duplicate of
// gpus[1].uuid`; `<root>` for the document itself). Unknown fields are ignored so that
// newer writers can add fields without breaking older readers.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/topology/node_topology.h"

namespace phalanx::topology {

inline constexpr std::string_view kGpuTopologyAnnotation = "phalanx.io/gpu-topology";
inline constexpr int kTopologyVersion = 1;
// Kubernetes caps all annotations of an object at 256 KiB together; one annotation can
// never be larger, so anything bigger is rejected before it is parsed.
inline constexpr size_t kMaxTopologyDocumentBytes = 256 * 1024;
// A valid document nests 6 levels deep; the margin leaves room for future fields while
// refusing pathological inputs before the parser sees them.
inline constexpr int kMaxTopologyNestingDepth = 32;

// InvalidArgument (with the path of the first violation, see ValidateTopology) if
// `topology` breaks the contract: the device plugin must never publish what readers
// would reject.
Result<std::string> EncodeTopology(const NodeTopology& topology);

// Parses and validates an annotation value. InvalidArgument on any violation.
Result<NodeTopology> DecodeTopology(std::string_view document);

}  // namespace phalanx::topology
