/**
 * Finds the fields a (schema-valid) Gloo spec sets that Meshrelay accepts but does not
 * implement, by walking the value alongside its schema's `properties` and `items`.
 */
import { isRecord } from '@meshrelay/api';
import { UNIMPLEMENTED, type JsonSchema, type UnimplementedEffect } from './schemas/gloo-common.ts';
import { joinPath } from './schema-errors.ts';

export interface UnimplementedField {
  readonly path: string;
  readonly effect: UnimplementedEffect;
}

function walk(value: unknown, schema: JsonSchema, path: string, out: UnimplementedField[]): void {
  const effect = schema[UNIMPLEMENTED] as UnimplementedEffect | undefined;
  if (effect !== undefined) {
    out.push({ path, effect });
    return;
  }
  const properties = schema['properties'];
  if (isRecord(value) && isRecord(properties)) {
    for (const key of Object.keys(value).sort()) {
      const child = properties[key];
      if (isRecord(child)) walk(value[key], child, joinPath(path, key), out);
    }
    return;
  }
  const items = schema['items'];
  if (Array.isArray(value) && isRecord(items)) value.forEach((item, i) => walk(item, items, joinPath(path, i), out));
}

/** Unimplemented fields set in `spec` (validated against `schema`), with paths below `spec`. */
export function unimplementedFields(spec: unknown, schema: JsonSchema): UnimplementedField[] {
  const out: UnimplementedField[] = [];
  walk(spec, schema, 'spec', out);
  return out;
}
