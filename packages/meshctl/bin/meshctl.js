#!/usr/bin/env node
await import('../src/bin/meshctl.ts');
