#include "lower/program_codec.h"

#include <fmt/format.h>

#include <string_view>

#include "blob/blob_limits.h"
#include "blob/byte_io.h"
#include "common/error.h"
#include "lower/pipeline_dedup.h"
#include "lower/weight_packing.h"

namespace npuc::lower {

namespace {

// Names (tensor values, op types, task patterns) take blob::kMaxNameBytes; pipeline params (a
// few hundred bytes per fused node in practice) and CPU placement reasons blob::kMaxTextBytes.
using blob::kMaxNameBytes;
using blob::kMaxTextBytes;

void checkVersion(blob::ByteReader& r, const char* what) {
  const uint32_t v = r.u32(what);
  if (v != kProgramCodecVersion)
    r.fail(fmt::format("{} {} is not supported (expected {})", what, v, kProgramCodecVersion));
}

template <typename E>
E enumField(blob::ByteReader& r, const char* what, uint8_t max_code) {
  const uint8_t code = r.u8(what);
  if (code > max_code) r.fail(fmt::format("{} code {} is invalid", what, code));
  return static_cast<E>(code);
}

void writeIds(blob::ByteWriter& w, const std::vector<uint32_t>& ids, const char* what) {
  w.count(ids.size(), what);
  for (uint32_t id : ids) w.u32(id);
}

std::vector<uint32_t> readIds(blob::ByteReader& r, const char* what, uint32_t limit) {
  const uint32_t n = r.count(what, 4);
  std::vector<uint32_t> ids(n);
  for (uint32_t& id : ids) {
    id = r.u32(what);
    if (id >= limit) r.fail(fmt::format("{} index {} is out of range", what, id));
  }
  return ids;
}

std::string encodeTasks(const LoweredProgram& p) {
  blob::ByteWriter w;
  w.u32(kProgramCodecVersion);
  w.count(p.tensors.size(), "tensors");
  for (const ProgramTensor& t : p.tensors) {
    w.str(t.value, kMaxNameBytes, "program tensor name");
    w.u8(static_cast<uint8_t>(t.device));
    w.u8(static_cast<uint8_t>(t.layout));
    w.u8(static_cast<uint8_t>(t.elem));
    w.u32(t.c2);
  }
  w.count(p.tasks.size(), "tasks");
  for (const Task& t : p.tasks) {
    w.u8(static_cast<uint8_t>(t.kind));
    writeIds(w, t.nodes, "task nodes");
    w.str(t.pattern, kMaxNameBytes, "task pattern");
    w.u8(static_cast<uint8_t>(t.compute));
    w.u8(t.tile.tiled ? 1 : 0);
    w.i64(t.tile.oc_block);
    w.i64(t.tile.tile_rows);
    w.u8(t.tile.spatial_outer ? 1 : 0);
    w.i64(t.tile.tiles);
    w.u32(t.pipeline);
    w.u32(t.cpu_op);
    writeIds(w, t.inputs, "task inputs");
    writeIds(w, t.outputs, "task outputs");
    w.u8(static_cast<uint8_t>(t.convert.direction));
    w.u8(t.weights.present ? 1 : 0);
    if (t.weights.present) {
      w.u64(t.weights.offset);
      w.u64(t.weights.size);
      w.u8(static_cast<uint8_t>(t.weights.layout));
      w.u8(static_cast<uint8_t>(t.weights.elem));
      w.u32(t.weights.c2);
      for (int64_t d : t.weights.dims) w.i64(d);
      // Only the int4 code (new in blob format 2.1) carries its multiplier count: older blobs
      // never hold it, so their TASK bytes are unchanged.
      if (t.weights.elem == ElemType::Int4) w.u32(t.weights.multipliers);
    }
  }
  return w.take();
}

std::string encodePipelines(const LoweredProgram& p) {
  blob::ByteWriter w;
  w.u32(kProgramCodecVersion);
  w.count(p.pipelines.size(), "pipelines");
  for (const Pipeline& q : p.pipelines) {
    w.raw(q.digest.data(), q.digest.size());
    w.str(q.op_type, kMaxNameBytes, "pipeline op type");
    w.str(q.params, kMaxTextBytes, "pipeline params");
  }
  return w.take();
}

std::string encodeCpuOps(const LoweredProgram& p) {
  blob::ByteWriter w;
  w.u32(kProgramCodecVersion);
  w.count(p.cpu_ops.size(), "CPU ops");
  for (const CpuOp& op : p.cpu_ops) {
    w.u32(op.node);
    w.str(op.op_type, kMaxNameBytes, "CPU op type");
    w.str(op.reason, kMaxTextBytes, "CPU op reason");
  }
  return w.take();
}

void decodePipelines(std::string_view bytes, LoweredProgram& p) {
  blob::ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "PIPE section");
  checkVersion(r, "pipeline table version");
  // digest (16) + two string lengths (8)
  const uint32_t n = r.count("pipelines", 24);
  for (uint32_t i = 0; i < n; ++i) {
    Pipeline q;
    for (uint8_t& b : q.digest) b = r.u8("pipeline digest");
    q.op_type = r.str("pipeline op type", kMaxNameBytes);
    q.params = r.str("pipeline params", kMaxTextBytes);
    if (pipelineDigest(q.params) != q.digest)
      r.fail(fmt::format("pipeline {} ({}): digest does not match its params", i, q.op_type));
    for (const Pipeline& earlier : p.pipelines)
      if (earlier.digest == q.digest) r.fail(fmt::format("pipeline {} is listed twice", i));
    p.pipelines.push_back(std::move(q));
  }
  r.expectEnd();
}

void decodeCpuOps(std::string_view bytes, LoweredProgram& p) {
  blob::ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "CPUO section");
  checkVersion(r, "CPU op table version");
  const uint32_t n = r.count("CPU ops", 12);  // node (4) + two string lengths (8)
  for (uint32_t i = 0; i < n; ++i) {
    CpuOp op;
    op.node = r.u32("CPU op node index");
    op.op_type = r.str("CPU op type", kMaxNameBytes);
    op.reason = r.str("CPU op reason", kMaxTextBytes);
    p.cpu_ops.push_back(std::move(op));
  }
  r.expectEnd();
}

