// SPDX-License-Identifier: Apache-2.0
// cuabi from Node.js through a Node-API addon around cuabi_call: every entry point is called
// by the name, version and signature that driver_api.json gives it.
// usage: node saxpy.cjs ADDON DRIVER_API_JSON PTX_FILE
// Without a driver it prints the reason and exits with 3.
'use strict';
const fs = require('fs');
const [addonPath, tablePath, ptxPath] = process.argv.slice(2);
const cuabi = require(addonPath);
const table = JSON.parse(fs.readFileSync(tablePath, 'utf8'));
const entries = new Map(table.entry_points.map((e) => [e.name, e]));

class CudaError extends Error {
  constructor(what, code) {
    super(`${what}: ${cuabi.errorName(code)}: ${cuabi.errorString(code)}`);
    this.code = code;
  }
}

// cu('cuMemAlloc', ptr, bytes): the entry point's driver name, pinned version and signature.
function cu(name, ...args) {
  const e = entries.get(name);
  const rc = cuabi.call(e.driver_name, e.version, e.signature, args);
  if (rc !== 0) throw new CudaError(name, rc);
}

const u64 = () => new BigUint64Array(1);
const ptx = Buffer.concat([fs.readFileSync(ptxPath), Buffer.from([0])]);
try {
  cu('cuInit', 0);
} catch (e) {
  if (!(e instanceof CudaError)) throw e;
  console.log(e.message);
  process.exit(3);
}
const n = 1000;
const x = new Float32Array(n), y = new Float32Array(n);
for (let i = 0; i < n; i++) { x[i] = i; y[i] = 2; }
const device = new Int32Array(1), context = u64(), mod = u64(), saxpy = u64();
cu('cuDeviceGet', device, 0);
cu('cuCtxCreate', context, null, 0, device[0]);
cu('cuModuleLoadData', mod, ptx);
cu('cuModuleGetFunction', saxpy, mod[0], Buffer.from('saxpy\0'));
const bytes = n * 4;
const dx = u64(), dy = u64();
cu('cuMemAlloc', dx, bytes);
cu('cuMemAlloc', dy, bytes);
cu('cuMemcpyHtoD', dx[0], x, bytes);
cu('cuMemcpyHtoD', dy[0], y, bytes);
// kernelParams: an array of the addresses of the four parameter values.
const a = new Float32Array([0.5]), count = new Int32Array([n]);
const params = new BigUint64Array([a, dx, dy, count].map((v) => cuabi.address(v)));
const CU_STREAM_LEGACY = BigInt(table.constants.CU_STREAM_LEGACY.value);
cu('cuLaunchKernel', saxpy[0], Math.ceil(n / 128), 1, 1, 128, 1, 1, 0, CU_STREAM_LEGACY, params, null);
cu('cuCtxSynchronize');
cu('cuMemcpyDtoH', y, dy[0], bytes);
cu('cuMemFree', dx[0]);
cu('cuMemFree', dy[0]);
cu('cuModuleUnload', mod[0]);
cu('cuCtxDestroy', context[0]);
for (let i = 0; i < n; i++) {
  if (y[i] !== 0.5 * i + 2) {
    console.log(`saxpy: y[${i}] is ${y[i]}`);
    process.exit(1);
  }
}
console.log(`saxpy on ${n} elements: correct`);
