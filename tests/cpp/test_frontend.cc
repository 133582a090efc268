// ONNX import: parsing and its failure modes, tensors in every storage form, constants, input
// sizes, output cuts, legacy opset upgrades, and the real exporter models in shared/models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "frontend/onnx_import.h"
#include "onnx_test_util.h"
#include "opset/eval.h"
#include "reference_npz.h"

namespace npuc {
namespace {

using testing::expectError;
using testing::ModelBuilder;
using testing::setAttr;
using testing::TempDir;
namespace fs = std::filesystem;

ImportOptions rawImport() {
  ImportOptions o;
  o.infer_shapes = false;
  return o;
}

size_t countOps(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node* node : g.nodes()) n += node->opType() == op;
  return n;
}

// x[2,3] -> Relu -> y
ModelBuilder reluModel() {
  ModelBuilder m;
  m.input("x", {2, 3}).output("y");
  m.node("Relu", {"x"}, {"y"}, "relu");
  return m;
}

// ---------------------------------------------------------------- unreadable files

TEST(FrontendErrors, MissingFile) {
  expectError<ModelLoadError>([] { importOnnxFile("/nonexistent/dir/model.onnx"); },
                              {"/nonexistent/dir/model.onnx", "cannot open"});
}

TEST(FrontendErrors, NotOnnxBytes) {
  TempDir dir;
  const std::string path = (dir.path() / "notes.onnx").string();
  std::ofstream(path) << "this is a text file, not a protobuf\n";
  expectError<ModelLoadError>([&] { importOnnxFile(path); }, {path, "not"});
}

TEST(FrontendErrors, TruncatedProtobuf) {
  TempDir dir;
  ModelBuilder m = reluModel();
  m.initializer("w", {64}, std::vector<float>(64, 1.0f));
  const std::string bytes = m.bytes();
  const std::string path = (dir.path() / "cut.onnx").string();
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  expectError<ModelLoadError>([&] { importOnnxFile(path); }, {path, "truncated"});
  expectError<ModelLoadError>([&] { importOnnxBytes(bytes.substr(0, bytes.size() / 2)); }, {"not"});
}

TEST(FrontendErrors, DanglingInput) {
  ModelBuilder m;
  m.input("x", {2}).output("y");
  m.node("Add", {"x", "ghost"}, {"y"}, "add1");
  expectError<GraphError>([&] { importOnnxBytes(m.bytes()); }, {"add1", "ghost", "never defined"});
}

TEST(FrontendErrors, Cycle) {
  ModelBuilder m;
  m.input("x", {2}).output("c");
  m.node("Add", {"x", "c"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"c"}, "second");
  expectError<GraphError>([&] { importOnnxBytes(m.bytes()); }, {"cycle"});
}

TEST(FrontendErrors, DuplicateOutputName) {
  ModelBuilder m;
  m.input("x", {2}).output("y");
  m.node("Relu", {"x"}, {"y"}, "r1");
  m.node("Neg", {"x"}, {"y"}, "r2");
  expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes()); }, {"r2", "'y'", "already defined"});
}

TEST(FrontendErrors, AttributeOfWrongKind) {
  ModelBuilder m;
  m.input("x", {2, 3}).output("y");
  setAttr(m.node("Transpose", {"x"}, {"y"}, "tr"), "perm", int64_t{1});
  expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes()); }, {"tr", "perm", "ints"});
}

TEST(FrontendErrors, InitializerWithWrongDataSize) {
  ModelBuilder m = reluModel();
  m.initializer("weights", {4, 4}, std::vector<float>(15, 0.0f));
  expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes()); }, {"weights", "raw_data", "[4,4]"});
  ModelBuilder typed = reluModel();
  onnx::TensorProto* u = typed.graph().add_initializer();
  u->set_name("typed");
  u->set_data_type(onnx::TensorProto::FLOAT);
  u->add_dims(3);
  u->add_float_data(1.0f);
  expectError<ModelLoadError>([&] { importOnnxBytes(typed.bytes()); }, {"typed", "float_data", "needs 3"});
}

