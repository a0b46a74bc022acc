import type { Redis } from 'ioredis';
import {
  LoopSlicer,
  buildOutputSnapshotInSlices,
  computeDelta,
  isRecord,
  resourceEncoding,
  resourceId,
  type OutputSnapshot,
  type Resource,
} from '@meshrelay/api';
import {
  checkHash,
  provenanceOf,
  rebuild,
  replicaOf,
  undecodable,
  type Decoded,
  type Raw,
  type StoreKeys,
} from './redis-codec.ts';
import type { InputWriteMode } from './redis-commands.ts';

/**
 * Outputs in Redis as one hash per cluster (format 2): a field per resource (`r:` + resourceId,
 * its canonical encoding), `#hash` (the snapshot hash) and `#header` (format, cluster, hash,
 * provenance, writing replica). An output that differs from the one Redis holds in one
 * ServiceEntry is written as that one field plus the header, not as the whole multi-MB value;
 * the script applies such a change only when Redis holds exactly its base (by `#hash`), else the
 * writer writes the whole output. Reads rebuild the snapshot and check the hash, as for format 1,
 * whose whole-value key is still read and is deleted by the next write.
 */
export const PARTS_FORMAT = 2;

const RESOURCE_FIELD = 'r:';
const HASH_FIELD = '#hash';
const HEADER_FIELD = '#header';

/**
 * KEYS[1] parts hash, KEYS[2] format-1 value. ARGV: mode, base hash ('' = whole output), hash,
 * header, number of deleted fields, the deleted fields, then field/value pairs.
 * Returns 1 written, 0 Redis does not hold the base, 2 'fill' found a value and left it.
 */
const WRITE_OUTPUT_PARTS_LUA = `
if ARGV[1] == 'fill' and (redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1) then return 2 end
if ARGV[2] ~= '' then
  if redis.call('HGET', KEYS[1], '${HASH_FIELD}') ~= ARGV[2] then return 0 end
else
  redis.call('DEL', KEYS[1])
end
local deleted = tonumber(ARGV[5])
for i = 6, 5 + deleted do redis.call('HDEL', KEYS[1], ARGV[i]) end
for i = 6 + deleted, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[1], '${HASH_FIELD}', ARGV[3], '${HEADER_FIELD}', ARGV[4])
redis.call('DEL', KEYS[2])
return 1
`;

export interface OutputPartsWrite {
  readonly partsKey: string;
  readonly legacyKey: string;
  readonly snapshot: OutputSnapshot;
  /** What this replica last wrote for the cluster, if it knows: the base of a per-resource write. */
  readonly base: OutputSnapshot | undefined;
  readonly replica: string;
  readonly mode: InputWriteMode;
}

/**
 * The output side of the Redis store: reads either layout, writes parts. Remembers per cluster
 * the output it last wrote, while Redis is known to hold it, as the base of the next write (any
 * doubt — a failed write, a 'fill' that left another value — drops it, and the next write is whole).
 */
export class OutputParts {
  readonly #client: () => Redis;
  readonly #keys: StoreKeys;
  readonly #replica: string;
  readonly #written = new Map<string, OutputSnapshot>();

  constructor(client: () => Redis, keys: StoreKeys, replica: string) {
    this.#client = client;
    this.#keys = keys;
    this.#replica = replica;
  }

