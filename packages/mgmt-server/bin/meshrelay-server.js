#!/usr/bin/env node
import { enableCompileCache } from 'node:module';

// Keep stripped and compiled modules between starts (keyed by source hash; see the agent's
// binary): a restarted server loads its code faster and never loads the
// TypeScript transpiler when its sources did not change, which shortens a reconnect storm
// (see docs/design/decisions/README.md#compile-cache).
enableCompileCache(new URL('../.compile-cache', import.meta.url).pathname);
// The process's own settings live in one module (src/runtime.ts): on Linux this starts the
// process once more, with the same id and arguments and a fixed glibc mmap threshold, before
// anything else is loaded.
const { prepareServerProcess } = await import('../src/runtime.ts');
try {
  prepareServerProcess();
} catch (err) {
  console.error(`meshrelay-server: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}
await import('../src/bin/meshrelay-server.ts');