TEST(FrontendErrors, HugeDimsRefusedBeforeAllocation) {
  ModelBuilder m = reluModel();
  m.initializer("huge", {int64_t{1} << 40}, {1.0f});
  expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes()); }, {"huge", "[1099511627776]"});
  ModelBuilder overflow = reluModel();
  overflow.initializer("overflow", {int64_t{1} << 40, int64_t{1} << 40}, {1.0f});
  expectError<ModelLoadError>([&] { importOnnxBytes(overflow.bytes()); }, {"overflow"});
  ModelBuilder negative = reluModel();
  negative.initializer("neg", {-3}, {1.0f});
  expectError<ModelLoadError>([&] { importOnnxBytes(negative.bytes()); }, {"neg"});
}

TEST(FrontendErrors, OpsetOutsideSupportedRange) {
  for (int64_t opset : {-1, 22}) {
    ModelBuilder m(opset);
    m.input("x", {2}).output("y");
    m.node("Relu", {"x"}, {"y"});
    expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes()); },
                                {"opset " + std::to_string(opset), "1 to 21"});
  }
}

TEST(FrontendErrors, UnsupportedOps) {
  ModelBuilder m;
  m.input("x", {2}).output("y");
  m.node("FusedGemm", {"x"}, {"y"}, "fused").set_domain("com.microsoft");
  expectError<UnsupportedOpError>([&] { importOnnxBytes(m.bytes()); }, {"fused", "com.microsoft.FusedGemm"});
  ModelBuilder unknown;
  unknown.input("x", {2}).output("y");
  unknown.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  expectError<UnsupportedOpError>([&] { importOnnxBytes(unknown.bytes()); }, {"mystery", "NoSuchOp"});
}

TEST(FrontendErrors, FileNameIsPrefixedToEveryError) {
  TempDir dir;
  ModelBuilder m;
  m.input("x", {2}).output("y");
  m.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  const std::string path = m.save(dir.path(), "prefixed.onnx");
  expectError<UnsupportedOpError>([&] { importOnnxFile(path); }, {path + ": ", "mystery"});
}

// Every prefix of a valid model either imports or fails with a typed npuc error: never a crash,
// never a foreign exception type.
TEST(FrontendErrors, EveryTruncationIsHandled) {
  ModelBuilder m;
  m.input("x", {2, 3}).output("y");
  m.initializer("b", {3}, {1.0f, 2.0f, 3.0f});
  m.node("Add", {"x", "b"}, {"y"}, "add");
  const std::string bytes = m.bytes();
  size_t refused = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    try {
      importOnnxBytes(bytes.substr(0, len));
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, bytes.size() / 2);
}

// The ONNX backend node tests are a wide sample of valid models: each must import or be refused
// with a typed npuc error.
TEST(FrontendErrors, OnnxBackendNodeModelsImportOrFailCleanly) {
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::is_directory(root)) NPUC_SKIP_MISSING_DEP("libonnx-testdata is not installed");
  size_t imported = 0, total = 0;
  for (const auto& e : fs::directory_iterator(root)) {
    const fs::path model = e.path() / "model.onnx";
    if (!fs::exists(model)) continue;
    ++total;
    try {
      importOnnxFile(model.string());
      ++imported;
    } catch (const Error&) {
      // refused with a typed error: fine (unsupported ops, non-constant shape inputs, ...)
    } catch (const std::exception& ex) {
      ADD_FAILURE() << model << ": untyped exception " << ex.what();
    }
  }
  EXPECT_GT(total, 0u);
  EXPECT_GT(imported, total / 4) << imported << " of " << total;
}

// ---------------------------------------------------------------- external data

class FrontendExternalData : public ::testing::Test {
 protected:
  // A model whose initializer "w" (4 floats) lives in `location` at `offset`.
  std::string saveModel(const std::string& location, int64_t offset, int64_t length = -1,
                        const std::string& subdir = "") {
    ModelBuilder m;
    m.input("x", {4}).output("y");
    m.node("Add", {"x", "w"}, {"y"}, "add");
    onnx::TensorProto* t = m.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(4);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const std::string& k, const std::string& v) {
      auto* kv = t->add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    if (length >= 0) add("length", std::to_string(length));
    fs::create_directories(dir_.path() / subdir);
    return m.save(dir_.path() / subdir);
  }
  void writeWeights(const std::string& file) {
    const float w[5] = {99.0f, 1.0f, 2.0f, 3.0f, 4.0f};  // the tensor starts at byte 4
    std::ofstream(dir_.path() / file, std::ios::binary).write(reinterpret_cast<const char*>(w), sizeof w);
  }
  TempDir dir_;
};

