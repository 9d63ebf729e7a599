// Waiting on the store's events (the run loops for finished rollouts, the claim long-poll for queued ones).
import type { DaemonEvent } from '../protocol/events';
import type { Store } from './store';

/** Resolves when the store publishes an event `matches` accepts, after `ms`, or when `signal` aborts. */
export function nextEvent(
  store: Store,
  matches: (event: DaemonEvent) => boolean,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      unsubscribe();
      signal?.removeEventListener('abort', finish);
      resolve();
    };
    const timer = setTimeout(finish, ms);
    const unsubscribe = store.subscribe((event) => {
      if (matches(event)) finish();
    });
    if (signal?.aborted) finish();
    else signal?.addEventListener('abort', finish, { once: true });
  });
}

/** A rollout of the run changed. */
export const rolloutOf =
  (runId: string) =>
  (event: DaemonEvent): boolean =>
    event.type === 'rollout' && event.rollout.run_id === runId;
