#!/usr/bin/env node
await import('../src/bin/meshrelay-agent.ts');