TEST_F(FrontendExternalData, ReadsTensorAtOffset) {
  writeWeights("weights.bin");
  auto g = importOnnxFile(saveModel("weights.bin", 4, 16), rawImport());
  const Tensor& w = g->findValue("w")->constant();
  ASSERT_EQ(w.shape(), Shape({4}));
  EXPECT_EQ(std::vector<float>(w.data<float>(), w.data<float>() + 4), std::vector<float>({1, 2, 3, 4}));
}

TEST_F(FrontendExternalData, RefusesPathEscapingTheModelFolder) {
  writeWeights("weights.bin");
  // From inner/, "../weights.bin" leaves the model's folder; so does an absolute path.
  expectError<ModelLoadError>([&] { importOnnxFile(saveModel("../weights.bin", 4, -1, "inner")); },
                              {"'w'", "escapes"});
  expectError<ModelLoadError>([&] { importOnnxFile(saveModel("sub/../../weights.bin", 4, -1, "inner")); },
                              {"'w'", "escapes"});
  expectError<ModelLoadError>([&] { importOnnxFile(saveModel((dir_.path() / "weights.bin").string(), 4)); },
                              {"'w'", "relative"});
}

TEST_F(FrontendExternalData, RefusesReadPastEndAndWrongLength) {
  writeWeights("weights.bin");
  expectError<ModelLoadError>([&] { importOnnxFile(saveModel("weights.bin", 8)); }, {"'w'", "past the end"});
  expectError<ModelLoadError>([&] { importOnnxFile(saveModel("weights.bin", 0, 12)); }, {"'w'", "length 12"});
  expectError<ModelLoadError>([&] { importOnnxFile(saveModel("missing.bin", 0)); }, {"'w'", "missing.bin"});
}

