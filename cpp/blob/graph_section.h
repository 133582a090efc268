// The GRAPH and WEIGHTS sections: the IR graph (values, nodes, attributes, graph inputs/outputs)
// and the bytes of every constant and tensor attribute, each 64-byte aligned inside WEIGHTS.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "blob/blob.h"
#include "blob/byte_io.h"
#include "ir/graph.h"

namespace npuc::blob {

struct EncodedGraph {
  std::string graph;    // GRAPH section payload
  std::string weights;  // WEIGHTS section payload (a multiple of kBlobAlignment long)
};

// Encodes `graph` in canonical order: graph inputs, then constants (creation order), then node
// outputs (node order). Throws BlobError if the graph cannot be represented (an unstorable
// constant, a node reading a value that is none of the above).
EncodedGraph encodeGraph(const Graph& graph, const std::map<std::string, QuantParams>& quant);

struct DecodedGraph {
  std::unique_ptr<Graph> graph;
  std::map<std::string, QuantParams> quant;
};

// Decodes and fully validates a GRAPH section against its WEIGHTS section before building the IR.
// Constants wrap the weight bytes in place; `owner` keeps that memory alive. `weights_offset` is
// the file offset of `weights` (for messages).
DecodedGraph decodeGraph(ByteReader graph, const uint8_t* weights, size_t weights_size,
                         uint64_t weights_offset, const std::shared_ptr<void>& owner);

}  // namespace npuc::blob
