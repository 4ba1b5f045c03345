// Runs a wasm32-wasip1 program in Node's V8: `node run.mjs MODULE ARGS…`.
// The whole file system is preopened, so the program reads its manifest
// and bodies by their paths, and its thread's CPU time from /proc.
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';

const [module, ...args] = process.argv.slice(2);
const wasi = new WASI({ version: 'preview1', args: [module, ...args], env: process.env, preopens: { '/': '/' } });
const compiled = await WebAssembly.compile(await readFile(module));
const instance = await WebAssembly.instantiate(compiled, wasi.getImportObject());
process.exitCode = wasi.start(instance);