TEST_F(FrontendExternalData, RefusedWhenLoadingFromBytes) {
  writeWeights("weights.bin");
  std::ifstream in(saveModel("weights.bin", 4), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expectError<ModelLoadError>([&] { importOnnxBytes(bytes, rawImport()); },
                              {"'w'", "not loaded from a file"});
  auto g = importOnnxBytes(bytes, rawImport(), dir_.path().string());
  EXPECT_EQ(g->findValue("w")->constant().data<float>()[3], 4.0f);
}

// ---------------------------------------------------------------- tensors and constants

TEST(FrontendTensors, TypedFieldsOfEveryKind) {
  ModelBuilder m = reluModel();
  auto add = [&](const std::string& name, int32_t type, int64_t n) {
    onnx::TensorProto* t = m.graph().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_dims(n);
    return t;
  };
  auto* f = add("f32", onnx::TensorProto::FLOAT, 2);
  f->add_float_data(1.5f);
  f->add_float_data(-2.0f);
  auto* d = add("f64", onnx::TensorProto::DOUBLE, 1);
  d->add_double_data(0.25);
  auto* i8 = add("i8", onnx::TensorProto::INT8, 2);
  i8->add_int32_data(-128);
  i8->add_int32_data(127);
  auto* u8 = add("u8", onnx::TensorProto::UINT8, 1);
  u8->add_int32_data(255);
  auto* b = add("b", onnx::TensorProto::BOOL, 2);
  b->add_int32_data(0);
  b->add_int32_data(1);
  auto* h = add("f16", onnx::TensorProto::FLOAT16, 1);
  h->add_int32_data(floatToHalf(3.0f));
  auto* i64 = add("i64", onnx::TensorProto::INT64, 1);
  i64->add_int64_data(int64_t{1} << 40);
  auto* u64 = add("u64", onnx::TensorProto::UINT64, 1);
  u64->add_uint64_data(~uint64_t{0});
  auto* i32 = add("i32", onnx::TensorProto::INT32, 1);
  i32->add_int32_data(-7);
  // Make every initializer a graph output so nothing is pruned.
  for (const char* n : {"f32", "f64", "i8", "u8", "b", "f16", "i64", "u64", "i32"}) m.output(n);
  auto g = importOnnxBytes(m.bytes(), rawImport());
  auto c = [&](const char* n) -> const Tensor& { return g->findValue(n)->constant(); };
  EXPECT_EQ(c("f32").data<float>()[1], -2.0f);
  EXPECT_EQ(c("f64").data<double>()[0], 0.25);
  EXPECT_EQ(c("i8").data<int8_t>()[0], -128);
  EXPECT_EQ(c("i8").data<int8_t>()[1], 127);
  EXPECT_EQ(c("u8").data<uint8_t>()[0], 255);
  EXPECT_EQ(c("b").data<bool>()[1], true);
  EXPECT_EQ(c("b").data<bool>()[0], false);
  EXPECT_EQ(c("f16").dtype(), DType::Float16);
  EXPECT_EQ(halfToFloat(static_cast<const uint16_t*>(c("f16").raw())[0]), 3.0f);
  EXPECT_EQ(c("i64").data<int64_t>()[0], int64_t{1} << 40);
  EXPECT_EQ(c("u64").data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(c("i32").data<int32_t>()[0], -7);
}

TEST(FrontendTensors, ConstantNodesBecomeConstantValues) {
  ModelBuilder m;
  m.input("x", {3}).output("s1").output("s2").output("s3").output("s4").output("s5");
  auto* t = m.node("Constant", {}, {"c_tensor"}).add_attribute();
  t->set_name("value");
  t->set_type(onnx::AttributeProto::TENSOR);
  t->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  t->mutable_t()->add_dims(3);
  for (float v : {1.0f, 2.0f, 3.0f}) t->mutable_t()->add_float_data(v);
  setAttr(m.node("Constant", {}, {"c_float"}), "value_float", 0.5f);
  setAttr(m.node("Constant", {}, {"c_floats"}), "value_floats", std::vector<float>{1, 2});
  setAttr(m.node("Constant", {}, {"c_int"}), "value_int", int64_t{7});
  setAttr(m.node("Constant", {}, {"c_ints"}), "value_ints", std::vector<int64_t>{4, 5, 6});
  m.node("Add", {"x", "c_tensor"}, {"s1"}, "a1");
  m.node("Mul", {"x", "c_float"}, {"s2"}, "a2");
  m.node("Identity", {"c_floats"}, {"s3"}, "a3");
  m.node("Identity", {"c_int"}, {"s4"}, "a4");
  m.node("Identity", {"c_ints"}, {"s5"}, "a5");
  auto g = importOnnxBytes(m.bytes(), rawImport());
  EXPECT_EQ(countOps(*g, "Constant"), 0u);
  EXPECT_EQ(g->findValue("c_tensor")->constant().data<float>()[2], 3.0f);
  EXPECT_EQ(g->findValue("c_float")->constant().shape(), Shape{});
  EXPECT_EQ(g->findValue("c_float")->constant().data<float>()[0], 0.5f);
  EXPECT_EQ(g->findValue("c_floats")->constant().shape(), Shape{2});
  EXPECT_EQ(g->findValue("c_int")->constant().data<int64_t>()[0], 7);
  EXPECT_EQ(g->findValue("c_ints")->constant().toInt64Vector(), std::vector<int64_t>({4, 5, 6}));
}

TEST(FrontendTensors, InputWithInitializerIsAConstant) {
  ModelBuilder m;
  m.input("x", {2}).input("bias", {2}).output("y");
  m.initializer("bias", {2}, {1.0f, 2.0f});
  m.node("Add", {"x", "bias"}, {"y"}, "add");
  auto g = importOnnxBytes(m.bytes(), rawImport());
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->name(), "x");
  EXPECT_TRUE(g->findValue("bias")->isConstant());
}

// Protobuf refuses messages over 64 MiB unless told otherwise; ONNX files may reach 2 GiB.
TEST(FrontendTensors, ModelLargerThan64MiBLoads) {
  TempDir dir;
  constexpr int64_t kElems = int64_t{72} << 18;  // 72 MiB of float32
  ModelBuilder m;
  m.input("x", {1}).output("y").output("big");
  std::vector<float> data(kElems, 0.5f);
  data.back() = 7.0f;
  m.initializer("big", {kElems}, data);
  m.node("Relu", {"x"}, {"y"}, "relu");
  const std::string path = m.save(dir.path());
  ASSERT_GT(fs::file_size(path), uintmax_t{64} << 20);
  auto g = importOnnxFile(path, rawImport());
  const Tensor& big = g->findValue("big")->constant();
  ASSERT_EQ(big.numel(), kElems);
  EXPECT_EQ(big.data<float>()[kElems - 1], 7.0f);
}

// ---------------------------------------------------------------- graph structure

TEST(FrontendGraph, UnnamedNodesGetUniqueNamesAndOrderIsSorted) {
  ModelBuilder m;
  m.input("x", {2}).output("z");
  m.node("Neg", {"y"}, {"z"});  // listed before its producer
  m.node("Relu", {"x"}, {"y"});
  m.node("Relu", {"x"}, {"unused"}, "Relu_0");  // a real name that the generator must skip
  auto g = importOnnxBytes(m.bytes(), rawImport());
  g->verify();
  std::vector<std::string> names;
  for (const Node* n : g->nodes()) names.push_back(n->name());
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(g->findValue("y")->producer()->name(), "Relu_1");
  EXPECT_EQ(g->findValue("z")->producer()->name(), "Neg_0");
  EXPECT_LT(g->findValue("y")->producer()->order(), g->findValue("z")->producer()->order());
}

TEST(FrontendGraph, DynamicDimsAreFixedByInputSizes) {
  ModelBuilder m;
  m.input("x", {-1, 3}).output("y");
  m.node("Relu", {"x"}, {"y"}, "relu");
  auto raw = importOnnxBytes(m.bytes(), rawImport());
  EXPECT_EQ(raw->inputs()[0]->shape(), Shape({-1, 3}));

  ImportOptions opts;
  opts.input_sizes = {{5, 3}};
  auto g = importOnnxBytes(m.bytes(), opts);
  EXPECT_EQ(g->findValue("y")->shape(), Shape({5, 3}));

  opts.input_names = {"x"};
  opts.input_sizes = {{5, 4}};
  expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes(), opts); }, {"'x'", "[5,4]", "[?,3]"});
  opts.input_sizes = {{5, 3, 1}};
  expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes(), opts); }, {"'x'", "rank"});
  opts.input_names = {"nope"};
  opts.input_sizes = {{5, 3}};
  expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes(), opts); }, {"'nope'", "'x'"});
}

