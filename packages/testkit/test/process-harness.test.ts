import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { test, type TestContext } from 'node:test';
import { MAX_CAPTURED_LINES, freePort, spawnProcess, waitFor, type ProcessHandle } from '../src/index.ts';

/** Runs `script` in a child Node process, stopped in t.after. */
async function node(t: TestContext, script: string): Promise<ProcessHandle> {
  const child = await spawnProcess({ command: process.execPath, args: ['-e', script], name: 'child' });
  t.after(() => child.kill());
  return child;
}

const KEEP_ALIVE = 'setInterval(() => {}, 1000);';

test('given a child printing to stdout and stderr, when lines are awaited, then both are found', async (t) => {
  const child = await node(t, `console.log('hello out'); console.error('hello err'); ${KEEP_ALIVE}`);
  assert.equal(await child.waitForLine(/hello out/, 5000), 'hello out');
  assert.equal(await child.waitForLine((line) => line.endsWith('err'), 5000), 'hello err');
  assert.ok(child.running);
});

test('given a line already seen, when awaited after a later mark, then only newer lines match', async (t) => {
  const child = await node(
    t,
    `process.on('SIGUSR2', () => console.log('tick 2')); console.log('tick 1'); ${KEEP_ALIVE}`,
  );
  await child.waitForLine(/tick 1/, 5000);
  const mark = child.lineCount;
  process.kill(child.pid, 'SIGUSR2');
  assert.equal(await child.waitForLine(/tick/, 5000, { after: mark }), 'tick 2');
});

test('given a child that exits without the line, when it is awaited, then the rejection quotes its output', async (t) => {
  const child = await node(t, `console.log('something else'); process.exit(3);`);
  await assert.rejects(
    child.waitForLine(/never/, 5000),
    /exited \(code 3\) before printing \/never\/[\s\S]*something else/,
  );
  assert.deepEqual(await child.exited, { code: 3, signal: null });
});

test('given a silent child, when a line is awaited past its deadline, then it rejects naming the deadline', async (t) => {
  const child = await node(t, KEEP_ALIVE);
  await assert.rejects(child.waitForLine(/never/, 100), /printed no \/never\/ within 100 ms/);
});

test('given a child that handles SIGTERM, when stopped, then it exits on its own terms', async (t) => {
  const child = await node(
    t,
    `process.on('SIGTERM', () => { console.log('bye'); process.exit(0); }); console.log('up'); ${KEEP_ALIVE}`,
  );
  await child.waitForLine(/up/, 5000);
  assert.deepEqual(await child.stop(), { code: 0, signal: null });
  assert.ok(child.lines.includes('bye'));
  assert.equal(child.running, false);
});

test('given a child that ignores SIGTERM, when stopped with a grace period, then it is killed after it', async (t) => {
  const child = await node(t, `process.on('SIGTERM', () => console.log('ignored')); console.log('up'); ${KEEP_ALIVE}`);
  await child.waitForLine(/up/, 5000);
  const exit = await child.stop(200);
  assert.deepEqual(exit, { code: null, signal: 'SIGKILL' });
  assert.ok(child.lines.includes('ignored'));
});

test('given a running child, when paused and resumed, then the kernel reports it stopped and then running', async (t) => {
  const child = await node(t, `setInterval(() => console.log('tick'), 20);`);
  const state = async (): Promise<string> =>
    (await readFile(`/proc/${child.pid}/stat`, 'utf8')).split(') ')[1]?.[0] ?? '?';
  child.pause();
  await waitFor(async () => (await state()) === 'T', { timeoutMs: 5000, message: 'the child never stopped' });
  child.resume();
  await waitFor(async () => (await state()) !== 'T', { timeoutMs: 5000, message: 'the child never continued' });
  const mark = child.lineCount;
  await child.waitForLine(/tick/, 5000, { after: mark });
});

test('given a chatty child, when it printed more than the cap, then only the last lines are kept', async (t) => {
  const total = MAX_CAPTURED_LINES + 500;
  const child = await node(t, `for (let i = 0; i < ${total}; i++) console.log('line ' + i);`);
  await child.exited;
  await child.waitForLine(new RegExp(`line ${total - 1}$`), 5000);
  assert.equal(child.lines.length, MAX_CAPTURED_LINES);
  assert.equal(child.lines[0], 'line 500');
  assert.equal(child.lineCount, total);
});

test('given a command that is not installed, when spawned, then it rejects with ENOENT as the cause', async () => {
  await assert.rejects(spawnProcess({ command: 'meshrelay-no-such-binary' }), (err: unknown) => {
    assert.ok(err instanceof Error);
    assert.match(err.message, /cannot start meshrelay-no-such-binary/);
    assert.equal((err.cause as { code?: string }).code, 'ENOENT');
    return true;
  });
});

test('given a condition that turns true, when waited for, then waitFor resolves', async () => {
  let calls = 0;
  await waitFor(() => ++calls === 3, { timeoutMs: 5000, intervalMs: 1 });
  assert.equal(calls, 3);
});

test('given a condition that stays false, when its deadline passes, then waitFor rejects with the message and the last error', async () => {
  await assert.rejects(
    waitFor(
      () => {
        throw new Error('not yet');
      },
      { timeoutMs: 50, intervalMs: 5, message: 'never ready' },
    ),
    /^Error: never ready \(last error: not yet\)$/,
  );
});

test('given freePort, when its port is bound, then the bind succeeds', async (t) => {
  const port = await freePort();
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  assert.ok(port > 0);
});

test(
  'given several processes picking ports at once, then no port is handed out twice and none is in the ephemeral range',
  { timeout: 60_000 },
  async (t) => {
    const script = `import { freePort } from ${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)};
const ports = [];
for (let i = 0; i < 40; i++) ports.push(await freePort());
console.log('ports ' + JSON.stringify(ports));
await new Promise((r) => setTimeout(r, 1500));`;
    const children = await Promise.all(
      [1, 2, 3].map((n) =>
        spawnProcess({ name: `picker-${n}`, command: process.execPath, args: ['--input-type=module', '-e', script] }),
      ),
    );
    t.after(() => Promise.all(children.map((c) => c.stop())));
    const lists = await Promise.all(
      children.map(async (c) => JSON.parse((await c.waitForLine(/^ports /, 30_000)).slice(6)) as number[]),
    );
    const all = lists.flat();
    assert.equal(all.length, 120);
    assert.equal(new Set(all).size, 120, 'a port was handed to two processes');
    assert.ok(
      all.every((p) => p >= 20_000 && p < 32_768),
      `a port outside 20000-32767: ${all.filter((p) => p < 20_000 || p >= 32_768).join(', ')}`,
    );
  },
);
