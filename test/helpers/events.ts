// The daemon's event stream (GET /api/events) for end-to-end tests: every event, parsed by its one
// schema, collected as it comes.
import WebSocket from 'ws';
import { DaemonEvent } from '../../daemon/protocol/events';
import type { TestDaemon } from './daemon';

/** Opens the socket (`query`: e.g. `?run_id=…`) with the daemon token; resolves once it is open. */
export async function listenEvents(
  daemon: TestDaemon,
  query = '',
): Promise<{ events: DaemonEvent[]; close(): void }> {
  const ws = new WebSocket(`${daemon.url.replace('http', 'ws')}/api/events${query}`, {
    headers: { authorization: `Bearer ${daemon.token}` },
  });
  const events: DaemonEvent[] = [];
  ws.on('message', (data) => events.push(DaemonEvent.parse(JSON.parse(String(data)))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { events, close: () => ws.close() };
}
