import { MeshrelayError } from './errors.ts';
import { LoopSlicer } from './loop-slicer.ts';
import { isRecord, type Resource } from './resource.ts';

export interface ResourceArrayLimits {
  readonly maxResources: number;
  /** Deepest nesting of arrays and objects inside one resource (the resource itself is level 1). */
  readonly maxDepth: number;
}

const undecodable = (message: string) => new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', message);

/**
 * Parses a snapshot's JSON array of resources one resource at a time, giving
 * the event loop a turn every ~20 ms (LoopSlicer), so a 16 MiB snapshot does not
 * hold heartbeats up (one JSON.parse of it would; see
 * docs/design/decisions/README.md#sliced-resource-parse). The scanner that finds each resource's end also measures its
 * nesting: a resource nested deeper than maxDepth is refused naming it, before
 * anything recursive (canonical encoding, validation) could overflow the stack.
 * With `texts`, each resource's JSON text is pushed onto it, in order.
 */
export async function parseResourceArray(
  text: string,
  limits: ResourceArrayLimits,
  slicer = new LoopSlicer(),
  texts?: string[],
): Promise<Resource[]> {
  const out: Resource[] = [];
  let i = skipSpace(text, 0);
  if (text[i] !== '[') throw undecodable('snapshot payload is not a JSON array of resources');
  i = skipSpace(text, i + 1);
  if (text[i] === ']') return finish(text, i + 1, out);
  for (;;) {
    if (out.length === limits.maxResources) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
        `snapshot has more than ${limits.maxResources} resources; the limit is ${limits.maxResources}`,
      );
    }
    const { end, depth } = scanObject(text, i, out.length);
    const json = text.slice(i, end);
    out.push(parseItem(json, out.length, depth, limits.maxDepth));
    texts?.push(json);
    i = skipSpace(text, end);
    if (text[i] === ']') return finish(text, i + 1, out);
    if (text[i] !== ',')
      throw undecodable(`snapshot payload is not JSON: expected "," or "]" after item ${out.length - 1}`);
    i = skipSpace(text, i + 1);
    if (slicer.due()) await slicer.yield();
  }
}

function finish(text: string, i: number, out: Resource[]): Resource[] {
  if (skipSpace(text, i) !== text.length) throw undecodable('snapshot payload is not JSON: text after the array');
  return out;
}

function skipSpace(text: string, i: number): number {
  let j = i;
  while (j < text.length && (text[j] === ' ' || text[j] === '\n' || text[j] === '\r' || text[j] === '\t')) j++;
  return j;
}

/** Finds the end of the JSON object starting at `start` and the deepest nesting inside it. */
function scanObject(text: string, start: number, index: number): { end: number; depth: number } {
  if (text[start] !== '{')
    throw undecodable(`snapshot item ${index} is not a resource (needs apiVersion, kind, metadata)`);
  let depth = 0;
  let max = 0;
  for (let j = start; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x22) {
      // A string: skip to its closing quote, over escapes.
      for (j++; j < text.length && text.charCodeAt(j) !== 0x22; j++) if (text.charCodeAt(j) === 0x5c) j++;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return { end: j + 1, depth: max };
    }
  }
  throw undecodable(`snapshot payload is not JSON: item ${index} is not terminated`);
}

function parseItem(json: string, index: number, depth: number, maxDepth: number): Resource {
  let item: unknown;
  try {
    item = JSON.parse(json);
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
      `snapshot payload is not JSON: item ${index}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (
    !isRecord(item) ||
    typeof item['apiVersion'] !== 'string' ||
    typeof item['kind'] !== 'string' ||
    !isRecord(item['metadata'])
  ) {
    throw undecodable(`snapshot item ${index} is not a resource (needs apiVersion, kind, metadata)`);
  }
  if (depth > maxDepth) {
    const meta = item['metadata'];
    const name = `${String(item['kind'])} ${typeof meta['namespace'] === 'string' ? `${meta['namespace']}/` : ''}${String(meta['name'])}`;
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_RESOURCE',
      `snapshot item ${index} (${name}) is nested deeper than ${maxDepth} levels`,
    );
  }
  return item as unknown as Resource;
}

/** What a document laid out with its resources last puts between the rest and the resources. */
const RESOURCES_MEMBER = ',"resources":[';

/**
 * Parses a JSON object whose last member is `resources`, an array of resources, as snapshots
 * are stored (`{...header,"resources":[...]}`): the header in one step, the resources (the bulk)
 * with parseResourceArray, so a large document does not hold the event loop. The header's
 * strings escape every quote, so the first RESOURCES_MEMBER is where the resources start; a
 * document laid out otherwise is parsed in one step (and `texts` stays empty). Throws what
 * JSON.parse or parseResourceArray throws.
 */
export async function parseWithResourcesLast(
  raw: string,
  limits: ResourceArrayLimits,
  slicer = new LoopSlicer(),
  texts?: string[],
): Promise<unknown> {
  const at = raw.indexOf(RESOURCES_MEMBER);
  if (at < 0 || !raw.trimEnd().endsWith(']}')) return JSON.parse(raw) as unknown;
  const head: unknown = JSON.parse(`${raw.slice(0, at)}}`);
  if (!isRecord(head)) return head;
  head['resources'] = await parseResourceArray(
    raw.trimEnd().slice(at + RESOURCES_MEMBER.length - 1, -1),
    limits,
    slicer,
    texts,
  );
  return head;
}
