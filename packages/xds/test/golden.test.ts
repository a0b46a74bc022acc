/**
 * Golden-file tests: each test/testdata/<case>/input.yaml (cluster, network, proxy locality,
 * the applied output and the discovered resources) is translated and the rendered xDS
 * compared with output.yaml. Run with UPDATE_GOLDEN=1 to rewrite the expected files.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import type { Resource } from '@meshrelay/api';
import {
  buildXdsConfig,
  loadAssignmentsFor,
  serverListenerFor,
  type MeshTls,
  type ProxyLocality,
  type XdsConfig,
  type XdsResource,
} from '../src/index.ts';

const UPDATE = process.env['UPDATE_GOLDEN'] === '1';
const TESTDATA = new URL('./testdata/', import.meta.url).pathname;

interface GoldenInput {
  cluster: string;
  network?: string;
  proxy?: ProxyLocality;
  output?: Resource[];
  discovered?: Resource[];
  meshTls?: MeshTls;
  /** XdsServer Listener names to render (with the node id of the server asking, when given). */
  serverListeners?: { name: string; nodeId?: string }[];
}

/** Each asked server Listener's body, or null when none is served for that name. */
function serverListeners(
  config: XdsConfig,
  asked: NonNullable<GoldenInput['serverListeners']>,
): Record<string, unknown> {
  return Object.fromEntries(asked.map((a) => [a.name, serverListenerFor(config, a.name, a.nodeId)?.body ?? null]));
}

function bodies(map: ReadonlyMap<string, XdsResource>): Record<string, unknown> {
  return Object.fromEntries([...map].map(([name, r]) => [name, r.body]));
}

export function renderCase(text: string): string {
  const input = parse(text) as GoldenInput;
  const config = buildXdsConfig({
    cluster: input.cluster,
    ...(input.network ? { network: input.network } : {}),
    ...(input.meshTls ? { meshTls: input.meshTls } : {}),
    output: input.output ?? [],
    discovered: input.discovered ?? [],
  });
  return stringify(
    {
      findings: config.findings,
      listeners: bodies(config.listeners),
      routes: bodies(config.routes),
      clusters: bodies(config.clusters),
      endpoints: bodies(loadAssignmentsFor(config, input.proxy ?? {})),
      ...(input.serverListeners ? { serverListeners: serverListeners(config, input.serverListeners) } : {}),
    },
    { aliasDuplicateObjects: false },
  );
}

describe('golden xDS translations', () => {
  const cases = readdirSync(TESTDATA, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();

  it('given the testdata directory, when listing cases, then there is at least one case', () => {
    assert.ok(cases.length > 0);
  });

  for (const name of cases) {
    it(`given case ${name}, when translated, then the result matches output.yaml`, () => {
      const dir = join(TESTDATA, name);
      const rendered = renderCase(readFileSync(join(dir, 'input.yaml'), 'utf8'));
      const expectedFile = join(dir, 'output.yaml');
      if (UPDATE) writeFileSync(expectedFile, rendered);
      assert.ok(existsSync(expectedFile), `${expectedFile} is missing: run with UPDATE_GOLDEN=1`);
      assert.equal(rendered, readFileSync(expectedFile, 'utf8'));
    });
  }
});
