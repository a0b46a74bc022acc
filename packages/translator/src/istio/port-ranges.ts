/**
 * Port range checks for Istio outputs. Istio's CRDs express "1..65535" as CEL rules
 * (x-kubernetes-validations), which a JSON-schema validator does not evaluate.
 */
import { isRecord } from '@meshrelay/api';
import { joinPath, type InputProblem } from '../gloo/schema-errors.ts';

const PORT_MESSAGE = 'port must be between 1 and 65535';

function isPort(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535;
}

function isPortString(value: unknown): boolean {
  return typeof value === 'string' && /^[0-9]+$/.test(value) && isPort(Number(value));
}

/**
 * Walks an Istio spec and reports every port number out of range: `port.number`,
 * `ports[].number`, `targetPort`, a match's `port`, endpoint `ports` maps and
 * AuthorizationPolicy operation `ports` (strings).
 */
export function checkPortRanges(value: unknown, path: string, parentKey = ''): InputProblem[] {
  const problems: InputProblem[] = [];
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const at = joinPath(path, i);
      if (parentKey === 'ports' || parentKey === 'notPorts') {
        if (typeof item === 'string' && !isPortString(item)) problems.push({ path: at, message: PORT_MESSAGE });
      }
      problems.push(...checkPortRanges(item, at, parentKey));
    });
    return problems;
  }
  if (!isRecord(value)) return problems;
  for (const [key, member] of Object.entries(value)) {
    const at = joinPath(path, key);
    const portField =
      key === 'targetPort' || key === 'port' || (key === 'number' && (parentKey === 'port' || parentKey === 'ports'));
    if (portField && typeof member === 'number' && !isPort(member)) problems.push({ path: at, message: PORT_MESSAGE });
    if (key === 'ports' && isRecord(member)) {
      for (const [name, port] of Object.entries(member)) {
        if (!isPort(port)) problems.push({ path: joinPath(at, name), message: PORT_MESSAGE });
      }
      continue;
    }
    problems.push(...checkPortRanges(member, at, key));
  }
  return problems;
}

/**
 * Whether `checkPortRanges` would report anything for `value` (same rules), without building
 * a path for every node: the common case, a valid output, costs one walk and no strings.
 */
export function hasPortRangeProblems(value: unknown, parentKey = ''): boolean {
  if (Array.isArray(value)) {
    for (const item of value) {
      if ((parentKey === 'ports' || parentKey === 'notPorts') && typeof item === 'string' && !isPortString(item))
        return true;
      if (hasPortRangeProblems(item, parentKey)) return true;
    }
    return false;
  }
  if (!isRecord(value)) return false;
  for (const [key, member] of Object.entries(value)) {
    const portField =
      key === 'targetPort' || key === 'port' || (key === 'number' && (parentKey === 'port' || parentKey === 'ports'));
    if (portField && typeof member === 'number' && !isPort(member)) return true;
    if (key === 'ports' && isRecord(member)) {
      if (Object.values(member).some((port) => !isPort(port))) return true;
      continue;
    }
    if (hasPortRangeProblems(member, key)) return true;
  }
  return false;
}