void decodeWeightRef(blob::ByteReader& r, std::string_view nwgt, PackedWeightRef& ref) {
  ref.present = true;
  ref.offset = r.u64("packed weight offset");
  ref.size = r.u64("packed weight size");
  ref.layout =
      enumField<TensorLayout>(r, "packed weight layout", static_cast<uint8_t>(TensorLayout::Nc1hwc2));
  ref.elem = enumField<ElemType>(r, "packed weight element type", static_cast<uint8_t>(ElemType::Int4));
  ref.c2 = r.u32("packed weight C2");
  for (int64_t& d : ref.dims) {
    d = r.i64("packed weight dim");
    if (d < 0 || d > (int64_t{1} << 31)) r.fail(fmt::format("packed weight dim {} is invalid", d));
  }
  if (ref.elem == ElemType::Int4) ref.multipliers = r.u32("packed weight group multipliers");
  if (ref.layout != TensorLayout::Nc1hwc2 || ref.c2 == 0 || ref.elem == ElemType::Float32 ||
      ref.elem == ElemType::AsGraph)
    r.fail("packed weights must be int4, int8, int16 or fp16 NC1HWC2 with C2 >= 1");
  if (ref.offset % blob::kBlobAlignment != 0)
    r.fail(fmt::format("packed weight offset {} is not a multiple of 64", ref.offset));
  if (ref.offset > nwgt.size() || ref.size > nwgt.size() - ref.offset)
    r.fail(fmt::format("packed weights [{}, +{}) lie outside the {}-byte NWGT section", ref.offset, ref.size,
                       nwgt.size()));
  if (packedWeightBytes(ref) != ref.size)
    r.fail(fmt::format("packed weight size {} does not match its dims and C2", ref.size));
}

