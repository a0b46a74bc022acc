import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { buildInputSnapshot, type InputSnapshot, type OutputSnapshot } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { meshctlAt, startServer, type RunningServer } from './harness.ts';

const SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] },
};

/** Registers `cluster` and stores an input for it through the server's own store, as the push handler would. */
async function seedInput(running: RunningServer, cluster: string): Promise<InputSnapshot> {
  assert.equal((await meshctlAt(running.url, ['cluster', 'register', cluster, '--skip-warming'])).code, 0);
  const input = buildInputSnapshot({ cluster, epoch: 'epoch-1', generation: 3, resources: [SERVICE] });
  await running.server.store.putInput(input);
  running.server.loop.trigger('test input');
  return input;
}

test('given a cluster without an output, when its output snapshot is shown, then meshctl exits 1 with one MESHRELAY_ERR_SNAPSHOT_NOT_FOUND line', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east']);

  const result = await meshctlAt(url, ['snapshot', 'output', 'east']);

  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.match(
    result.stderr,
    /^meshctl: MESHRELAY_ERR_SNAPSHOT_NOT_FOUND: .*east.* \(GET \/api\/v1\/clusters\/east\/output, HTTP 404\)\n$/,
  );
});

test('given a cluster without an input, when its input snapshot is shown as json, then meshctl exits 1 with MESHRELAY_ERR_SNAPSHOT_NOT_FOUND', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east']);

  const result = await meshctlAt(url, ['-o', 'json', 'snapshot', 'input', 'east']);

  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /^meshctl: MESHRELAY_ERR_SNAPSHOT_NOT_FOUND: /);
  assert.equal(result.stderr.split('\n').length, 2, 'exactly one line');
});

test('given a held input, when it is shown as text, then a summary line precedes the resources as YAML', async (t) => {
  const running = await startServer(t, ['--safe-start-window', '0']);
  const input = await seedInput(running, 'east');

  const result = await meshctlAt(running.url, ['snapshot', 'input', 'east']);

  assert.equal(result.code, 0, result.stderr);
  const [summary, ...yamlLines] = result.stdout.split('\n');
  assert.equal(
    summary,
    `Input snapshot of cluster "east": hash ${input.hash}, epoch epoch-1, generation 3, 1 resource (1 Service), ${input.bytes} bytes.`,
  );
  const docs = parseAllDocuments(yamlLines.join('\n')).map((d) => d.toJS() as unknown);
  assert.deepEqual(
    docs,
    input.resources.map((r) => JSON.parse(JSON.stringify(r)) as unknown),
  );
});

test('given a held input, when it is shown as json, then the raw snapshot is printed', async (t) => {
  const running = await startServer(t, ['--safe-start-window', '0']);
  const input = await seedInput(running, 'east');

  const result = await meshctlAt(running.url, ['snapshot', 'input', 'east', '-o', 'json']);

  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), JSON.parse(JSON.stringify(input)));
});

test('given a translated cluster, when its output is shown, then the summary names its hash and provenance', async (t) => {
  const running = await startServer(t, ['--safe-start-window', '0']);
  const input = await seedInput(running, 'east');
  await waitFor(() => running.server.outputs.current('east') !== undefined, { message: 'an output for east' });
  const output = running.server.outputs.current('east') as OutputSnapshot;

  const result = await meshctlAt(running.url, ['snapshot', 'output', 'east']);

  assert.equal(result.code, 0, result.stderr);
  const [summary, ...yamlLines] = result.stdout.split('\n');
  assert.match(
    summary ?? '',
    new RegExp(
      `^Output snapshot of cluster "east": hash ${output.hash}, ${output.resources.length} resources?.*, ${output.bytes} bytes, from inputs east@${input.hash.slice(0, 12)}\\.$`,
    ),
  );
  const yamlText = yamlLines.join('\n');
  if (output.resources.length === 0) assert.equal(parse(yamlText), null);
  else assert.equal(parseAllDocuments(yamlText).length, output.resources.length);
});
