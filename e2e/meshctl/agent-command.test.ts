import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAgentConfig } from '@meshrelay/agent';
import { meshctlAt, startServer, tempDir } from './harness.ts';

test('given a registration with written files, when its agent command line is parsed by the agent, then it names the cluster, server, token and CA', async (t) => {
  const { server, url } = await startServer(t);
  const dir = await tempDir(t);
  const tokenFile = join(dir, 'east.token');
  const caFile = join(dir, 'ca.pem');
  const result = await meshctlAt(url, ['cluster', 'register', 'east', '--token-out', tokenFile, '--ca-out', caFile]);
  assert.equal(result.code, 0, result.stderr);
  const line = result.stdout.split('\n').find((l) => l.trimStart().startsWith('npx meshrelay-agent '));
  assert.ok(line, result.stdout);
  const args = line
    .trim()
    .split(/\s+/)
    .slice(2)
    .map(
      (word) =>
        ({
          '<manifests-dir>': join(dir, 'manifests'),
          '<output-dir>': join(dir, 'out'),
          '<state-dir>': join(dir, 'state'),
        })[word] ?? word,
    );

  const config = parseAgentConfig(args);

  assert.equal(config.cluster, 'east');
  assert.deepEqual(config.serverAddresses, [`localhost:${server.relayPort}`]);
  assert.equal(config.tokenFile, tokenFile);
  assert.equal(config.rootCaFile, caFile);
});
