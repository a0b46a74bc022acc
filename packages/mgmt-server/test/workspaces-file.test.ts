import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadWorkspacesFile } from '../src/workspaces-file.ts';

function tempFile(t: { after: (fn: () => void) => void }, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'workspaces-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'workspaces.yaml');
  writeFileSync(file, text);
  return file;
}

test('given a file of two Workspace documents, when loaded, then both are returned in order', (t) => {
  const file = tempFile(
    t,
    'apiVersion: admin.gloo.solo.io/v2\nkind: Workspace\nmetadata: { name: a, namespace: gloo-mesh }\nspec: {}\n---\napiVersion: admin.gloo.solo.io/v2\nkind: Workspace\nmetadata: { name: b, namespace: gloo-mesh }\nspec: {}\n',
  );
  assert.deepEqual(
    loadWorkspacesFile(file).map((r) => r.metadata.name),
    ['a', 'b'],
  );
});

test('given a missing file, when loaded, then it fails with an invalid-config error naming the flag', () => {
  assert.throws(
    () => loadWorkspacesFile('/nonexistent/workspaces.yaml'),
    (err: Error & { code?: string }) =>
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' && err.message.includes('--workspaces-file'),
  );
});

test('given a document that is not an object, when loaded, then it fails with an invalid-config error naming the document', (t) => {
  const file = tempFile(t, '- just\n- a list\n');
  assert.throws(
    () => loadWorkspacesFile(file),
    (err: Error & { code?: string }) =>
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' && err.message.includes('document 0'),
  );
});
