#!/usr/bin/env node
import { enableCompileCache } from 'node:module';

// An operator runs meshctl many times: keep its stripped and compiled modules between runs
// (keyed by source hash, beside the code; see the agent's binary).
enableCompileCache(new URL('../.compile-cache', import.meta.url).pathname);
await import('../src/bin/meshctl.ts');