TEST(FrontendGraph, UnknownDimsLeftAreAShapeErrorWithTheFix) {
  ModelBuilder m;
  m.input("images", {-1, 3}).output("y");
  m.node("Relu", {"images"}, {"y"}, "relu");
  expectError<ShapeError>([&] { importOnnxBytes(m.bytes()); }, {"input_size_list", "'images'", "[?,3]"});
}

TEST(FrontendGraph, OutputNamesCutTheGraph) {
  ModelBuilder m;
  m.input("x", {2}).input("other", {2}).output("z");
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.node("Add", {"y", "other"}, {"z"}, "add");
  ImportOptions opts = rawImport();
  opts.output_names = {"y"};
  auto g = importOnnxBytes(m.bytes(), opts);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(g->numNodes(), 1u);
  EXPECT_EQ(g->inputs().size(), 1u);  // "other" fed only the dropped Add
  g->verify();
  opts.output_names = {"yy"};
  expectError<ModelLoadError>([&] { importOnnxBytes(m.bytes(), opts); }, {"'yy'", "'x'", "'y'"});
}

// ---------------------------------------------------------------- legacy upgrades

std::vector<int64_t> constInts(const Node* n, size_t i) {
  EXPECT_TRUE(n->input(i) && n->input(i)->isConstant()) << n->name() << " input " << i;
  return n->input(i) && n->input(i)->isConstant() ? n->input(i)->constant().toInt64Vector()
                                                  : std::vector<int64_t>{};
}

