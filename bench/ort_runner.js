// Runs an ONNX model in ONNX Runtime (npm onnxruntime-node, CPU) and times it.
// Usage: node ort_runner.js SPEC.json
// SPEC: {"model": path, "inputs": [{"name", "dims", "file"}], "threads": 1, "warmup": N,
//        "iters": N, "out_dir": path, "report_status": false}  — input files hold raw little-endian
//        data of the input's "dtype" (an ORT tensor type name: float32 when absent, int64, int32,
//        uint8, int8, bool).
// Prints one JSON line: {"latencies_ms": [...], "outputs": [{"name", "dims", "dtype", "file"}]},
// with "report_status": also "status": {"start", "end"}, this process's /proc/self/status memory
// fields in bytes (VmHWM, VmRSS, RssAnon, RssFile, RssShmem) before the session and after the runs.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const MEMORY_FIELDS = ['VmHWM', 'VmRSS', 'RssAnon', 'RssFile', 'RssShmem'];

// The memory fields of /proc/self/status (Linux), in bytes; the kernel prints kB.
function procStatus() {
  const out = {};
  for (const line of fs.readFileSync('/proc/self/status', 'utf8').split('\n')) {
    const [key, value] = line.split(':');
    if (MEMORY_FIELDS.includes(key)) out[key] = parseInt(value, 10) * 1024;
  }
  return out;
}

// ORT tensor type -> typed array that views the raw bytes of an input file.
const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int16: Int16Array, int8: Int8Array, uint8: Uint8Array, uint16: Uint16Array, bool: Uint8Array,
};

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const start = spec.report_status ? procStatus() : null;
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const inp of spec.inputs) {
    const dtype = inp.dtype || 'float32';
    const Arr = ARRAYS[dtype];
    if (!Arr) throw new Error(`input ${inp.name}: dtype ${dtype} is not handled by ort_runner.js`);
    const buf = fs.readFileSync(inp.file);
    // Copied so the typed array is aligned whatever the Buffer's offset in its pool.
    const bytes = new Uint8Array(buf);
    const data = new Arr(bytes.buffer, 0, bytes.byteLength / Arr.BYTES_PER_ELEMENT);
    feeds[inp.name] = new ort.Tensor(dtype, data, inp.dims);
  }
  let result;
  for (let i = 0; i < spec.warmup; i++) result = await session.run(feeds);
  const lat = [];
  for (let i = 0; i < spec.iters; i++) {
    const t0 = process.hrtime.bigint();
    result = await session.run(feeds);
    lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const outputs = [];
  for (const name of session.outputNames) {
    const t = result[name];
    const file = path.join(spec.out_dir, `ort_out_${outputs.length}.bin`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    outputs.push({name, dims: t.dims, dtype: t.type, file});
  }
  const report = {latencies_ms: lat, outputs};
  if (start) report.status = {start, end: procStatus()};
  process.stdout.write(JSON.stringify(report) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
