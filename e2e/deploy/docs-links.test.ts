// Every relative link in the README, CONTRIBUTING, CHANGELOG and docs/ leads somewhere: the file
// (or folder) exists, and an anchor names a heading of the page it points into. The docs are
// split over many pages and get moved around; a link that breaks is found here, not by a reader.
import assert from 'node:assert/strict';
import { existsSync, globSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helm-runner.ts';

const PAGES = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...globSync('docs/**/*.md', { cwd: ROOT }).sort()];

/** The page without code: fenced blocks and inline code spans hold examples, not links. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The link targets of a page: `[text](target)` and `![alt](target)`, optional titles dropped. */
function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? '');
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, text = ''] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** What is wrong with one link of `page`, or undefined when it resolves. */
function problemOf(page: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const [path = '', anchor] = target.split('#', 2);
  const file = path === '' ? join(ROOT, page) : resolve(ROOT, dirname(page), decodeURIComponent(path));
  if (relative(ROOT, file).startsWith('..')) return `${target} leads out of the repository`;
  if (!existsSync(file)) return `${target}: ${relative(ROOT, file)} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!file.endsWith('.md') || statSync(file).isDirectory())
    return `${target}: an anchor into something that is not a Markdown page`;
  return headingAnchors(readFileSync(file, 'utf8')).has(anchor)
    ? undefined
    : `${target}: ${relative(ROOT, file)} has no heading #${anchor}`;
}

test('given the Markdown pages of the repository, when every relative link is followed, then each file and anchor exists', () => {
  assert.ok(PAGES.length >= 20, `expected the README, CONTRIBUTING, CHANGELOG and docs/, found ${PAGES.length} pages`);
  const broken = PAGES.flatMap((page) =>
    linkTargets(readFileSync(join(ROOT, page), 'utf8'))
      .map((target) => problemOf(page, target))
      .filter((problem) => problem !== undefined)
      .map((problem) => `${page}: ${problem}`),
  );
  assert.deepEqual(broken, []);
});

test('given the README, when its links are listed, then it reaches the operating, reference and design pages', () => {
  const targets = new Set(linkTargets(readFileSync(join(ROOT, 'README.md'), 'utf8')));
  for (const page of [
    'docs/operating/safe-mode.md',
    'docs/operating/redis.md',
    'docs/operating/security.md',
    'docs/operating/kubernetes.md',
    'docs/operating/troubleshooting.md',
    'docs/reference/meshrelay-server.md',
    'docs/reference/meshrelay-agent.md',
    'docs/reference/meshctl.md',
    'docs/reference/metrics.md',
    'docs/reference/http-api.md',
    'docs/reference/gloo-kinds.md',
    'docs/design/README.md',
    'CONTRIBUTING.md',
  ]) {
    assert.ok(targets.has(page), `README.md does not link ${page}`);
  }
});

test("given the code's DESIGN §N citations, when the design index is read, then every cited section has a page that carries its number", () => {
  const index = readFileSync(join(ROOT, 'docs/design/README.md'), 'utf8');
  const cited = new Set<number>();
  for (const file of globSync('{packages/*/src,e2e,bench,scripts}/**/*.ts', { cwd: ROOT })) {
    for (const [, n = ''] of readFileSync(join(ROOT, file), 'utf8').matchAll(/DESIGN §(\d+)/g)) cited.add(Number(n));
  }
  assert.ok(cited.size >= 5, `expected the code to cite several sections, found ${[...cited].join(', ')}`);
  for (const n of [...cited].sort((a, b) => a - b)) {
    const row = new RegExp(`^\\| ${n} \\| [^|]+\\| \\[([^\\]]+)\\]\\(([^)]+)\\) \\|$`, 'm').exec(index);
    assert.ok(row, `docs/design/README.md has no row for §${n}`);
    const page = readFileSync(join(ROOT, 'docs/design', row[2] ?? ''), 'utf8');
    assert.match(page, new RegExp(`^# §${n}\\. `), `${row[2]} is not §${n}`);
  }
});