TEST(FrontendLegacy, AttributesBecomeInputs) {
  ModelBuilder m(9);
  m.input("x", {2, 4, 6})
      .output("slice")
      .output("pad")
      .output("split0")
      .output("sq")
      .output("rsum")
      .output("rmean")
      .output("clip")
      .output("topv");
  auto& slice = m.node("Slice", {"x"}, {"slice"}, "slice");
  setAttr(slice, "starts", std::vector<int64_t>{1});
  setAttr(slice, "ends", std::vector<int64_t>{3});
  setAttr(slice, "axes", std::vector<int64_t>{2});
  auto& pad = m.node("Pad", {"x"}, {"pad"}, "pad");
  setAttr(pad, "pads", std::vector<int64_t>{0, 0, 1, 0, 0, 1});
  setAttr(pad, "value", 2.5f);
  auto& split = m.node("Split", {"x"}, {"split0", "split1"}, "split");
  setAttr(split, "axis", int64_t{2});
  setAttr(split, "split", std::vector<int64_t>{2, 4});
  setAttr(m.node("Unsqueeze", {"x"}, {"unsq"}, "unsq"), "axes", std::vector<int64_t>{0});
  setAttr(m.node("Squeeze", {"unsq"}, {"sq"}, "sq"), "axes", std::vector<int64_t>{0});
  setAttr(m.node("ReduceSum", {"x"}, {"rsum"}, "rsum"), "axes", std::vector<int64_t>{1});
  setAttr(m.node("ReduceMean", {"x"}, {"rmean"}, "rmean"), "axes", std::vector<int64_t>{-1});
  auto& clip = m.node("Clip", {"x"}, {"clip"}, "clip");
  setAttr(clip, "min", 0.0f);
  setAttr(clip, "max", 6.0f);
  auto& topk = m.node("TopK", {"x"}, {"topv", "topi"}, "topk");
  setAttr(topk, "k", int64_t{3});
  auto g = importOnnxBytes(m.bytes(), rawImport());
  // opset 9: Pad and Clip are older than their input forms (11), and so on.
  Node* s = g->findNode("slice");
  EXPECT_EQ(constInts(s, 1), std::vector<int64_t>({1}));
  EXPECT_EQ(constInts(s, 2), std::vector<int64_t>({3}));
  EXPECT_EQ(constInts(s, 3), std::vector<int64_t>({2}));
  EXPECT_TRUE(s->attrs().empty());
  Node* p = g->findNode("pad");
  EXPECT_EQ(constInts(p, 1), std::vector<int64_t>({0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(p->input(2)->constant().doubleAt(0), 2.5);
  EXPECT_FALSE(p->attrs().has("pads"));
  EXPECT_EQ(constInts(g->findNode("split"), 1), std::vector<int64_t>({2, 4}));
  EXPECT_EQ(g->findNode("split")->attrs().i("axis"), 2);
  EXPECT_EQ(constInts(g->findNode("unsq"), 1), std::vector<int64_t>({0}));
  EXPECT_EQ(constInts(g->findNode("sq"), 1), std::vector<int64_t>({0}));
  EXPECT_EQ(constInts(g->findNode("rsum"), 1), std::vector<int64_t>({1}));
  EXPECT_EQ(constInts(g->findNode("rmean"), 1), std::vector<int64_t>({-1}));
  EXPECT_FALSE(g->findNode("rmean")->attrs().has("axes"));
  Node* c = g->findNode("clip");
  EXPECT_EQ(c->input(1)->constant().doubleAt(0), 0.0);
  EXPECT_EQ(c->input(2)->constant().doubleAt(0), 6.0);
  EXPECT_EQ(constInts(g->findNode("topk"), 1), std::vector<int64_t>({3}));
  g->verify();
}

TEST(FrontendLegacy, ReduceMeanAxesBecomeAnInputUpToOpset17) {
  ModelBuilder m(13);
  m.input("x", {2, 4}).output("y").output("s");
  setAttr(m.node("ReduceMean", {"x"}, {"y"}, "mean"), "axes", std::vector<int64_t>{1});
  setAttr(m.node("ReduceSum", {"x", "ax"}, {"s"}, "sum"), "keepdims", int64_t{0});
  m.initializerI64("ax", {0});
  auto g = importOnnxBytes(m.bytes());
  EXPECT_EQ(constInts(g->findNode("mean"), 1), std::vector<int64_t>({1}));
  EXPECT_EQ(g->findValue("y")->shape(), Shape({2, 1}));
  EXPECT_EQ(g->findValue("s")->shape(), Shape({4}));
}

TEST(FrontendLegacy, UpsampleAndResize10BecomeResize) {
  ModelBuilder m7(7);
  m7.input("x", {1, 1, 2, 2}).output("y");
  setAttr(m7.node("Upsample", {"x"}, {"y"}, "up"), "scales", std::vector<float>{1, 1, 2, 2});
  auto g7 = importOnnxBytes(m7.bytes(), rawImport());
  Node* r = g7->findNode("up");
  EXPECT_EQ(r->opType(), "Resize");
  EXPECT_FALSE(r->hasInput(1));  // roi omitted
  EXPECT_EQ(r->input(2)->constant().doubleAt(3), 2.0);
  EXPECT_EQ(r->attrs().s("coordinate_transformation_mode"), "asymmetric");
  EXPECT_EQ(r->attrs().s("nearest_mode"), "floor");
  EXPECT_FALSE(r->attrs().has("scales"));

  ModelBuilder m10(10);
  m10.input("x", {1, 1, 2, 2}).output("y");
  m10.initializer("sc", {4}, {1, 1, 2, 2});
  setAttr(m10.node("Resize", {"x", "sc"}, {"y"}, "rs"), "mode", std::string("linear"));
  auto g10 = importOnnxBytes(m10.bytes(), rawImport());
  Node* r10 = g10->findNode("rs");
  EXPECT_EQ(r10->numInputs(), 3u);
  EXPECT_FALSE(r10->hasInput(1));
  EXPECT_EQ(r10->input(2)->name(), "sc");
  EXPECT_EQ(r10->attrs().s("mode"), "linear");
  EXPECT_FALSE(r10->attrs().has("nearest_mode"));
}

// Upsample-9 and Resize-10 compute with the asymmetric mapping (in = out / scale), so values
// are replicated (nearest) or interpolated towards the right edge and then clamped (linear).
TEST(FrontendLegacy, LegacyResizeNumerics) {
  ModelBuilder up(9);
  up.input("x", {1, 1, 2, 2}).output("y");
  up.initializer("scales", {4}, {1, 1, 2, 2});
  up.node("Upsample", {"x", "scales"}, {"y"}, "up");
  auto g = importOnnxBytes(up.bytes());
  const Tensor x = Tensor::fromVector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor y = evalGraph(*g, {{"x", x}})[0];
  ASSERT_EQ(y.shape(), Shape({1, 1, 4, 4}));
  const std::vector<float> want = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 16), want);

  ModelBuilder rs(10);
  rs.input("x", {1, 1, 1, 2}).output("y");
  rs.initializer("scales", {4}, {1, 1, 1, 2});
  setAttr(rs.node("Resize", {"x", "scales"}, {"y"}, "rs"), "mode", std::string("linear"));
  auto g10 = importOnnxBytes(rs.bytes());
  const Tensor y10 = evalGraph(*g10, {{"x", Tensor::fromVector<float>({0, 4}, {1, 1, 1, 2})}})[0];
  ASSERT_EQ(y10.shape(), Shape({1, 1, 1, 4}));
  EXPECT_EQ(std::vector<float>(y10.data<float>(), y10.data<float>() + 4), std::vector<float>({0, 2, 4, 4}));
}

TEST(FrontendLegacy, SoftmaxOverNonLastAxisKeepsOldSemantics) {
  // Opset 11 Softmax(axis=1) on [2,3,4] normalizes over the 12 trailing elements of each row.
  ModelBuilder m(11);
  m.input("x", {2, 3, 4}).output("y");
  setAttr(m.node("Softmax", {"x"}, {"y"}, "sm"), "axis", int64_t{1});
  auto g = importOnnxBytes(m.bytes());
  EXPECT_EQ(countOps(*g, "Shape"), 0u);  // folded into the Reshape's constant shape
  EXPECT_EQ(countOps(*g, "Flatten"), 1u);
  EXPECT_EQ(g->findNode("sm")->attrs().i("axis"), -1);
  ASSERT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(g->outputs()[0]->shape(), Shape({2, 3, 4}));
  Tensor x(DType::Float32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) x.data<float>()[i] = static_cast<float>(i % 7) * 0.3f;
  const Tensor y = evalGraph(*g, {{"x", x}})[0];
  for (int row = 0; row < 2; ++row) {
    double denom = 0;
    for (int j = 0; j < 12; ++j) denom += std::exp(x.data<float>()[row * 12 + j]);
    for (int j = 0; j < 12; ++j) {
      EXPECT_NEAR(y.data<float>()[row * 12 + j], std::exp(x.data<float>()[row * 12 + j]) / denom, 1e-6);
    }
  }
}

TEST(FrontendLegacy, SoftmaxOverLastAxisStaysOneNode) {
  ModelBuilder m(11);
  m.input("x", {2, 3}).output("y");
  setAttr(m.node("Softmax", {"x"}, {"y"}, "sm"), "axis", int64_t{1});
  auto g = importOnnxBytes(m.bytes(), rawImport());
  EXPECT_EQ(g->numNodes(), 1u);
  EXPECT_EQ(g->findNode("sm")->attrs().i("axis"), -1);
}

TEST(FrontendLegacy, TrainingOutputsAndAttributesDropped) {
  ModelBuilder m(7);
  m.input("x", {1, 2, 2, 2}).output("y").output("mask_used");
  for (const char* n : {"scale", "bias", "mean", "var"}) m.initializer(n, {2}, {1.0f, 1.0f});
  auto& bn = m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                    {"bn", "run_mean", "run_var", "saved_mean", "saved_var"}, "bn");
  setAttr(bn, "spatial", int64_t{1});
  setAttr(bn, "consumed_inputs", std::vector<int64_t>{0, 0, 0, 1, 1});
  auto& d1 = m.node("Dropout", {"bn"}, {"y", "mask"}, "drop");
  setAttr(d1, "ratio", 0.5f);
  setAttr(d1, "is_test", int64_t{1});
  m.node("Dropout", {"x"}, {"d2", "mask_used"}, "drop_kept");
  auto g = importOnnxBytes(m.bytes(), rawImport());
  g->verify();
  EXPECT_EQ(g->findNode("bn")->numOutputs(), 1u);
  EXPECT_EQ(g->findNode("bn")->output()->name(), "bn");
  EXPECT_TRUE(g->findNode("bn")->attrs().empty());
  EXPECT_EQ(g->findNode("drop")->numOutputs(), 1u);
  EXPECT_EQ(g->findNode("drop")->output()->name(), "y");
  EXPECT_TRUE(g->findNode("drop")->attrs().empty());
  EXPECT_EQ(g->findNode("drop_kept")->numOutputs(), 2u);  // its mask is a graph output
  EXPECT_EQ(g->findValue("y")->producer(), g->findNode("drop"));
}

