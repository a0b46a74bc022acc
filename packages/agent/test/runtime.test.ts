import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { AGENT_POOL_FLAG, agentRestartArgs } from '../src/runtime.ts';

const CHILD = new URL('./fixtures/agent-runtime-child.ts', import.meta.url).pathname;

test('given a process without a V8 pool size, then the agent starts again with one helper thread, keeping its flags and arguments; with one chosen, it runs as it is', () => {
  assert.deepEqual(agentRestartArgs(['--inspect'], ['/usr/bin/node', 'agent.js', '--cluster', 'a']), [
    AGENT_POOL_FLAG,
    '--inspect',
    'agent.js',
    '--cluster',
    'a',
  ]);
  assert.equal(agentRestartArgs(['--v8-pool-size=2'], ['/usr/bin/node', 'agent.js']), undefined);
  assert.equal(agentRestartArgs([AGENT_POOL_FLAG], ['/usr/bin/node', 'agent.js']), undefined);
});

/** Runs the fixture with `execArgv`; its report of itself once readied. */
async function runChild(
  execArgv: string[],
): Promise<{ spawnedPid: number; pid: number; execArgv: string[]; args: string[] }> {
  const child = spawn(process.execPath, [...execArgv, CHILD, 'first', '--second'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0);
  return { spawnedPid: child.pid ?? -1, ...(JSON.parse(out) as { pid: number; execArgv: string[]; args: string[] }) };
}

test('given a real process, when it is readied as the agent binary does, then the same process runs on with the pool flag and its arguments kept', async () => {
  const readied = await runChild(['--no-warnings']);
  assert.equal(readied.pid, readied.spawnedPid);
  assert.deepEqual(readied.execArgv, [AGENT_POOL_FLAG, '--no-warnings']);
  assert.deepEqual(readied.args, ['first', '--second']);
  const chosen = await runChild(['--v8-pool-size=3']);
  assert.deepEqual(chosen.execArgv, ['--v8-pool-size=3']);
});
