// What the Nodes view shows for each node agent: its row (icon, colour, description), its GPU rows and
// its hover. No vscode import: unit tested (nodeLabels.test.ts); nodesTree.ts turns these into items.
import type { z } from 'zod';
import type { NodeInfo } from '../../daemon/protocol/entities';
import { NodeDetail, type NodeHealth } from '../../daemon/protocol/node';

type Gpu = NodeHealth['gpus'][number];

const part = <T>(schema: z.ZodType<T>, value: unknown, fallback: T): T => {
  const r = schema.safeParse(value);
  return r.success ? r.data : fallback;
};

/**
 * `NodeInfo.detail` (the protocol's NodeDetail). Each part is read on its own, so a detail from
 * another version still shows what it can.
 */
export function nodeDetail(node: Pick<NodeInfo, 'detail'>): NodeDetail {
  const d = (typeof node.detail === 'object' && node.detail !== null ? node.detail : {}) as Record<
    string,
    unknown
  >;
  return {
    connected: part(NodeDetail.shape.connected, d.connected, null),
    run_ids: part(NodeDetail.shape.run_ids, d.run_ids, []),
    health: part(NodeDetail.shape.health, d.health, null),
    error: part(NodeDetail.shape.error, d.error, null),
  };
}

/** A node's health is news after this long without a report (nodes report every few seconds). */
export const STALE_MS = 30_000;

export interface NodeRow {
  label: string;
  description: string;
  /** codicon id: the role (inference, trainer) */
  icon: string;
  /** theme colour id for the icon: the status */
  color: string;
  /** for view/item/context menus: `node.<kind>.<status>` */
  contextValue: string;
  /** Markdown (theme icons allowed) */
  tooltip: string;
  gpus: GpuRow[];
}

export interface GpuRow {
  id: string;
  label: string;
  description: string;
  tooltip: string;
}

export const ROLE_ICON: Record<NodeInfo['kind'], string> = {
  inference: 'server-process',
  trainer: 'mortar-board',
};

export const STATUS_COLOR: Record<NodeInfo['status'], string> = {
  ready: 'charts.green',
  busy: 'charts.blue',
  unhealthy: 'charts.red',
  connecting: 'charts.yellow',
  gone: 'disabledForeground',
};

const STATUS_ICON: Record<NodeInfo['status'], string> = {
  ready: 'pass',
  busy: 'sync',
  unhealthy: 'error',
  connecting: 'loading',
  gone: 'circle-slash',
};

/** How old the shown report may get before a report that changes nothing else redraws the row. */
export const REDRAW_MS = 15_000;

/**
 * Whether a node's new report changes what the view shows. Nodes report every few seconds; a report
 * that changes only its time and uptime redraws the row at most every REDRAW_MS (a redraw closes
 * the row's open hover).
 */
export function nodeChanged(shown: NodeInfo, next: NodeInfo): boolean {
  if (Date.parse(next.last_seen_at) - Date.parse(shown.last_seen_at) >= REDRAW_MS) return true;
  const steady = (n: NodeInfo) => {
    const d = nodeDetail(n);
    return JSON.stringify({
      ...n,
      last_seen_at: null,
      detail: { ...d, health: d.health && { ...d.health, uptime_s: null } },
    });
  };
  return steady(shown) !== steady(next);
}

/** Order in the view: live nodes first, inference before trainer, then by URL. */
export function compareNodes(a: NodeInfo, b: NodeInfo): number {
  return (
    Number(a.status === 'gone') - Number(b.status === 'gone') ||
    a.kind.localeCompare(b.kind) ||
    (a.url || a.id).localeCompare(b.url || b.id)
  );
}

export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

/** The first line of an error, at most `max` characters. */
function firstLine(text: string, max = 60): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

const gib = (mb: number) => (mb / 1024).toFixed(mb >= 10 * 1024 ? 0 : 1);
const pct = (n: number) => `${Math.round(n)}%`;

export function gpuRow(nodeId: string, g: Gpu): GpuRow {
  const mem = `${gib(g.memory_used_mb)}/${gib(g.memory_total_mb)} GiB`;
  return {
    id: `${nodeId}:gpu:${g.index}`,
    label: `GPU ${g.index}`,
    description: `${pct(g.utilization)} · ${mem} · ${g.name}`,
    tooltip: `GPU ${g.index} ${g.name}: ${pct(g.utilization)} utilisation, ${mem} memory`,
  };
}

/** Markdown text as literal text (for names, errors and URLs that come from the node). */
function md(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~$]/g, '\\$&');
}
/** Inline code that survives backticks in the text. */
function code(text: string): string {
  const fence = text.includes('`') ? '``' : '`';
  return `${fence}${text.replace(/\n/g, ' ')}${fence}`;
}

/** Why the node is not usable, or null: a refusal or connection error, else the backend's last error. */
function problem(node: NodeInfo, d: NodeDetail): string | null {
  if (d.error) return d.error;
  if (d.health?.last_error) return d.health.last_error;
  if (node.status === 'unhealthy' && d.health && !d.health.ready) return `${d.health.backend} is not ready`;
  return null;
}

