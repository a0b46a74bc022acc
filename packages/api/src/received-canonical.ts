import { deepFreeze, keepEncoding, keptEncoding } from './canonical.ts';
import { LoopSlicer } from './loop-slicer.ts';
import type { Resource } from './resource.ts';

/**
 * Takes the resources of a full snapshot received from a peer whose encoder is not trusted (an
 * agent's input): each resource whose received text is exactly its canonical encoding is
 * deep-frozen and the text kept as its encoding, so building the snapshot from it neither
 * copies nor encodes it again (at tier M, 50 inputs of 12 k resources each). Resources whose
 * text is not canonical are left alone: the ordinary build copies and encodes them, and the
 * snapshot's hash is the canonical one either way. `texts[i]` must be the JSON text
 * `resources[i]` was parsed from (AssembledSnapshot.texts); nothing is adopted when the counts
 * differ. Returns how many were adopted; gives the event loop turns.
 */
export async function adoptCanonicalTexts(resources: readonly Resource[], texts: readonly string[], slicer = new LoopSlicer()): Promise<number> {
  if (resources.length !== texts.length) return 0;
  let adopted = 0;
  for (let i = 0; i < resources.length; i++) {
    const r = resources[i] as Resource;
    const text = texts[i] as string;
    if (keptEncoding(r) === undefined && isCanonicalText(r, text)) {
      keepEncoding(deepFreeze(r), text);
      adopted++;
    }
    if (slicer.due()) await slicer.yield();
  }
  return adopted;
}

/**
 * Whether `text`, which `value` was parsed from, is `value`'s canonical encoding. JSON.stringify
 * writes a parsed value's members in the text's order (V8 keeps insertion order, except that
 * integer-like keys come first, which this check then refuses) with canonical escapes and number
 * forms and no whitespace: when it gives `text` back and every object's keys are in canonical
 * (UTF-16 code unit) order, `text` is what canonicalJson would write.
 */
function isCanonicalText(value: unknown, text: string): boolean {
  return JSON.stringify(value) === text && keysInCanonicalOrder(value);
}

function keysInCanonicalOrder(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (!keysInCanonicalOrder(item)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key in record) {
    if (previous !== undefined && !(previous < key)) return false;
    if (!keysInCanonicalOrder(record[key])) return false;
    previous = key;
  }
  return true;
}