void decodeTasks(std::string_view bytes, std::string_view nwgt, LoweredProgram& p) {
  blob::ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "TASK section");
  checkVersion(r, "task table version");
  const uint32_t n_tensors = r.count("tensors", 11);  // name length + 3 codes + c2
  for (uint32_t i = 0; i < n_tensors; ++i) {
    ProgramTensor t;
    t.value = r.str("tensor value name", kMaxNameBytes);
    t.device = enumField<TensorDevice>(r, "tensor device", static_cast<uint8_t>(TensorDevice::Host));
    t.layout = enumField<TensorLayout>(r, "tensor layout", static_cast<uint8_t>(TensorLayout::Nc1hwc2));
    t.elem = enumField<ElemType>(r, "tensor element type", static_cast<uint8_t>(ElemType::Int16));
    t.c2 = r.u32("tensor C2");
    if ((t.layout == TensorLayout::Nc1hwc2) != (t.c2 != 0))
      r.fail("tensor '" + t.value + "': C2 contradicts its layout");
    p.tensors.push_back(std::move(t));
  }
  // kind, 4 counts, pattern length, codes, tile fields, indices: at least 60 bytes each.
  const uint32_t n_tasks = r.count("tasks", 60);
  for (uint32_t i = 0; i < n_tasks; ++i) {
    Task t;
    t.id = i;
    t.kind = enumField<TaskKind>(r, "task kind", static_cast<uint8_t>(TaskKind::Convert));
    t.nodes = readIds(r, "task node", kNoIndex);
    t.pattern = r.str("task pattern", kMaxNameBytes);
    t.compute = enumField<ElemType>(r, "task compute type", static_cast<uint8_t>(ElemType::Int16));
    t.tile.tiled = r.u8("tiled flag") != 0;
    t.tile.oc_block = r.i64("tile output-channel block");
    t.tile.tile_rows = r.i64("tile rows");
    t.tile.spatial_outer = r.u8("tile loop order") != 0;
    t.tile.tiles = r.i64("tile count");
    if (t.tile.tiles < 1 || (t.tile.tiled && (t.tile.oc_block < 1 || t.tile.tile_rows < 1)))
      r.fail(fmt::format("task {}: invalid tile configuration", i));
    t.pipeline = r.u32("task pipeline");
    if (t.pipeline != kNoIndex && t.pipeline >= p.pipelines.size())
      r.fail(fmt::format("task {}: pipeline {} does not exist", i, t.pipeline));
    t.cpu_op = r.u32("task CPU op");
    if (t.cpu_op != kNoIndex && t.cpu_op >= p.cpu_ops.size())
      r.fail(fmt::format("task {}: CPU op {} does not exist", i, t.cpu_op));
    t.inputs = readIds(r, "task input tensor", n_tensors);
    t.outputs = readIds(r, "task output tensor", n_tensors);
    t.convert.direction =
        enumField<ConvertDirection>(r, "convert direction", static_cast<uint8_t>(ConvertDirection::ToHost));
    if (r.u8("packed weight flag")) decodeWeightRef(r, nwgt, t.weights);
    const bool npu = t.kind == TaskKind::Npu, cpu = t.kind == TaskKind::Cpu;
    if (npu != (t.pipeline != kNoIndex) || cpu != (t.cpu_op != kNoIndex) || (!npu && t.weights.present) ||
        (t.kind == TaskKind::Convert) != t.nodes.empty()) {
      r.fail(fmt::format("task {} ({}): fields contradict its kind", i, taskKindName(t.kind)));
    }
    p.tasks.push_back(std::move(t));
  }
  r.expectEnd();
}

}  // namespace

ProgramSections encodeProgram(const LoweredProgram& program) {
  return {encodeTasks(program), encodePipelines(program), encodeCpuOps(program), program.packed_weights};
}

LoweredProgram decodeProgram(const ProgramSections& s) {
  LoweredProgram p;
  decodePipelines(s.pipelines, p);
  decodeCpuOps(s.cpu_ops, p);
  decodeTasks(s.tasks, s.packed_weights, p);
  p.packed_weights = s.packed_weights;
  return p;
}

std::vector<blob::ExtraSection> programExtraSections(const LoweredProgram& program, bool required) {
  ProgramSections s = encodeProgram(program);
  return {{blob::kSectionTasks, required, std::move(s.tasks)},
          {blob::kSectionPipelines, required, std::move(s.pipelines)},
          {blob::kSectionCpuOps, required, std::move(s.cpu_ops)},
          {kSectionNpuWeights, required, std::move(s.packed_weights)}};
}

bool findProgramSections(const std::vector<blob::ExtraSection>& extra, ProgramSections* out) {
  int found = 0;
  bool has_weights = false;
  for (const blob::ExtraSection& s : extra) {
    if (s.kind == blob::kSectionTasks) out->tasks = s.bytes.str(), ++found;
    if (s.kind == blob::kSectionPipelines) out->pipelines = s.bytes.str(), ++found;
    if (s.kind == blob::kSectionCpuOps) out->cpu_ops = s.bytes.str(), ++found;
    if (s.kind == kSectionNpuWeights) out->packed_weights = s.bytes, has_weights = true;
  }
  if (found == 0 && !has_weights) return false;
  if (found != 3)
    throw BlobError(
        fmt::format("the blob has only some of the TASK, PIPE and CPUO sections ({} of 3): the lowered "
                    "program is incomplete",
                    found));
  return true;
}

}  // namespace npuc::lower
