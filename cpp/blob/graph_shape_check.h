// The GRAPH section records every value's dtype and shape, and the runtimes size their buffers
// from them. The checksum only proves the bytes are as written, so a buggy or hostile writer
// could pair a node's attributes with output shapes they do not produce (found by
// fuzz_blob_load: a Conv whose pads were 1.7e15 but whose output was recorded as [1,64,32,32],
// which made the executor's workspace size wrap). The loader therefore re-runs each op's shape
// inference and refuses the blob when it disagrees with the record.
#pragma once

#include "ir/graph.h"

namespace npuc::blob {

// Throws BlobError naming the node and both types when a node's inferred output dtype or shape
// differs from the one recorded in `graph` (dims inference leaves unknown are not compared), or
// when inference itself refuses the node (bad attributes). Ops without shape inference here
// (custom domains) are skipped.
void checkRecordedShapes(const Graph& graph);

}  // namespace npuc::blob