export function nodeRow(node: NodeInfo, now = Date.now()): NodeRow {
  const d = nodeDetail(node);
  const h = d.health;
  const seenMs = now - Date.parse(node.last_seen_at); // NaN for a time this version cannot read
  const stale = node.status !== 'gone' && node.status !== 'connecting' && seenMs > STALE_MS;

  const parts: string[] = [node.status === 'busy' && h?.loading ? 'loading weights' : node.status];
  if (node.model_version !== null) parts.push(`v${node.model_version}`);
  if ((node.status === 'gone' || stale) && !Number.isNaN(seenMs)) parts.push(`seen ${ago(seenMs)}`);
  if (node.status === 'ready' || node.status === 'busy') {
    if (h?.queue_depth) parts.push(`queue ${h.queue_depth}`);
    if (h?.in_flight) parts.push(`${h.in_flight} in flight`);
    if (h?.gpus.length) {
      const util = h.gpus.reduce((s, g) => s + g.utilization, 0) / h.gpus.length;
      parts.push(`${h.gpus.length} GPU${h.gpus.length > 1 ? 's' : ''} ${pct(util)}`);
    }
  }
  const why = problem(node, d);
  // the row names the node already: "cannot reach node ws://…: connect ECONNREFUSED" loses the URL
  if (why && (node.status === 'unhealthy' || node.status === 'connecting'))
    parts.push(firstLine(node.url ? why.replaceAll(` ${node.url}`, '') : why));

  const label = node.url || node.id;
  return {
    label,
    description: parts.join(' · '),
    icon: ROLE_ICON[node.kind],
    // ready or busy, but silent for long (e.g. left so by a daemon that was killed): not to be trusted
    color:
      stale && (node.status === 'ready' || node.status === 'busy')
        ? STATUS_COLOR.gone
        : STATUS_COLOR[node.status],
    contextValue: `node.${node.kind}.${node.status}`,
    tooltip: nodeTooltip(node, d, now),
    gpus: (h?.gpus ?? []).map((g) => gpuRow(node.id, g)),
  };
}

function nodeTooltip(node: NodeInfo, d: NodeDetail, now: number): string {
  const h = d.health;
  const lines: string[] = [];
  const named = node.name && node.name !== node.url ? ` ${code(node.name)}` : '';
  lines.push(`**${node.kind} node**${named} at ${code(node.url || node.id)}`);

  const state: string[] = [`$(${STATUS_ICON[node.status]}) ${node.status}`];
  if (h?.loading) state.push('loading weights');
  if (d.connected === false && node.status !== 'gone') state.push('not connected');
  // a node that is not connected (or gone) keeps its last report: its uptime is no longer news
  const live = d.connected !== false && node.status !== 'gone';
  if (h) state.push(live ? `${h.backend}, up ${duration(h.uptime_s)}` : `last backend ${h.backend}`);
  if (h?.restarts) state.push(`${h.restarts} restart${h.restarts > 1 ? 's' : ''}`);
  lines.push(state.join(' · '));
  if (h && (h.queue_depth || h.in_flight)) lines.push(`queue ${h.queue_depth}, ${h.in_flight} in flight`);

  const runIds = [...new Set([...d.run_ids, ...Object.keys(h?.versions ?? {})])];
  if (runIds.length > 0) {
    const verb = node.kind === 'trainer' ? 'trains' : 'serves';
    lines.push(
      `**Runs**\n\n${runIds
        .map((id) => {
          const v = h?.versions[id];
          const using = d.run_ids.includes(id) ? '' : ' (not in use)';
          return `- ${code(id)}${v === undefined ? '' : ` — ${verb} v${v}`}${using}`;
        })
        .join('\n')}`,
    );
  } else if (node.status !== 'gone') {
    lines.push('No run uses it now.');
  }

  if (h?.gpus.length) {
    lines.push(
      `**GPUs**\n\n${h.gpus
        .map((g) => {
          const used = g.memory_total_mb > 0 ? ` (${pct((100 * g.memory_used_mb) / g.memory_total_mb)})` : '';
          return `- ${g.index} ${md(g.name)}: ${pct(g.utilization)} busy, ${gib(g.memory_used_mb)} of ${gib(g.memory_total_mb)} GiB${used}`;
        })
        .join('\n')}`,
    );
  }

  const why = problem(node, d);
  if (why) {
    const title =
      node.status === 'gone'
        ? 'Gone'
        : d.connected === false || node.status === 'connecting'
          ? 'Not connected'
          : 'Last error';
    lines.push(`**${title}:** ${md(why)}`);
  }
  const seenMs = now - Date.parse(node.last_seen_at);
  lines.push(`last report ${Number.isNaN(seenMs) ? '' : `${ago(seenMs)} `}(${md(node.last_seen_at)})`);
  return lines.join('\n\n');
}
