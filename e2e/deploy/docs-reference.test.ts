// The reference pages against what the code serves: every metric a real meshrelay-server exports
// and every metric the agent defines has a row in docs/reference/metrics.md, and every /api/v1
// route the server registers has one in docs/reference/http-api.md. A new series or route that
// nobody documented fails here.
import assert from 'node:assert/strict';
import { globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Mesh, ROOT } from '../mesh.ts';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** The metrics page split at its agent heading: the server's rows, then the agent's. */
function metricsPage(): { server: string; agent: string } {
  const page = read('docs/reference/metrics.md');
  const at = page.indexOf('\n## meshrelay-agent');
  assert.ok(at > 0, 'docs/reference/metrics.md has a "## meshrelay-agent" section');
  return { server: page.slice(0, at), agent: page.slice(at) };
}

/** Whether a page names a metric in code, bare or with its labels. */
const names = (page: string, metric: string): boolean =>
  page.includes(`\`${metric}\``) || page.includes(`\`${metric}{`);

/** The string literals of a source tree that match a pattern's first group. */
function literals(glob: string, pattern: RegExp): string[] {
  const found = new Set<string>();
  for (const file of globSync(glob, { cwd: ROOT })) {
    for (const m of read(file).matchAll(pattern)) found.add(m[1] ?? '');
  }
  return [...found].sort();
}

test(
  'given a real meshrelay-server, when its /metrics is scraped, then every series it exports has a row on the metrics page',
  { timeout: 60_000 },
  async (t) => {
    const mesh = await Mesh.start(t, { redis: false });
    const server = await mesh.startServer('mgmt-0');
    const exported = [...(await mesh.metrics(server)).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] ?? '');
    const own = exported.filter((name) => !name.startsWith('meshrelay_process_'));
    assert.ok(own.length >= 20, `expected the server's own metrics, found ${own.join(', ')}`);

    const { server: page } = metricsPage();
    assert.deepEqual(
      own.filter((name) => !names(page, name)),
      [],
    );
  },
);

test("given the agent's metric definitions, when compared with the metrics page, then each has a row in its agent section", () => {
  const defined = literals('packages/agent/src/**/*.ts', /\bname: '((?:relay|meshrelay)_[a-z_]+)'/g);
  assert.ok(defined.length >= 10, `expected the agent's metrics, found ${defined.join(', ')}`);

  const { agent: page } = metricsPage();
  assert.deepEqual(
    defined.filter((name) => !names(page, name)),
    [],
  );
});

test("given the server's HTTP routes, when compared with the HTTP API page, then every /api/v1 route has a row", () => {
  const routes = literals('packages/mgmt-server/src/http/**/*.ts', /'(\/api\/v1\/[a-z0-9/:_-]+)'/g);
  assert.ok(routes.length >= 10, `expected the API's routes, found ${routes.join(', ')}`);

  // The page writes a path parameter as NAME and may list sibling paths together (`…/input`, `/output`).
  const page = read('docs/reference/http-api.md').replaceAll('NAME', ':name');
  const rows = page.split('\n').filter((line) => line.startsWith('| `'));
  const documented = (route: string): boolean =>
    rows.some(
      (row) =>
        row.includes(route) ||
        [...row.matchAll(/`(\/[a-z0-9/:_-]+)`/g)].some(
          (m) => route.endsWith(m[1] ?? '\0') && row.includes(route.slice(0, route.lastIndexOf('/'))),
        ),
    );
  assert.deepEqual(
    routes.filter((route) => !documented(route)),
    [],
  );
});
