// The node agents this daemon is connected to, one connection per URL, shared by the runs that use
// it; inference nodes also become the proxy's backends (their requests go through the tunnel). Each
// node's state (connected, health, versions, why not connected) is kept in the store's nodes table,
// which GET /api/nodes, the live events and the extension's Nodes view show.
import { readFileSync } from 'node:fs';
import { registerTransport, rootUrl } from '../../http';
import type { NodeInfo } from '../../protocol/entities';
import type { NodeDetail, NodeRole } from '../../protocol/node';
import type { Store } from '../../store/store';
import { NodeConnection } from './connection';
import { NodeTunnel } from './tunnel';

interface Entry {
  connection: NodeConnection;
  users: number;
  runIds: Set<string>;
  unregister: () => void;
  linger?: NodeJS.Timeout;
}

/** How long a node no run uses stays connected. */
const LINGER_MS = 10_000;

export class NodeRegistry {
  private readonly entries = new Map<string, Entry>();

  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: Store,
    private readonly log: (message: string, detail?: Record<string, unknown>) => void,
  ) {
    this.timer = setInterval(() => void this.persist(), 3000);
    this.timer.unref();
  }

  /** The connection to `url` (opened on first use); release it with `release`. */
  acquire(
    url: string,
    role: NodeRole,
    token: string | undefined,
    runId: string,
    caFile?: string,
  ): NodeConnection {
    const key = rootUrl(url);
    let entry = this.entries.get(key);
    if (entry && (entry.connection.options.role !== role || entry.connection.options.token !== token)) {
      if (entry.users > 0)
        throw new Error(
          `node ${key} is in use as ${entry.connection.options.role} by run(s) ${[...entry.runIds].join(', ')}`,
        );
      this.drop(key, entry);
      entry = undefined;
    }
    if (!entry) {
      const ca = caFile ? readFileSync(caFile, 'utf8') : undefined;
      const connection = new NodeConnection({ url: key, token, role, log: this.log, ca });
      connection.onOpen(() => void this.persist());
      connection.onClose(() => void this.persist());
      const unregister = role === 'inference' ? registerTransport(key, new NodeTunnel(connection)) : () => {};
      entry = { connection, users: 0, runIds: new Set(), unregister };
      this.entries.set(key, entry);
    }
    clearTimeout(entry.linger);
    entry.users++;
    entry.runIds.add(runId);
    return entry.connection;
  }

  release(url: string, runId: string): void {
    const key = rootUrl(url);
    const entry = this.entries.get(key);
    if (!entry) return;
    entry.users--;
    entry.runIds.delete(runId);
    if (entry.users > 0) return;
    // No run uses it: after a while (its last health report arrives; a next run may take it over) the
    // daemon stops connecting to it, and the store keeps its last state, marked gone.
    entry.linger = setTimeout(() => {
      if (entry.users > 0 || this.entries.get(key) !== entry) return;
      const info = this.info(key, entry);
      this.drop(key, entry);
      void this.store
        .upsertNode({
          ...info,
          status: 'gone',
          detail: { ...(info.detail as object), error: 'not used by a running run' },
        })
        .catch(() => {});
    }, LINGER_MS);
    entry.linger.unref();
  }

  private drop(key: string, entry: Entry): void {
    clearTimeout(entry.linger);
    entry.unregister();
    entry.connection.close();
    this.entries.delete(key);
  }

  /** The store's row for a node as it stands now. */
  private info(url: string, e: Entry): NodeInfo {
    const c = e.connection;
    const h = c.health;
    const versions = Object.values(h?.versions ?? {});
    const status: NodeInfo['status'] = !c.open
      ? c.refused
        ? 'unhealthy'
        : c.connectedSince === null && c.nodeId === null
          ? 'connecting'
          : 'unhealthy'
      : !h?.ready
        ? 'unhealthy'
        : h.loading || h.in_flight > 0
          ? 'busy'
          : 'ready';
    return {
      id: `node:${url}`,
      name: c.nodeId ?? url,
      kind: c.options.role,
      url,
      status,
      model_version: versions.length > 0 ? Math.max(...versions) : null,
      detail: {
        connected: c.open,
        run_ids: [...e.runIds],
        health: h,
        error: c.refused?.message ?? (c.open ? (h?.last_error ?? null) : c.lastError),
      } satisfies NodeDetail,
      last_seen_at: new Date(c.healthAt ?? Date.now()).toISOString(),
    };
  }

  /** Writes every node's state to the store (on connect, disconnect and every few seconds). */
  async persist(): Promise<void> {
    for (const [url, e] of this.entries) {
      try {
        await this.store.upsertNode(this.info(url, e));
      } catch (err) {
        this.log('storing node state failed', { node: url, error: String(err) });
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    const gone = [...this.entries].map(([url, e]) => ({ ...this.info(url, e), status: 'gone' as const }));
    for (const [key, entry] of this.entries) this.drop(key, entry);
    for (const node of gone) await this.store.upsertNode(node).catch(() => {});
  }
}
