import type { Redis } from 'ioredis';
import {
  LoopSlicer,
  adoptCanonicalInputSnapshot,
  buildInputSnapshotInSlices,
  compareResources,
  computeDelta,
  resourceEncoding,
  resourceId,
  utf8InSlices,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';
import { formatChangeMessage } from './input-change.ts';
import { formatInputVersion } from './input-version.ts';
import { checkHash, rebuild, replicaOf, undecodable, type Decoded, type Raw, type StoreKeys } from './redis-codec.ts';
import type { InputWriteMode, InputWriteResult } from './redis-commands.ts';
import { parseObject } from './redis-output-parts.ts';

/**
 * Inputs in Redis as one hash per cluster (format 2), as outputs are (redis-output-parts.ts): a
 * field per resource (`r:` + resourceId, its canonical encoding), `#hash` and `#header` (format,
 * cluster, epoch, generation, hash, writing replica). A change of one endpoint in a multi-MiB input
 * is written as its two changed resources, not as the whole value. The version key beside it
 * (epoch, generation, resume) and the newer-wins rules are those of the format-1 value, which is
 * still read, and which the next write deletes. Reads rebuild the snapshot and check its hash, so
 * a restarted replica reads back exactly the input that was held or nothing.
 */
export const INPUT_PARTS_FORMAT = 2;

const RESOURCE_FIELD = 'r:';
const HASH_FIELD = '#hash';
const HEADER_FIELD = '#header';

/**
 * KEYS[1] parts hash, KEYS[2] version hash, KEYS[3] format-1 value.
 * ARGV: [1] epoch, [2] generation, [3] mode ('put', 'fill', or 'force' = no version compare),
 * [4] channel, [5] message, [6] resume, [7] base hash ('' = whole input), [8] hash, [9] header,
 * [10] number of deleted fields, the deleted fields, then field/value pairs (set 500 pairs per HSET:
 * a whole input is thousands of resources, and one call per field slowed its write noticeably;
 * see docs/design/decisions/README.md#redis-input-hash).
 * The compare is writeInput's (redis-commands.ts): the small version hash decides, else the held
 * header. Returns 1 written, 0 current (a 'fill' of the version held), -1 Redis does not hold the
 * base (the writer writes the whole input), or {'parts', fields} / {'value', text}: what Redis
 * holds instead because it is newer.
 */
const WRITE_INPUT_PARTS_LUA = `
local hasParts = redis.call('EXISTS', KEYS[1]) == 1
local hasValue = redis.call('EXISTS', KEYS[3]) == 1
local function held()
  if hasParts then return {'parts', redis.call('HGETALL', KEYS[1])} end
  return {'value', redis.call('GET', KEYS[3])}
end
local epoch, generation
if ARGV[3] ~= 'force' and (hasParts or hasValue) then
  local version = redis.call('HMGET', KEYS[2], 'epoch', 'generation')
  if version[1] and version[2] then
    epoch, generation = version[1], tonumber(version[2])
  else
    local raw
    if hasParts then raw = redis.call('HGET', KEYS[1], '${HEADER_FIELD}') else raw = redis.call('GET', KEYS[3]) end
    local ok, h = pcall(cjson.decode, raw)
    if ok and type(h) == 'table' and type(h.epoch) == 'string' and type(h.generation) == 'number' then
      epoch, generation = h.epoch, h.generation
    end
  end
end
if epoch and generation then
  local incoming = tonumber(ARGV[2])
  if epoch == ARGV[1] then
    if generation > incoming then return held() end
    if generation == incoming and ARGV[3] == 'fill' then return 0 end
  elseif ARGV[3] == 'fill' then
    return held()
  end
end
if ARGV[7] ~= '' then
  if redis.call('HGET', KEYS[1], '${HASH_FIELD}') ~= ARGV[7] then return -1 end
else
  redis.call('DEL', KEYS[1])
end
local deleted = tonumber(ARGV[10])
for i = 11, 10 + deleted do redis.call('HDEL', KEYS[1], ARGV[i]) end
for i = 11 + deleted, #ARGV, 1000 do redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV))) end
redis.call('HSET', KEYS[1], '${HASH_FIELD}', ARGV[8], '${HEADER_FIELD}', ARGV[9])
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[2], 'epoch', ARGV[1], 'generation', ARGV[2], 'resume', ARGV[6])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
`;

/** 'force' replaces whatever Redis holds (an unreadable value), without the newer-wins compare. */
export type InputPartsMode = InputWriteMode | 'force';

/**
 * The input side of the Redis store's layout: reads either format, writes parts. Remembers per
 * cluster the input it last wrote, while Redis is known to hold it, as the base of the next
 * write; any doubt drops it, and the script checks the base by hash, so a stale base costs one
 * whole write, never a wrong value.
 */
export class InputParts {
  readonly #client: () => Redis;
  readonly #keys: StoreKeys;
  readonly #replica: string;
  readonly #written = new Map<string, InputSnapshot>();

  constructor(client: () => Redis, keys: StoreKeys, replica: string) {
    this.#client = client;
    this.#keys = keys;
    this.#replica = replica;
  }

  /** What Redis holds for the cluster, in one transaction: its parts when present, else a format-1 value, else null. */
  async fetch(cluster: string): Promise<Raw | null> {
    const results = await this.#client()
      .multi()
      .hgetall(this.#keys.inputParts(cluster))
      .getBuffer(this.#keys.input(cluster))
      .exec();
    if (results === null) throw new Error('the Redis transaction was aborted');
    for (const [error] of results) if (error) throw error;
    const parts = results[0]?.[1] as Record<string, string>;
    if (Object.keys(parts).length > 0) return parts;
    const value = results[1]?.[1] as Buffer | null;
    return value === null ? null : utf8InSlices(value);
  }

  /**
   * Writes the input unless Redis holds a newer one: the changed resources over this replica's last write when Redis
   * still holds it, else whole.
   */
  async write(snapshot: InputSnapshot, mode: InputPartsMode): Promise<InputWriteResult> {
    const { cluster } = snapshot;
    const base = this.#written.get(cluster);
    this.#written.delete(cluster);
    let reply = base && mode === 'put' ? await this.#run(snapshot, mode, base) : -1;
    if (reply === -1) reply = await this.#run(snapshot, mode, undefined);
    if (reply === 1) {
      this.#written.set(cluster, snapshot);
      return { kind: 'written' };
    }
    if (reply === 0) return { kind: 'current' };
    if (Array.isArray(reply)) return { kind: 'kept', raw: heldRaw(reply) };
    throw new Error(`unexpected reply to the input write script: ${JSON.stringify(reply)}`);
  }

  /** Forgets the base of a cluster whose keys were deleted. */
  forget(cluster: string): void {
    this.#written.delete(cluster);
  }

  async #run(snapshot: InputSnapshot, mode: InputPartsMode, base: InputSnapshot | undefined): Promise<unknown> {
    const { cluster } = snapshot;
    const delta = base
      ? await computeDelta(base.resources, snapshot.resources)
      : { upserts: snapshot.resources, deletedKeys: [] };
    const header = JSON.stringify({
      format: INPUT_PARTS_FORMAT,
      cluster,
      epoch: snapshot.epoch,
      generation: snapshot.generation,
      hash: snapshot.hash,
      replica: this.#replica,
    });
    const message = formatChangeMessage(cluster, snapshot.hash, this.#replica, false, snapshot);
    const args: string[] = [
      snapshot.epoch,
      String(snapshot.generation),
      mode,
      this.#keys.inputChannel,
      message,
      formatInputVersion(snapshot),
    ];
    args.push(base?.hash ?? '', snapshot.hash, header, String(delta.deletedKeys.length));
    for (const key of delta.deletedKeys) args.push(RESOURCE_FIELD + key);
    for (const r of delta.upserts) args.push(RESOURCE_FIELD + resourceId(r), resourceEncoding(r));
    const keys = [this.#keys.inputParts(cluster), this.#keys.inputVersion(cluster), this.#keys.input(cluster)];
    return this.#client().eval(WRITE_INPUT_PARTS_LUA, keys.length, ...keys, ...args);
  }
}

/** The held value the script returned: a parts hash (as HGETALL's flat list) or a format-1 text. */
function heldRaw(reply: unknown[]): Raw {
  const [kind, payload] = reply;
  if (kind === 'value' && typeof payload === 'string') return payload;
  if (kind === 'parts' && Array.isArray(payload)) {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < payload.length; i += 2) fields[String(payload[i])] = String(payload[i + 1]);
    return fields;
  }
  throw new Error(`unexpected held value in the reply to the input write script: ${JSON.stringify(kind)}`);
}

/**
 * Decodes an input stored as parts under `cluster`'s key: resources sorted back into snapshot
 * order and taken as their stored canonical text when it hashes to the stored hash (else built
 * the ordinary way, which says what is wrong).
 * Throws MESHRELAY_ERR_SNAPSHOT_UNDECODABLE for a malformed value and
 * MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH when the resources do not hash to the stored hash.
 */
export async function decodeInputParts(
  fields: Readonly<Record<string, string>>,
  cluster: string,
): Promise<Decoded<InputSnapshot>> {
  const header = parseHeader(fields[HEADER_FIELD], cluster);
  if (header.hash !== fields[HASH_FIELD]) throw undecodable(cluster, 'its hash fields disagree');
  const slicer = new LoopSlicer();
  const entries: { resource: Resource; text: string }[] = [];
  for (const [field, text] of Object.entries(fields)) {
    if (!field.startsWith(RESOURCE_FIELD)) continue;
    entries.push({ resource: parseObject(text, cluster, 'a resource') as Resource, text });
    if (slicer.due()) await slicer.yield();
  }
  entries.sort((a, b) => compareResources(a.resource, b.resource));
  await slicer.pause();
  const init = {
    cluster,
    epoch: header.epoch as string,
    generation: header.generation as number,
    resources: entries.map((e) => e.resource),
  };
  const hash = header.hash as string;
  const snapshot =
    (await adoptCanonicalInputSnapshot(
      init,
      entries.map((e) => e.text),
      hash,
      slicer,
    )) ?? (await rebuild(cluster, () => buildInputSnapshotInSlices(init, slicer)));
  checkHash(snapshot.hash, hash, cluster);
  return { snapshot, replica: replicaOf(header) };
}

function parseHeader(raw: string | undefined, cluster: string): Record<string, unknown> {
  if (raw === undefined) throw undecodable(cluster, 'header missing');
  const header = parseObject(raw, cluster, 'header');
  if (header.format !== INPUT_PARTS_FORMAT)
    throw undecodable(cluster, `unknown format ${JSON.stringify(header.format)}`);
  if (header.cluster !== cluster) throw undecodable(cluster, `it names cluster ${JSON.stringify(header.cluster)}`);
  if (typeof header.hash !== 'string') throw undecodable(cluster, 'hash missing');
  if (
    typeof header.epoch !== 'string' ||
    typeof header.generation !== 'number' ||
    !Number.isSafeInteger(header.generation)
  ) {
    throw undecodable(cluster, 'epoch or generation missing or malformed');
  }
  return header;
}
