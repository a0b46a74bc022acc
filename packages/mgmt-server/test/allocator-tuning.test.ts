import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { SERVER_MMAP_THRESHOLD_BYTES, tunedAllocatorEnvironment } from '../src/runtime.ts';

const ENTRY = `glibc.malloc.mmap_threshold=${SERVER_MMAP_THRESHOLD_BYTES}`;
const CHILD = new URL('./fixtures/tuned-allocator-child.ts', import.meta.url).pathname;

test('given a Linux environment without a threshold, then the server starts again with the fixed mmap threshold, keeping other tunables', () => {
  assert.equal(tunedAllocatorEnvironment({ PATH: '/bin' }, 'linux')?.['GLIBC_TUNABLES'], ENTRY);
  assert.equal(tunedAllocatorEnvironment({ PATH: '/bin' }, 'linux')?.['PATH'], '/bin');
  assert.equal(
    tunedAllocatorEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, 'linux')?.['GLIBC_TUNABLES'],
    `glibc.malloc.arena_max=2:${ENTRY}`,
  );
  assert.equal(tunedAllocatorEnvironment({ MESHRELAY_MALLOC_TUNING: 'on' }, 'linux')?.['GLIBC_TUNABLES'], ENTRY);
});

test("given an operator's own threshold, tuning turned off, or another platform, then the server runs as it is", () => {
  assert.equal(tunedAllocatorEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' }, 'linux'), undefined);
  assert.equal(
    tunedAllocatorEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1' }, 'linux'),
    undefined,
  );
  assert.equal(tunedAllocatorEnvironment({ MALLOC_MMAP_THRESHOLD_: '131072' }, 'linux'), undefined);
  assert.equal(tunedAllocatorEnvironment({ MESHRELAY_MALLOC_TUNING: 'off' }, 'linux'), undefined);
  assert.equal(tunedAllocatorEnvironment({}, 'darwin'), undefined);
});

test('given MESHRELAY_MALLOC_TUNING with another value, then the error names the variable and the value', () => {
  assert.throws(
    () => tunedAllocatorEnvironment({ MESHRELAY_MALLOC_TUNING: 'yes' }, 'linux'),
    /MESHRELAY_MALLOC_TUNING must be "on" or "off", not "yes"/,
  );
});

/** Runs the fixture with `env` added; its report of itself after it started again. */
async function runChild(
  env: NodeJS.ProcessEnv,
): Promise<{ spawnedPid: number; pid: number; args: string[]; tunables: string | null }> {
  const child = spawn(process.execPath, [CHILD, 'first', '--second'], {
    env: {
      ...process.env,
      GLIBC_TUNABLES: undefined,
      MALLOC_MMAP_THRESHOLD_: undefined,
      MESHRELAY_MALLOC_TUNING: undefined,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0);
  return {
    spawnedPid: child.pid ?? -1,
    ...(JSON.parse(out) as { pid: number; args: string[]; tunables: string | null }),
  };
}

test('given a real process on Linux, when it starts with the tuned allocator, then the same process runs on with the threshold in its environment and its arguments kept', async () => {
  const tuned = await runChild({});
  assert.equal(tuned.pid, tuned.spawnedPid);
  assert.deepEqual(tuned.args, ['first', '--second']);
  assert.equal(tuned.tunables, ENTRY);
  const own = await runChild({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' });
  assert.equal(own.tunables, 'glibc.malloc.mmap_threshold=65536');
  const off = await runChild({ MESHRELAY_MALLOC_TUNING: 'off' });
  assert.equal(off.tunables, null);
});
