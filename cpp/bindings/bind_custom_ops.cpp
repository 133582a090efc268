// Python custom ops (Toolkit.reg_custom_op): a CustomOpSet whose callbacks call a Python adapter
// (npuc/custom_op.py), which wraps the user's object and checks what it returns.
//
// The callbacks run wherever npuc runs a kernel: shape inference at import, the FP32 executor, the
// simulator, possibly on a worker thread while the caller waits with the GIL released. So each
// call takes the GIL itself, and a Python exception is turned into an npuc error (with its text)
// before the GIL is let go: no Python object outlives the call outside the GIL's protection.
#include <pybind11/stl.h>

#include <cstring>

#include "bindings/bindings.h"
#include "opset/custom_ops.h"

namespace npuc::bindings {

namespace {

// The adapter, released under the GIL whichever thread drops the last reference.
struct PyAdapter {
  explicit PyAdapter(py::object o) : obj(std::move(o)) {}
  ~PyAdapter() {
    py::gil_scoped_acquire gil;
    obj = py::object();
  }
  py::object obj;
};

py::object attrToPython(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return tensorToNumpy(x);
        } else {
          return py::cast(x);
        }
      },
      v);
}

py::dict nodeInfo(const Node& n) {
  py::dict d;
  d["name"] = n.name();
  d["op_type"] = n.opType();
  d["domain"] = n.domain();
  py::list ins, outs;
  for (const Value* v : n.inputs()) ins.append(v ? v->name() : std::string());
  for (const Value* v : n.outputs()) outs.append(v->name());
  d["inputs"] = ins;
  d["outputs"] = outs;
  py::dict attrs;
  for (const auto& [name, value] : n.attrs().all()) attrs[py::str(name)] = attrToPython(value);
  d["attributes"] = attrs;
  return d;
}

[[noreturn]] void rethrowPython(const std::string& what, py::error_already_set& e) {
  throw Error(what + " raised " + e.what());
}

CustomOpDef makeDef(const std::string& op_type, std::shared_ptr<PyAdapter> adapter) {
  CustomOpDef def;
  def.op_type = op_type;
  def.infer = [adapter, op_type](const Node& node, const std::vector<CustomOpDef::IoType>& ins) {
    py::gil_scoped_acquire gil;
    std::vector<CustomOpDef::IoType> outs;
    try {
      py::list shapes, dtypes;
      for (const auto& t : ins) {
        shapes.append(py::cast(t.shape));
        dtypes.append(t.dtype == DType::Undefined ? py::object(py::none()) : py::object(py::str(dtypeName(t.dtype))));
      }
      py::tuple r = adapter->obj.attr("infer")(nodeInfo(node), shapes, dtypes, node.numOutputs());
      auto out_shapes = r[0].cast<std::vector<std::vector<int64_t>>>();
      auto out_dtypes = r[1].cast<std::vector<std::string>>();
      for (size_t i = 0; i < out_shapes.size() && i < out_dtypes.size(); ++i) {
        const DType dt = dtypeFromName(out_dtypes[i]);
        outs.push_back({dt, Shape(out_shapes[i].begin(), out_shapes[i].end())});
      }
    } catch (py::error_already_set& e) {
      rethrowPython("custom op " + op_type + ": shape_infer", e);
    }
    return outs;
  };
  def.compute = [adapter, op_type](const Node& node, const std::vector<TensorView>& inputs,
                                   std::vector<TensorView>& outputs) {
    py::gil_scoped_acquire gil;
    try {
      py::list arrays, shapes, dtypes;
      for (const TensorView& t : inputs) {
        if (!t.data) {
          arrays.append(py::none());
          continue;
        }
        Tensor copy = Tensor::uninitialized(t.dtype, t.shape);
        std::memcpy(copy.raw(), t.data, copy.nbytes());
        arrays.append(tensorToNumpy(copy));
      }
      for (const TensorView& t : outputs) {
        shapes.append(py::cast(t.shape));
        dtypes.append(py::str(dtypeName(t.dtype)));
      }
      py::list results = adapter->obj.attr("compute")(nodeInfo(node), arrays, shapes, dtypes);
      for (size_t i = 0; i < outputs.size(); ++i) {
        // The adapter returns C-contiguous arrays of exactly the output's dtype and shape.
        py::array a = results[i].cast<py::array>();
        const size_t bytes = static_cast<size_t>(a.nbytes());
        const size_t want = outputs[i].nbytes();
        if (bytes != want || fromNumpyDType(a.dtype()) != outputs[i].dtype)
          throw Error("custom op " + op_type + ": compute output " + std::to_string(i) + " has " +
                      std::to_string(bytes) + " bytes, expected " + std::to_string(want));
        std::memcpy(outputs[i].data, a.data(), bytes);
      }
    } catch (py::error_already_set& e) {
      rethrowPython("custom op " + op_type + ": compute", e);
    }
  };
  return def;
}

}  // namespace

void bindCustomOps(py::module_& m) {
  py::class_<CustomOpSet, std::shared_ptr<CustomOpSet>>(
      m, "CustomOpSet",
      "User-defined ops (Toolkit.reg_custom_op): immutable; the graphs imported or loaded with it keep it.")
      .def(py::init([](const std::vector<std::pair<std::string, py::object>>& adapters) {
             std::vector<CustomOpDef> defs;
             for (const auto& [op_type, obj] : adapters)
               defs.push_back(makeDef(op_type, std::make_shared<PyAdapter>(obj)));
             return std::make_shared<CustomOpSet>(std::move(defs));
           }),
           py::arg("adapters"),
           "From (op_type, adapter) pairs; the adapter has infer(node, shapes, dtypes, num_outputs) -> "
           "(shapes, dtypes) and compute(node, arrays, out_shapes, out_dtypes) -> arrays (npuc/custom_op.py).")
      .def_property_readonly("op_types", &CustomOpSet::opTypes, "The registered op types, sorted.");
}

}  // namespace npuc::bindings
