// GPU node agents the daemon has seen (daemon/cluster/nodes/registry.ts keeps them current).
import { NodeInfo, NodeKind } from '../../protocol/entities';
import type { Row } from '../driver';
import type { SqlContext } from './context';
import { invalid, iso, json, now, numOrNull, oneOf, parse } from './values';

const NODE_KINDS = NodeKind.options;
const NODE_STATUSES = NodeInfo.shape.status.options;

const NODE_COLS = 'id, name, kind, url, status, model_version, detail, last_seen_at';
function toNode(r: Row): NodeInfo {
  return {
    id: String(r.id),
    name: String(r.name),
    kind: r.kind as NodeInfo['kind'],
    url: String(r.url),
    status: r.status as NodeInfo['status'],
    model_version: numOrNull(r.model_version),
    detail: parse(r.detail),
    last_seen_at: iso(r.last_seen_at),
  };
}

export async function upsertNode(c: SqlContext, node: NodeInfo): Promise<NodeInfo> {
  if (typeof node.id !== 'string' || node.id === '') invalid('id', 'node id must be a non-empty string');
  oneOf('kind', node.kind, NODE_KINDS);
  oneOf('status', node.status, NODE_STATUSES);
  const n: NodeInfo = {
    id: node.id,
    name: node.name,
    kind: node.kind,
    url: node.url,
    status: node.status,
    model_version: node.model_version ?? null,
    detail: node.detail ?? null,
    last_seen_at: node.last_seen_at ?? now(),
  };
  return c.tx(async (q, emit) => {
    await q.run(
      `INSERT INTO nodes (${NODE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET name = excluded.name, kind = excluded.kind, url = excluded.url,
         status = excluded.status, model_version = excluded.model_version, detail = excluded.detail,
         last_seen_at = excluded.last_seen_at`,
      [n.id, n.name, n.kind, n.url, n.status, n.model_version, json(n.detail), n.last_seen_at],
    );
    emit({ type: 'node', node: n });
    return n;
  });
}

export async function listNodes(c: SqlContext): Promise<NodeInfo[]> {
  const rows = await c.read(() => c.db.all(`SELECT ${NODE_COLS} FROM nodes ORDER BY id`));
  return rows.map(toNode);
}
