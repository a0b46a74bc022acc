import { hasKnownEncoding, keepStringifiable, stringifiesCanonically } from './canonical.ts';
import { LoopSlicer } from './loop-slicer.ts';
import type { Resource } from './resource.ts';
import { deepFreezeSharingStrings, StringPool } from './string-pool.ts';

/**
 * Takes the resources of a full snapshot received from a peer whose encoder is not trusted (an
 * agent's input): each resource whose received text is exactly its canonical encoding is
 * deep-frozen, its short string values shared across the snapshot (StringPool), and kept as one
 * that `JSON.stringify` writes canonically (see keepStringifiable; the text itself is not kept),
 * so building the snapshot from it neither copies nor canonically encodes it again (at tier M,
 * 50 inputs of 12 k resources each). Resources whose
 * text is not canonical are left alone: the ordinary build copies and encodes them, and the
 * snapshot's hash is the canonical one either way. `texts[i]` must be the JSON text
 * `resources[i]` was parsed from (AssembledSnapshot.texts); nothing is adopted when the counts
 * differ. Returns how many were adopted; gives the event loop turns.
 */
export async function adoptCanonicalTexts(
  resources: readonly Resource[],
  texts: readonly string[],
  slicer = new LoopSlicer(),
): Promise<number> {
  if (resources.length !== texts.length) return 0;
  const pool = new StringPool();
  let adopted = 0;
  for (let i = 0; i < resources.length; i++) {
    const r = resources[i] as Resource;
    const text = texts[i] as string;
    if (!hasKnownEncoding(r) && isCanonicalText(r, text)) {
      keepStringifiable(deepFreezeSharingStrings(r, pool));
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
  return JSON.stringify(value) === text && stringifiesCanonically(value);
}
