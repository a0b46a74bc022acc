// Who may talk to the HTTP API and UI (DESIGN §11). Checked on every request before routing:
//   1. Host must be a name this server answers to (a rebinding attacker's name is refused);
//   2. an Origin, when a browser sends one, must be this server's own (no cross-site calls);
//   3. a request that changes something must carry JSON (a plain HTML form cannot);
//   4. every /api/ call needs the admin token as a bearer token (no cookies, so no CSRF).
// /healthz and /readyz stay open to probes, which address the pod by IP.

import { createHash, timingSafeEqual } from 'node:crypto';
import { hostname } from 'node:os';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, RawServerDefault } from 'fastify';
import { MeshrelayError } from '@meshrelay/api';

export interface RequestGuardOptions {
  /** Host names (no port), lower case; IPv6 addresses in brackets. */
  readonly allowedHosts: ReadonlySet<string>;
  readonly adminToken: string;
}

const OPEN_PATHS = new Set(['/healthz', '/readyz']);
const MUTATING_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The names a server answers to: loopback, this machine's name, the bind address unless it is a
 * wildcard, and the names configured for it (relay certificate names, advertised host, extras).
 */
export function allowedHostsOf(parts: {
  httpHost: string;
  serverHosts: readonly string[];
  advertiseAddress: string | undefined;
  extra: readonly string[];
}): ReadonlySet<string> {
  const names = ['localhost', '127.0.0.1', '::1', hostname(), ...parts.serverHosts, ...parts.extra];
  if (!WILDCARD_BINDS.has(parts.httpHost)) names.push(parts.httpHost);
  if (parts.advertiseAddress !== undefined) names.push(hostOf(parts.advertiseAddress) ?? '');
  return new Set(names.filter((n) => n !== '').map(normalizeHostName));
}

/** Lower case; a bare IPv6 address gets brackets, as it has in a Host header. */
function normalizeHostName(name: string): string {
  const lower = name.trim().toLowerCase();
  return lower.includes(':') && !lower.startsWith('[') ? `[${lower}]` : lower;
}

/** The host name of a Host header or host:port ("[::1]:8090" → "[::1]"); undefined when it does not parse. */
function hostOf(hostHeader: string): string | undefined {
  try {
    const url = new URL(`http://${hostHeader}`);
    return url.username === '' && url.pathname === '/' ? url.hostname.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Installs the checks as the first onRequest hook of `app`. */
export function registerRequestGuard<L extends FastifyBaseLogger>(
  app: FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, L>,
  options: RequestGuardOptions,
): void {
  const wanted = sha256(options.adminToken);
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '';
    if (OPEN_PATHS.has(path)) return;
    const host = checkHost(req, options.allowedHosts);
    checkOrigin(req, host);
    if (MUTATING_METHODS.has(req.method)) checkContentType(req);
    if (path === '/api' || path.startsWith('/api/')) checkToken(req, reply, wanted);
  });
}

function checkHost(req: FastifyRequest, allowed: ReadonlySet<string>): string {
  const header = req.headers.host ?? '';
  const host = hostOf(header);
  if (host === undefined || !allowed.has(host)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_PERMISSION_DENIED',
      `this server does not answer to host "${header.slice(0, 100)}"; an operator adds a name with --http-allowed-hosts`,
    );
  }
  return header.toLowerCase();
}

function checkOrigin(req: FastifyRequest, host: string): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  if (origin.toLowerCase() !== `http://${host}` && origin.toLowerCase() !== `https://${host}`) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_PERMISSION_DENIED',
      `cross-origin requests are refused (Origin "${origin.slice(0, 100)}" is not this server)`,
    );
  }
}

function checkContentType(req: FastifyRequest): void {
  const type = req.headers['content-type'];
  const hasBody =
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') ||
    req.headers['transfer-encoding'] !== undefined;
  if (type === undefined ? hasBody : type.split(';')[0]?.trim().toLowerCase() !== 'application/json') {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `a ${req.method} needs a JSON body (Content-Type: application/json), not ${type ?? 'a body without a type'}`,
    );
  }
}

function checkToken(req: FastifyRequest, reply: FastifyReply, wanted: Buffer): void {
  const match = /^Bearer ([\x21-\x7e]+)$/.exec(req.headers.authorization ?? '');
  // Hashing both sides makes the comparison constant-time whatever the given length.
  if (match?.[1] === undefined || !timingSafeEqual(sha256(match[1]), wanted)) {
    void reply.header('www-authenticate', 'Bearer realm="meshrelay"');
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAUTHENTICATED',
      match
        ? 'the admin token is wrong'
        : 'this call needs the admin token: "Authorization: Bearer <token>" (the server logs where the token is)',
    );
  }
}
