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
// `packed`: constants written as NpuPacked records (no WEIGHTS bytes; BlobError if one names no
// float32 constant of the graph).
EncodedGraph encodeGraph(const Graph& graph, const std::map<std::string, QuantParams>& quant,
                         const std::map<std::string, PackedConstant>& packed = {});

struct DecodedGraph {
  std::unique_ptr<Graph> graph;
  std::map<std::string, QuantParams> quant;
  std::vector<PackedConstant> packed_constants;  // GRAPH order
};

// What the GRAPH section's constants refer to.
struct GraphSources {
  const uint8_t* weights = nullptr;  // the WEIGHTS payload
  size_t weights_size = 0;
  uint64_t weights_offset = 0;  // its file offset (for messages)
  std::shared_ptr<void> owner;  // keeps `weights` alive
  bool packed_allowed = false;  // the format has NpuPacked constants (2.0 on)
  bool has_packed = false;      // the blob has an NWGT section
  uint64_t packed_size = 0;     // its payload size
};

// Decodes and fully validates a GRAPH section against its WEIGHTS (and NWGT) section before
// building the IR. Plain constants wrap the weight bytes in place; NpuPacked ones get zero-filled
// placeholders, listed in DecodedGraph::packed_constants. Their NWGT extents must be 64-aligned,
// inside NWGT and disjoint, and each must have at least one NWGT byte per element, so the
// placeholders total at most 4 x the NWGT size.
DecodedGraph decodeGraph(ByteReader graph, const GraphSources& sources);

}  // namespace npuc::blob