  /** What Redis holds for each cluster, in one transaction: parts when present, else a format-1 value, else null. */
  async fetch(clusters: readonly string[]): Promise<(Raw | null)[]> {
    const read = this.#client().multi();
    for (const cluster of clusters) read.hgetall(this.#keys.outputParts(cluster)).get(this.#keys.output(cluster));
    const results = await read.exec();
    if (results === null) throw new Error('the Redis transaction was aborted');
    const replies = results.map(([error, result]) => {
      if (error) throw error;
      return result;
    });
    return clusters.map((_, i) => {
      const parts = replies[2 * i] as Record<string, string>;
      return Object.keys(parts).length > 0 ? parts : ((replies[2 * i + 1] as string | null) ?? null);
    });
  }

  async write(snapshot: OutputSnapshot, mode: InputWriteMode): Promise<void> {
    const { cluster } = snapshot;
    const base = this.#written.get(cluster);
    this.#written.delete(cluster);
    const write = {
      partsKey: this.#keys.outputParts(cluster),
      legacyKey: this.#keys.output(cluster),
      snapshot,
      base,
      replica: this.#replica,
      mode,
    };
    if ((await writeOutputParts(this.#client(), write)) === 'written') this.#written.set(cluster, snapshot);
  }

  /** Whether Redis holds `snapshot` as parts (its hash field names it); then it is also the base of the next write. */
  async holds(snapshot: OutputSnapshot): Promise<boolean> {
    const held = (await this.#client().hget(this.#keys.outputParts(snapshot.cluster), HASH_FIELD)) === snapshot.hash;
    if (held) this.#written.set(snapshot.cluster, snapshot);
    return held;
  }

  async remove(cluster: string): Promise<void> {
    this.#written.delete(cluster);
    await this.#client().del(this.#keys.outputParts(cluster), this.#keys.output(cluster));
  }
}

/** 'written', or 'kept' when a 'fill' found a value in Redis and left it. */
export type OutputPartsResult = 'written' | 'kept';

/** Writes an output: the changed resources over `base` when Redis holds it, else the whole output. */
export async function writeOutputParts(client: Redis, write: OutputPartsWrite): Promise<OutputPartsResult> {
  if (write.base && write.mode === 'put') {
    const reply = await runWrite(client, write, write.base);
    if (reply !== 0) return reply === 2 ? 'kept' : 'written';
  }
  return (await runWrite(client, write, undefined)) === 2 ? 'kept' : 'written';
}

async function runWrite(client: Redis, write: OutputPartsWrite, base: OutputSnapshot | undefined): Promise<number> {
  const { snapshot } = write;
  const delta = base
    ? await computeDelta(base.resources, snapshot.resources)
    : { upserts: snapshot.resources, deletedKeys: [] };
  const header = JSON.stringify({
    format: PARTS_FORMAT,
    cluster: snapshot.cluster,
    hash: snapshot.hash,
    provenance: snapshot.provenance,
    replica: write.replica,
  });
  const args: string[] = [write.mode, base?.hash ?? '', snapshot.hash, header, String(delta.deletedKeys.length)];
  for (const key of delta.deletedKeys) args.push(RESOURCE_FIELD + key);
  for (const r of delta.upserts) args.push(RESOURCE_FIELD + resourceId(r), resourceEncoding(r));
  const reply = await client.eval(WRITE_OUTPUT_PARTS_LUA, 2, write.partsKey, write.legacyKey, ...args);
  if (reply === 0 || reply === 1 || reply === 2) return reply;
  throw new Error(`unexpected reply to the output write script: ${JSON.stringify(reply)}`);
}

/**
 * Decodes an output stored as parts under `cluster`'s key.
 * Throws MESHRELAY_ERR_SNAPSHOT_UNDECODABLE for a malformed value and
 * MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH when the resources do not hash to the stored hash.
 */
export async function decodeOutputParts(
  fields: Readonly<Record<string, string>>,
  cluster: string,
): Promise<Decoded<OutputSnapshot>> {
  const header = parseHeader(fields[HEADER_FIELD], cluster);
  if (header.hash !== fields[HASH_FIELD]) throw undecodable(cluster, 'its hash fields disagree');
  const provenance = provenanceOf(header.provenance, cluster);
  const slicer = new LoopSlicer();
  const resources: Resource[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (!field.startsWith(RESOURCE_FIELD)) continue;
    resources.push(parseResource(value, cluster));
    if (slicer.due()) await slicer.yield();
  }
  const snapshot = await rebuild(cluster, () =>
    buildOutputSnapshotInSlices({ cluster, provenance, resources }, slicer),
  );
  checkHash(snapshot.hash, header.hash, cluster);
  return { snapshot, replica: replicaOf(header) };
}

function parseHeader(raw: string | undefined, cluster: string): Record<string, unknown> {
  if (raw === undefined) throw undecodable(cluster, 'header missing');
  const header = parseObject(raw, cluster, 'header');
  if (header.format !== PARTS_FORMAT) throw undecodable(cluster, `unknown format ${JSON.stringify(header.format)}`);
  if (header.cluster !== cluster) throw undecodable(cluster, `it names cluster ${JSON.stringify(header.cluster)}`);
  if (typeof header.hash !== 'string') throw undecodable(cluster, 'hash missing');
  return header;
}

/** Its shape is checked by the builder's encoding, as for format 1. */
function parseResource(raw: string, cluster: string): Resource {
  return parseObject(raw, cluster, 'a resource') as Resource;
}

export function parseObject(raw: string, cluster: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw undecodable(cluster, `${what} is not JSON`, err);
  }
  if (!isRecord(value)) throw undecodable(cluster, `${what} is not a JSON object`);
  return value;
}
