#!/usr/bin/env node
import { enableCompileCache } from 'node:module';
import { setFlagsFromString } from 'node:v8';

// V8 runs GC and compilation helpers on a pool of platform threads (4 by default), and every helper
// that ever worked keeps its own malloc arena (see
// docs/design/decisions/README.md#agent-v8-pool-size). An agent is idle most of its life, so one
// helper is plenty. The pool size can only be chosen when the process starts, so the binary
// replaces itself once, in place (execve keeps the pid, the open stdio and the environment), with
// the flag set.
const POOL_FLAG = '--v8-pool-size=1';
if (!process.execArgv.some((arg) => arg.startsWith('--v8-pool-size')) && typeof process.execve === 'function') {
  process.execve(
    process.execPath,
    [process.execPath, POOL_FLAG, ...process.execArgv, ...process.argv.slice(1)],
    process.env,
  );
}
// Every workload cluster runs an agent: V8's size-over-speed heap policy keeps
// its heap (and so its RSS) close to what it holds instead of growing it ahead
// of the first scan's garbage, at no measurable cost (see
// docs/design/decisions/README.md#agent-optimize-for-size).
setFlagsFromString('--optimize-for-size');
// The sources are TypeScript, which Node strips at load time with a WebAssembly transpiler that
// then stays resident (see docs/design/decisions/README.md#compile-cache). The compile cache keeps
// the stripped and compiled modules, keyed by their source's hash, so a start whose sources did not
// change never loads the transpiler. It lives beside the code: whoever may write it may write the
// code anyway.
enableCompileCache(new URL('../.compile-cache', import.meta.url).pathname);
await import('../src/bin/meshrelay-agent.ts');
