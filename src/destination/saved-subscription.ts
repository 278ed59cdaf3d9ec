/**
 * A follower's WebSub subscription, kept in the Destination's state (`<dest>/.resourcesync/state.sqlite`, table
 * `meta`) while it is live, so that a follower started again after it was killed takes the same subscription over
 * (the same callback URL, on the same port when it is free, with the same secret) instead of leaving it behind at
 * the hub beside a new one.
 * @see WebSub §5.1 (a subscription is the pair topic and callback; subscribing again renews it)
 */
import { openSqliteDestinationState } from './sqlite-state.js';
import type { DestinationState } from './state.js';

/** What a follower subscribed with. */
export interface SavedSubscription {
  hub: string;
  topic: string;
  callbackUrl: string;
  /** Where the callback listened. */
  listen: { host: string; port: number };
  secret: string;
}

const key = (capabilityList: string): string => `follow.websub ${capabilityList}`;

function isSaved(v: unknown): v is SavedSubscription {
  const s = v as Partial<SavedSubscription> | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.hub === 'string' &&
    typeof s.topic === 'string' &&
    typeof s.callbackUrl === 'string' &&
    typeof s.secret === 'string' &&
    typeof s.listen?.host === 'string' &&
    Number.isInteger(s.listen.port)
  );
}

/**
 * The subscription saved for a Capability List in the state of `dest`, if any (and readable).
 * @example const saved = loadSubscription('./mirror', 'http://127.0.0.1:8080/capabilitylist.xml');
 */
export async function loadSubscription(dest: string | DestinationState, capabilityList: string): Promise<SavedSubscription | undefined> {
  let store: DestinationState | undefined;
  try {
    store = typeof dest === 'string' ? await openSqliteDestinationState(dest, { readonly: true }) : dest;
    const raw = await store.getMeta(key(capabilityList));
    if (raw === undefined) return undefined;
    const v: unknown = JSON.parse(raw);
    return isSaved(v) ? v : undefined;
  } catch {
    return undefined;
  } finally {
    if (typeof dest === 'string') await store?.close();
  }
}

/**
 * Saves (or, with undefined, forgets) the subscription of a Capability List in the state of `dest`.
 * @example saveSubscription('./mirror', capabilityList, { hub, topic, callbackUrl, listen: { host, port }, secret });
 */
export async function saveSubscription(dest: string | DestinationState, capabilityList: string, s: SavedSubscription | undefined): Promise<void> {
  const store = typeof dest === 'string' ? await openSqliteDestinationState(dest) : dest;
  try {
    await store.setMeta(key(capabilityList), s === undefined ? undefined : JSON.stringify(s));
  } finally {
    if (typeof dest === 'string') await store.close();
  }
}
