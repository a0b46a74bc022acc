/**
 * Block-style YAML for JSON values (what a resource is): objects as `key: value` lines, arrays as
 * `- item` lines, empty ones inline (`{}`, `[]`). A general YAML library is many times slower on
 * a large ServiceEntry (see docs/design/decisions/README.md#agent-yaml-writer); this writer is what lets a
 * changed resource be written at the cost of the change.
 *
 * Strings are written plain only when no YAML 1.1 or 1.2 reader can take them for anything else
 * (a conservative character set, never a word such as `yes` or `null`, never starting with a
 * digit); every other string is double-quoted with JSON's escapes, which YAML's double-quoted
 * style shares, and with every character outside printable ASCII escaped.
 */

const INDENT = '  ';
/** Strings that are plain in every YAML reader: a letter, `_` or `/` first, then letters, digits and `_ . / -`. */
const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./-]*$/;
/** Words some YAML reader takes for a boolean or null (YAML 1.1's yes/no/on/off/y/n included). */
const RESERVED = new Set(['true', 'false', 'null', 'yes', 'no', 'on', 'off', 'y', 'n']);

/** The YAML document of `value` (a JSON value: no undefined, no non-finite numbers), ending with a newline. */
export function yamlDocument(value: unknown): string {
  const lines: string[] = [];
  if (isNonEmptyObject(value)) writeObject(value, '', lines);
  else if (Array.isArray(value) && value.length > 0) writeArray(value, '', lines);
  else lines.push(scalar(value));
  return `${lines.join('\n')}\n`;
}

function writeObject(value: Record<string, unknown>, indent: string, lines: string[]): void {
  for (const key of Object.keys(value)) {
    const item = value[key];
    if (item === undefined) continue;
    const head = `${indent}${scalar(key)}:`;
    if (isNonEmptyObject(item)) {
      lines.push(head);
      writeObject(item, indent + INDENT, lines);
    } else if (Array.isArray(item) && item.length > 0) {
      lines.push(head);
      writeArray(item, indent + INDENT, lines);
    } else {
      lines.push(`${head} ${scalar(item)}`);
    }
  }
}

/** `- item` lines; a collection item starts on the dash's line (its first line's indent replaced by the dash). */
function writeArray(value: readonly unknown[], indent: string, lines: string[]): void {
  const inner = indent + INDENT;
  for (const item of value) {
    if (isNonEmptyObject(item) || (Array.isArray(item) && item.length > 0)) {
      const first = lines.length;
      if (Array.isArray(item)) writeArray(item, inner, lines);
      else writeObject(item as Record<string, unknown>, inner, lines);
      lines[first] = `${indent}- ${(lines[first] as string).slice(inner.length)}`;
    } else {
      lines.push(`${indent}- ${scalar(item === undefined ? null : item)}`);
    }
  }
}

function scalar(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return PLAIN.test(value) && !RESERVED.has(value.toLowerCase()) ? value : quoted(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`a non-finite number (${String(value)}) has no YAML form here`);
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      if (isPlainObject(value)) return '{}';
      if (Array.isArray(value)) return '[]';
      throw new TypeError(`a ${typeof value} has no YAML form here`);
  }
}

/** JSON's double-quoted string (valid YAML) with every character outside printable ASCII escaped. */
function quoted(value: string): string {
  return JSON.stringify(value).replace(/[^\x20-\x7e]/gu, (c) => {
    const code = c.codePointAt(0) as number;
    return code > 0xffff ? `\\U${code.toString(16).padStart(8, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonEmptyObject(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  for (const key in value) if (value[key] !== undefined) return true;
  return false;
}
