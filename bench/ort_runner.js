// Runs an ONNX model in ONNX Runtime (npm onnxruntime-node, CPU) and times it.
// Usage: node ort_runner.js SPEC.json
// SPEC: {"model": path, "inputs": [{"name", "dims", "file"}], "threads": 1, "warmup": N,
//        "iters": N, "out_dir": path}  — input files hold raw little-endian float32.
// Prints one JSON line: {"latencies_ms": [...], "outputs": [{"name", "dims", "file"}]}.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const inp of spec.inputs) {
    const buf = fs.readFileSync(inp.file);
    const data = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    feeds[inp.name] = new ort.Tensor('float32', data, inp.dims);
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
    outputs.push({name, dims: t.dims, file});
  }
  process.stdout.write(JSON.stringify({latencies_ms: lat, outputs}) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
