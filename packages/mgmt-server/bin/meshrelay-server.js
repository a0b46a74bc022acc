#!/usr/bin/env node
await import('../src/bin/meshrelay-server.ts');
