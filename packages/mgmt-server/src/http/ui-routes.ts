import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import { MeshrelayError } from '@meshrelay/api';

/** The web UI's files: plain HTML, CSS and one JS module, shipped as they are (no build step). */
const UI_DIR = join(import.meta.dirname, '..', '..', 'ui');

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

// The UI loads nothing from elsewhere and builds its DOM without innerHTML; the
// policy keeps it that way even if a resource name carries markup.
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // Operators must see a new UI right after an upgrade, not a cached one.
  'cache-control': 'no-cache',
};

/**
 * Serves the web UI: `/` is index.html, `/ui/<file>` the assets. The files are
 * read once, here, so a request never touches the disk; a file this function
 * does not know a content type for is not served. Throws when the UI directory
 * is missing (a broken install should fail at start, not at the first page view).
 */
export function registerUiRoutes<L extends FastifyBaseLogger>(
  app: FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, L>,
  dir: string = UI_DIR,
): void {
  const files = readUiFiles(dir);
  const index = files.get('index.html');
  if (!index) throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `the web UI has no index.html in ${dir}`);
  app.get('/', async (_req, reply) => reply.headers(SECURITY_HEADERS).type(index.type).send(index.body));
  for (const [name, file] of files) {
    app.get(`/ui/${name}`, async (_req, reply) => reply.headers(SECURITY_HEADERS).type(file.type).send(file.body));
  }
}

function readUiFiles(dir: string): Map<string, { body: Buffer; type: string }> {
  const files = new Map<string, { body: Buffer; type: string }>();
  try {
    for (const name of readdirSync(dir)) {
      const type = CONTENT_TYPES[extname(name)];
      if (type) files.set(name, { body: readFileSync(join(dir, name)), type });
    }
  } catch (err) {
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `cannot read the web UI files in ${dir}`, { cause: err });
  }
  return files;
}
