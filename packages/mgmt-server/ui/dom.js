// DOM helpers shared by the UI's modules. Elements are built from text nodes
// only (never innerHTML), so a name carrying markup stays text.

/** Creates an element; `attrs` values of null/false are skipped, children may be strings, nodes, arrays or null. */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates an SVG element, with attributes and children as `h` takes them. */
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

function fill(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  el.append(...nodes(children));
  return el;
}

/** Flattens children and drops the empty ones (null, undefined, false). */
export function nodes(children) {
  return [children].flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false);
}

export function badge(kind, text) {
  return h('span', { class: `badge badge-${kind}` }, text);
}

export const short = (hash) => (hash ? hash.slice(0, 12) : '');
