#!/usr/bin/env node
import { enableCompileCache } from 'node:module';

// The sources are TypeScript, which Node strips at load time with a WebAssembly transpiler that
// then stays resident (see docs/design/decisions/README.md#compile-cache). The compile cache keeps
// the stripped and compiled modules, keyed by their source's hash, so a start whose sources did not
// change never loads the transpiler. It lives beside the code: whoever may write it may write the
// code anyway.
enableCompileCache(new URL('../.compile-cache', import.meta.url).pathname);
// The process's own settings live in one module (src/runtime.ts): it may start the process once
// more, in place, with V8 flags that can only be set at start.
const { prepareAgentProcess } = await import('../src/runtime.ts');
prepareAgentProcess();
await import('../src/bin/meshrelay-agent.ts');
