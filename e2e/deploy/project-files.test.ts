// The files an open-source project is expected to carry: the license package.json names, how to
// contribute (with commands that exist), and a changelog.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helm-runner.ts';

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

test("given package.json's license, when LICENSE is read, then it is the whole Apache License 2.0", () => {
  const license = read('LICENSE');
  const { license: declared } = JSON.parse(read('package.json')) as { license: string };

  assert.equal(declared, 'Apache-2.0');
  assert.match(license, /^\s*Apache License\s+Version 2\.0, January 2004\s+http:\/\/www\.apache\.org\/licenses\//);
  const sections = [
    'Definitions',
    'Grant of Copyright License',
    'Grant of Patent License',
    'Redistribution',
    'Submission of Contributions',
    'Trademarks',
    'Disclaimer of Warranty',
    'Limitation of Liability',
    'Accepting Warranty or Additional Liability',
  ];
  sections.forEach((title, i) =>
    assert.match(license, new RegExp(`\\n\\s+${i + 1}\\. ${title}\\.`), `section ${i + 1}. ${title}`),
  );
  assert.match(license, /END OF TERMS AND CONDITIONS/);
  assert.match(license, /APPENDIX: How to apply the Apache License to your work\./);
});

test('given CONTRIBUTING.md, when its commands are compared with the repository, then every npm script and file it names exists', () => {
  const contributing = read('CONTRIBUTING.md');
  const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };

  const named = [...contributing.matchAll(/npm run ([a-z:]+)/g)].map((m) => m[1] ?? '');
  assert.ok(named.length >= 5, 'it names the run, check, lint and bench scripts');
  for (const script of named) assert.ok(scripts[script] !== undefined, `npm run ${script} is not a script`);
  for (const command of ['npm test', 'npm start', 'npm ci'])
    assert.ok(contributing.includes(command), `it says how to ${command}`);
  const files = [...contributing.matchAll(/`((?:scripts|packages|bench|e2e)\/[\w./-]+\.(?:ts|md|js))`/g)].map(
    (m) => m[1] ?? '',
  );
  for (const file of files) assert.ok(existsSync(join(ROOT, file)), `${file} does not exist`);
  assert.match(contributing, /`area: summary`/);
});

test('given CHANGELOG.md, when read, then it has an entry grouped by area', () => {
  const changelog = read('CHANGELOG.md');

  assert.match(changelog, /^# Changelog/);
  assert.match(changelog, /^## \S/m);
  assert.ok((changelog.match(/^### /gm) ?? []).length >= 3, 'grouped by area');
});
