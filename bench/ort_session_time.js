// Times ONNX Runtime session creation (load + graph optimization + kernel preparation): the peer
// of npuc's load_blob + init_runtime in bench/load_time.py.
// Usage: node ort_session_time.js MODEL.onnx ITERS   Prints {"create_ms": [...]}.
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const [model, iters] = [process.argv[2], Number(process.argv[3] || 1)];
  const times = [];
  for (let i = 0; i < iters; i++) {
    const t0 = process.hrtime.bigint();
    const session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (session.release) await session.release();
  }
  process.stdout.write(JSON.stringify({create_ms: times}) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
