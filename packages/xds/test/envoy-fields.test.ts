/**
 * Every field the translation writes exists in Envoy's protos (the ones @grpc/grpc-js-xds
 * ships): protobufjs' fromObject drops unknown keys silently, so a misspelt field would
 * vanish on the wire without this walk. Each golden case's resources are checked.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import { parse } from 'yaml';
import { RESOURCE_PROTO_FILES } from '../src/names.ts';
import { loadEnvoyRoot } from './envoy-protos.ts';

const TESTDATA = new URL('./testdata/', import.meta.url).pathname;
const TYPES: Readonly<Record<string, string>> = {
  listeners: 'envoy.config.listener.v3.Listener',
  routes: 'envoy.config.route.v3.RouteConfiguration',
  clusters: 'envoy.config.cluster.v3.Cluster',
  endpoints: 'envoy.config.endpoint.v3.ClusterLoadAssignment',
  serverListeners: 'envoy.config.listener.v3.Listener',
};

function loadRoot(): protobuf.Root {
  return loadEnvoyRoot(RESOURCE_PROTO_FILES);
}

/** Paths of keys in `value` that `type` has no field for (following `@type` into Any payloads). */
function unknownFields(
  root: protobuf.Root,
  type: protobuf.Type,
  value: Record<string, unknown>,
  path: string,
): string[] {
  const out: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (key === '@type') continue;
    const field = type.fields[key];
    if (field === undefined) {
      out.push(`${path}.${key}`);
      continue;
    }
    const fieldType = field.resolvedType;
    if (!(fieldType instanceof protobuf.Type)) continue;
    const items = field.map ? Object.values(v as object) : field.repeated ? (v as unknown[]) : [v];
    for (const [i, item] of items.entries()) {
      if (typeof item !== 'object' || item === null) continue;
      const record = item as Record<string, unknown>;
      const any = fieldType.fullName === '.google.protobuf.Any' && typeof record['@type'] === 'string';
      const target = any ? root.lookupType(String(record['@type']).split('/').pop() ?? '') : fieldType;
      out.push(...unknownFields(root, target, record, `${path}.${key}${field.repeated || field.map ? `[${i}]` : ''}`));
    }
  }
  return out;
}

describe("the translation's fields against Envoy's protos", () => {
  const root = loadRoot();
  const cases = readdirSync(TESTDATA, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  for (const name of cases) {
    it(`given golden case ${name}, when every resource is walked with its proto type, then no field is unknown and each encodes`, () => {
      const output = parse(readFileSync(join(TESTDATA, name, 'output.yaml'), 'utf8')) as Record<
        string,
        Record<string, Record<string, unknown>>
      >;
      let checked = 0;
      for (const [kind, typeName] of Object.entries(TYPES)) {
        const type = root.lookupType(typeName);
        for (const [resourceName, body] of Object.entries(output[kind] ?? {})) {
          if (body === null) continue; // a server Listener not served for that name
          assert.deepEqual(unknownFields(root, type, body, `${kind}[${resourceName}]`), []);
          assert.ok(type.encode(type.fromObject(body)).finish().length > 0);
          checked++;
        }
      }
      assert.ok(checked > 0);
    });
  }
});
