// metav1.Status failures as kube-apiserver returns them (clients branch on `code` and `reason`).

import { qualifiedResourceOf, type FakeKubeResourceType } from './fake-kube-resource-types.ts';

/** The JSON body of a failed request. */
export interface FakeKubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  details?: { name?: string; group?: string; kind?: string };
  code: number;
}

/** An API failure with the Status body the server sends for it. */
export class FakeKubeStatusError extends Error {
  readonly status: FakeKubeStatus;

  constructor(code: number, reason: string, message: string, details?: FakeKubeStatus['details']) {
    super(message);
    this.status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
    if (details) this.status.details = details;
  }
}

/** The `reason` kube-apiserver uses for a bare HTTP status (for `failNext`). */
export function reasonForCode(code: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    410: 'Expired',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    500: 'InternalError',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return reasons[code] ?? 'Unknown';
}

function details(type: FakeKubeResourceType, name: string): FakeKubeStatus['details'] {
  return { name, group: type.group, kind: type.plural };
}

export function notFound(type: FakeKubeResourceType, name: string): FakeKubeStatusError {
  return new FakeKubeStatusError(
    404,
    'NotFound',
    `${qualifiedResourceOf(type)} "${name}" not found`,
    details(type, name),
  );
}

export function alreadyExists(type: FakeKubeResourceType, name: string): FakeKubeStatusError {
  return new FakeKubeStatusError(
    409,
    'AlreadyExists',
    `${qualifiedResourceOf(type)} "${name}" already exists`,
    details(type, name),
  );
}

export function conflict(type: FakeKubeResourceType, name: string, why: string): FakeKubeStatusError {
  return new FakeKubeStatusError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedResourceOf(type)} "${name}": ${why}`,
    details(type, name),
  );
}

export const STALE_OBJECT =
  'the object has been modified; please apply your changes to the latest version and try again';

export function invalid(type: FakeKubeResourceType, name: string, message: string): FakeKubeStatusError {
  return new FakeKubeStatusError(422, 'Invalid', `${type.kind} "${name}" is invalid: ${message}`, details(type, name));
}

export function badRequest(message: string): FakeKubeStatusError {
  return new FakeKubeStatusError(400, 'BadRequest', message);
}

/** The watch/list answer for a resourceVersion older than the retained history. */
export function expired(resourceVersion: string, oldest: number): FakeKubeStatusError {
  return new FakeKubeStatusError(410, 'Expired', `too old resource version: ${resourceVersion} (${oldest})`);
}
