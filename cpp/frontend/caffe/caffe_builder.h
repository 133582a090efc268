// The state of one Caffe net being turned into an npuc Graph: which Value each Caffe blob name
// currently holds (in-place layers rebind a name), the trained weights found by layer name, and
// the error context (prototxt file, caffemodel file, layer) every message carries.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "caffe_proto/caffe.pb.h"
#include "ir/graph.h"

namespace npuc::caffe {

using Layer = npuc_caffe::LayerParameter;

class NetBuilder {
 public:
  // `weights` is the caffemodel (null: none given); `*_what` name the files in messages.
  NetBuilder(Graph& graph, const npuc_caffe::NetParameter* weights, std::string prototxt_what,
             std::string weights_what);

  Graph& graph() { return graph_; }

  // Declares a graph input holding Caffe blob `name`.
  void addInput(const std::string& name, const Shape& shape);

  // The Value Caffe blob `layer.bottom(i)` holds now; ModelLoadError if no layer produced it yet.
  Value* bottom(const Layer& layer, int i);
  // Binds `layer.top(i)` to `v`. An in-place layer (top == an existing blob) rebinds the name:
  // the new value takes the blob's name and the old one is renamed out of the way, so graph
  // outputs carry the names a Caffe user knows.
  void setTop(const Layer& layer, int i, Value* v);
  // Checks the layer has exactly these many bottoms and tops (ranges: min..max, -1 = any).
  void expectArity(const Layer& layer, int min_bottoms, int max_bottoms, int tops);

  // Appends an npuc node for `layer` and infers its output types at once (later layers need the
  // shapes: InnerProduct's flattening, Reshape's 0 and -1, Scale's broadcast). A shape error
  // becomes a ModelLoadError naming the layer.
  Node* emit(const Layer& layer, const std::string& op, const std::vector<Value*>& inputs, Attributes attrs = {},
             const std::string& suffix = "");
  Value* constant(const Layer& layer, Tensor t, const std::string& what);

  // The layer's blob `i` from the caffemodel as an FP32 tensor of `expected` shape. ModelLoadError
  // (naming both files and the layer) when the caffemodel is absent, the layer or the blob is
  // missing, or its shape differs (a legacy 4-D num/channels/height/width blob only has to
  // match in element count, since old Caffe padded every shape to 4-D).
  Tensor blob(const Layer& layer, int i, const Shape& expected);
  // Number of blobs the caffemodel holds for the layer (0 when none / no caffemodel).
  int numBlobs(const Layer& layer) const;

  // "<prototxt>: layer '<name>' (<type>): " + msg.
  [[noreturn]] void fail(const Layer& layer, const std::string& msg) const;

  // How many layers of the net read blob `name` as a bottom (set by the importer before the
  // layers are converted): BatchNorm+Scale folding must not change what another reader sees.
  std::map<std::string, int> bottom_reads;
  // BatchNormalization nodes emitted for a Caffe BatchNorm with unit scale and zero bias, which a
  // following Scale layer may fill in (the usual BatchNorm + Scale pair becomes one op).
  std::set<Node*> unit_batchnorms;

  // The element count of `shape`, failing (naming the layer) instead of overflowing when a
  // prototxt declares absurd dims.
  int64_t checkedNumel(const Layer& layer, const Shape& shape) const;

  // Marks every blob some layer produced and nobody consumed as a graph output, in production order.
  void finishOutputs();

 private:
  const google::protobuf::RepeatedPtrField<npuc_caffe::BlobProto>* blobsOf(const Layer& layer) const;

  Graph& graph_;
  const npuc_caffe::NetParameter* weights_;
  std::string prototxt_what_, weights_what_;
  std::map<std::string, Value*> blobs_;     // Caffe blob name -> the Value it holds now
  std::vector<std::string> produced_order_;  // blob names in first-production order
  std::map<std::string, const google::protobuf::RepeatedPtrField<npuc_caffe::BlobProto>*> weights_by_layer_;
};

// Shape as "[1, 3, 224, 224]" for messages.
std::string shapeStr(const Shape& s);

}  // namespace npuc::caffe
