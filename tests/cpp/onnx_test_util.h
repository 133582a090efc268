// Helpers for the frontend tests: build small ONNX models with the protobuf classes, temporary
// folders, the shared real-model folder and the system Python (for onnx.checker and .npz files).
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace npuc::testing {

namespace fs = std::filesystem;

// A model under construction. Dims of -1 become dim_param "N".
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(7);
    model_.set_producer_name("npuc-test");
    auto* os = model_.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  onnx::ModelProto& proto() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& dims,
                      int32_t elem = onnx::TensorProto::FLOAT) {
    valueInfo(graph().add_input(), name, dims, elem);
    return *this;
  }
  ModelBuilder& output(const std::string& name) {
    graph().add_output()->set_name(name);
    return *this;
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  onnx::TensorProto& initializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& data) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
    return *t;
  }
  onnx::TensorProto& initializerI64(const std::string& name, const std::vector<int64_t>& data) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(data.size()));
    for (int64_t v : data) t->add_int64_data(v);
    return *t;
  }

  std::string bytes() const { return model_.SerializeAsString(); }
  std::string save(const fs::path& dir, const std::string& file = "model.onnx") const {
    const fs::path p = dir / file;
    std::ofstream(p, std::ios::binary) << bytes();
    return p.string();
  }

  static void valueInfo(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& dims,
                        int32_t elem) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      if (d >= 0) {
        shape->add_dim()->set_dim_value(d);
      } else {
        shape->add_dim()->set_dim_param("N");
      }
    }
  }

 private:
  onnx::ModelProto model_;
};

// Expects `fn` to throw exactly type E with every fragment in its message.
template <typename E, typename Fn>
void expectError(Fn&& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

inline void setAttr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void setAttr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void setAttr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void setAttr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void setAttr(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

// A fresh, empty folder removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("npuc_fe_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The repository's tests/ folder, found from this file's location.
inline fs::path testsDir() {
  return fs::path(__FILE__).parent_path().parent_path();
}

// NPUC_SHARED_MODELS, else a `shared/models` folder next to an ancestor of this file; empty if
// there is none.
inline fs::path sharedModelsDir() {
  if (const char* env = std::getenv("NPUC_SHARED_MODELS"); env && *env) return fs::path(env);
  for (fs::path p = fs::absolute(testsDir()); !p.empty(); p = p.parent_path()) {
    if (fs::is_directory(p / "shared" / "models")) return p / "shared" / "models";
    if (p == p.root_path()) break;
  }
  return {};
}

// Tests that need something from outside the repository (the shared models, libonnx-testdata,
// a cached torchvision export, Debian's python3-onnx) skip without it when run by hand. `make
// test` installs all of them and sets NPUC_STRICT_DEPS=1, which turns the same absence into a
// failure: on a fresh machine nothing may skip because an install step is missing.
inline bool strictDeps() {
  const char* env = std::getenv("NPUC_STRICT_DEPS");
  return env && std::string(env) == "1";
}

#define NPUC_SKIP_MISSING_DEP(message)                                                \
  do {                                                                                \
    const std::string npuc_missing_ = (message);                                      \
    if (::npuc::testing::strictDeps())                                                \
      FAIL() << "missing test dependency (make test installs it): " << npuc_missing_; \
    GTEST_SKIP() << npuc_missing_;                                                    \
  } while (0)

// The system Python (which has Debian's onnx and numpy), not whatever is first on PATH.
constexpr const char* kSystemPython = "/usr/bin/python3";

inline bool pythonHas(const std::string& module) {
  const std::string cmd = std::string(kSystemPython) + " -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Runs a command, returning its exit status and (stdout+stderr) text.
inline std::pair<int, std::string> runCommand(const std::string& cmd) {
  std::string out;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return {-1, "popen failed"};
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int status = pclose(f);
  return {status, out};
}

}  // namespace npuc::testing
