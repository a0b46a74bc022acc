import type { relay } from '@meshrelay/api';
import { sameElements, type ResourceState, type ResourceStatus } from '@meshrelay/translator';
import type { RelayStream } from './relay-stream.ts';

/** Where the pull handler reads resource statuses: the translation loop's latest run. */
export interface ResourceStatusSource {
  /** Statuses of the last translation; undefined before the first one (nothing is known yet). */
  current(): readonly ResourceStatus[] | undefined;
  /** Calls `listener` after every translation run; returns an unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

function stateMessage(state: ResourceState): relay.v1.IResourceState {
  return { observedGeneration: state.observedGeneration, approval: state.approval, message: state.message };
}

/** The statuses of the resources whose input lives in `cluster` (and only those), as the wire carries them. */
export function statusesForCluster(statuses: readonly ResourceStatus[], cluster: string): relay.v1.IResourceStatuses {
  return {
    statuses: statuses
      .filter((s) => s.cluster === cluster)
      .map((s) => ({
        apiVersion: s.apiVersion,
        kind: s.kind,
        namespace: s.namespace,
        name: s.name,
        state: stateMessage(s.state),
        clusters: Object.fromEntries(Object.entries(s.clusters).map(([c, state]) => [c, stateMessage(state)])),
      })),
  };
}

/**
 * What the wire message of `statuses` carries, as one string (JSON.stringify, not the canonical
 * encoding: it runs for every stream after every translation, on the way of the outputs). Equal
 * content built in the same order gives the same string; a different order only costs a resend.
 */
function statusesSignature(statuses: readonly ResourceStatus[]): string {
  return JSON.stringify(statuses.map((s) => [s.apiVersion, s.kind, s.namespace, s.name, s.state, s.clusters]));
}

/**
 * Sends the stream's cluster its resource statuses now (when a translation has run) and after
 * every translation that changed them. Statuses travel beside outputs, never inside one, so a
 * status change never re-applies an output. Returns the unsubscribe function.
 */
export function feedStatuses(source: ResourceStatusSource, stream: RelayStream<relay.v1.IPullResponse>): () => void {
  let sent: string | undefined;
  let sentStatuses: readonly ResourceStatus[] = [];
  const send = (): void => {
    const statuses = source.current();
    if (statuses === undefined || stream.isClosed()) return;
    const mine = statuses.filter((s) => s.cluster === stream.cluster);
    // Translation hands out an unchanged resource's frozen status object again: the same objects are the same content.
    if (sent !== undefined && sameElements(mine, sentStatuses)) return;
    sentStatuses = mine;
    const signature = statusesSignature(mine);
    if (signature === sent) return;
    sent = signature;
    const message = statusesForCluster(mine, stream.cluster);
    stream.write({ statuses: message });
    stream.log.debug({ statuses: message.statuses?.length ?? 0 }, 'resource statuses sent');
  };
  const unsubscribe = source.subscribe(send);
  send();
  return unsubscribe;
}
