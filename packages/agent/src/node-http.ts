import { createRequire } from 'node:module';
import type * as Http from 'node:http';
import type * as Https from 'node:https';

// An ES import of node:http evaluates every export of the builtin, including the lazy WebSocket
// getter, which loads Node's bundled undici: more RSS in a process that never makes a fetch or
// WebSocket (see docs/design/decisions/README.md#agent-node-http-without-undici). Loaded as
// CommonJS, nothing else is.
const loadBuiltin = createRequire(import.meta.url);

/** node:http, without undici. */
export const http = loadBuiltin('node:http') as typeof Http;
/** node:https, without undici. */
export const https = loadBuiltin('node:https') as typeof Https;
