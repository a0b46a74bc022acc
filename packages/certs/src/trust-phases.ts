// The root rotation rules, pure. Each phase differs from its neighbours in one thing only, so two
// clusters one phase apart always trust each other's chains:
//   0 steady: bundle [old], intermediates signed by old
//   1 the new root is added to every bundle (signer still old)
//   2 intermediates are re-signed under the new root (both still trusted)
//   3 the old root is removed (after every leaf under an old intermediate has expired)

import { MeshrelayError } from '@meshrelay/api';

export type RotationPhase = 0 | 1 | 2 | 3;

export interface TrustTarget {
  readonly bundleRootIds: readonly string[];
  readonly signingRootId: string;
}

/** What every cluster must hold at `phase`, given the old and new root ids (new undefined when steady). */
export function targetFor(phase: RotationPhase, oldRootId: string, newRootId?: string): TrustTarget {
  if (phase === 0) return { bundleRootIds: [oldRootId], signingRootId: oldRootId };
  if (newRootId === undefined || newRootId === oldRootId) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `rotation phase ${phase} needs a new root id different from the old one (${oldRootId})`,
    );
  }
  switch (phase) {
    case 1:
      return { bundleRootIds: [oldRootId, newRootId], signingRootId: oldRootId };
    case 2:
      return { bundleRootIds: [oldRootId, newRootId], signingRootId: newRootId };
    case 3:
      return { bundleRootIds: [newRootId], signingRootId: newRootId };
    default:
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `rotation phase ${String(phase)} is not 0-3`);
  }
}

/**
 * The bundle file text: the PEMs in the given order, each with its trailing whitespace replaced by
 * exactly one "\n". For PEMs that already end in one "\n" this is their plain concatenation.
 */
export function bundlePem(rootPems: readonly string[]): string {
  return rootPems.map((pem) => `${pem.trimEnd()}\n`).join('');
}

/**
 * True when `next` is `prev` with roots only added or only removed, the others keeping their
 * order (a superset or a subset): the only bundle changes istiod's multi-root mode takes without
 * breaking a chain.
 */
export function isExactBundleStep(prev: readonly string[], next: readonly string[]): boolean {
  return next.length >= prev.length ? isSubsequence(prev, next) : isSubsequence(next, prev);
}

/** True when `part` is `whole` with some entries left out, order kept. */
function isSubsequence(part: readonly string[], whole: readonly string[]): boolean {
  let i = 0;
  for (const id of whole) {
    if (i < part.length && part[i] === id) i++;
  }
  return i === part.length;
}
