// The placement a blob was built with, from the build options it records (META, written by
// Toolkit._blob_options as str -> str). Every path that needs the partition of a compiled model —
// the lowering and the memory plan at export, the program / plan checks and eval_memory at load —
// derives it here, so they cannot disagree about which nodes op_target moved to the CPU.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc {

// The build options as recorded in a blob (key -> Python repr of the value).
using BuildOptions = std::map<std::string, std::string>;

// The op_target build option as recorded: the Python repr of a str -> str dict
// ("{'conv1': 'cpu', \"it's\": 'npu'}"). ConfigError when malformed.
OpTargetMap opTargetFromOption(const std::string& repr);

// The op_target entry of `options` (empty when absent).
OpTargetMap opTargetOfBuild(const BuildOptions& options);

// The NPU/CPU partition of `graph` on `soc` as built with `options` (partitionGraph with the
// recorded op_target).
PartitionReport placementOfBuild(const Graph& graph, const SocProfile& soc, const BuildOptions& options);

// Same for options read back from a blob: a recorded op_target that does not parse or cannot be
// honoured on this graph is a BlobError (the file is inconsistent), not a ConfigError of the user.
PartitionReport placementOfRecordedBuild(const Graph& graph, const SocProfile& soc,
                                         const BuildOptions& options);

}  // namespace npuc
