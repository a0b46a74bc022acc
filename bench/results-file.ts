/**
 * bench/RESULTS.md holds one section per kind of run (the in-process tier S figures, and the
 * latest real-process run of each tier), each between markers; writing one section replaces
 * only that section and keeps the others.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/** Sections in the order they appear in the file; unknown ids go last. */
const ORDER = ['in-process', 'agent-apply', 'tier-S', 'tier-M', 'tier-M-staggered', 'tier-L', 'tier-custom'];

const open = (id: string) => `<!-- bench-section:${id} -->`;
const close = (id: string) => `<!-- /bench-section:${id} -->`;

function parseSections(text: string): Map<string, string> {
  const sections = new Map<string, string>();
  const pattern = /<!-- bench-section:([\w-]+) -->\n([\s\S]*?)\n<!-- \/bench-section:\1 -->/g;
  for (const match of text.matchAll(pattern)) sections.set(match[1] as string, match[2] as string);
  // A file written before sections existed holds only the in-process figures.
  if (sections.size === 0 && text.trim() !== '') sections.set('in-process', text.trim());
  return sections;
}

const rank = (id: string): number => (ORDER.includes(id) ? ORDER.indexOf(id) : ORDER.length);

/** Replaces (or adds) section `id` of the results file at `path`, keeping every other section. */
export function writeResultsSection(path: string, id: string, markdown: string): void {
  const sections = parseSections(existsSync(path) ? readFileSync(path, 'utf8') : '');
  sections.set(id, markdown.trim());
  const ids = [...sections.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
  writeFileSync(path, `${ids.map((s) => `${open(s)}\n${sections.get(s) as string}\n${close(s)}`).join('\n\n')}\n`);
}