// ---------------------------------------------------------------- real models

class FrontendSharedModels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::sharedModelsDir();
    if (dir_.empty() || !fs::is_directory(dir_)) NPUC_SKIP_MISSING_DEP("shared models folder not found");
  }
  std::vector<fs::path> models() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ".onnx") out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

TEST_F(FrontendSharedModels, ShuffleNetShapeSubgraphsFoldAway) {
  auto g = importOnnxFile((dir_ / "shufflenet_v2_x0_5.onnx").string());
  for (const char* op : {"Shape", "Gather", "Constant"}) EXPECT_EQ(countOps(*g, op), 0u) << op;
  g->verify();
}

TEST_F(FrontendSharedModels, EveryModelImportsStaticAndMatchesReference) {
  const auto paths = models();
  ASSERT_FALSE(paths.empty());
  for (const fs::path& path : paths) {
    SCOPED_TRACE(path.filename().string());
    auto g = importOnnxFile(path.string());
    for (const Value* v : g->values()) EXPECT_TRUE(v->shapeIsStatic()) << v->name();
    fs::path npz = path;
    npz.replace_extension(".ref.npz");
    if (!fs::exists(npz)) continue;
    TempDir scratch;
    const testing::ReferenceData ref = testing::loadReferenceNpz(npz, scratch.path());
    ASSERT_FALSE(ref.inputs.empty());
    ASSERT_FALSE(ref.outputs.empty());
    const std::vector<Tensor> outs = evalGraph(*g, ref.inputs);
    ASSERT_EQ(outs.size(), ref.outputs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      const Tensor& want = ref.outputs[i].second;
      ASSERT_EQ(outs[i].shape(), want.shape()) << ref.outputs[i].first;
      double max_err = 0, max_ref = 0;
      for (int64_t k = 0; k < want.numel(); ++k) {
        max_err = std::max(max_err, std::abs(outs[i].doubleAt(k) - want.doubleAt(k)));
        max_ref = std::max(max_ref, std::abs(want.doubleAt(k)));
      }
      EXPECT_LE(max_err, 1e-4 * std::max(max_ref, 1.0)) << ref.outputs[i].first;
      EXPECT_GT(max_ref, 0.0) << "reference output is all zeros";
    }
  }
}

}  // namespace
}  // namespace npuc
