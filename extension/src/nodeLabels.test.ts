import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../daemon/protocol/entities';
import type { NodeHealth } from '../../daemon/protocol/node';
import { compareNodes, nodeChanged, nodeDetail, nodeRow } from './nodeLabels';

const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const seen = (secondsAgo: number) => new Date(NOW - secondsAgo * 1000).toISOString();

function health(over: Partial<NodeHealth> = {}): NodeHealth {
  return {
    role: 'inference',
    backend: 'vllm-cmd',
    ready: true,
    queue_depth: 0,
    in_flight: 0,
    loading: false,
    versions: { run_a: 3 },
    gpus: [
      { index: 0, name: 'NVIDIA H200', memory_used_mb: 40_960, memory_total_mb: 143_360, utilization: 90 },
      { index: 1, name: 'NVIDIA H200', memory_used_mb: 512, memory_total_mb: 143_360, utilization: 70 },
    ],
    uptime_s: 7_380,
    restarts: 0,
    last_error: null,
    ...over,
  };
}

function node(over: Partial<NodeInfo> = {}, detail: Record<string, unknown> = {}): NodeInfo {
  return {
    id: 'node:ws://gpu-1:4301',
    name: 'gpu-1-inference',
    kind: 'inference',
    url: 'ws://gpu-1:4301',
    status: 'ready',
    model_version: 3,
    detail: { connected: true, run_ids: ['run_a'], health: health(), error: null, ...detail },
    last_seen_at: seen(2),
    ...over,
  };
}

describe('the Nodes view rows', () => {
  it('a ready node shows its role, URL, version and GPU load, and a GPU row per GPU', () => {
    const row = nodeRow(node(), NOW);
    expect(row.label).toBe('ws://gpu-1:4301');
    expect(row.icon).toBe('server-process');
    expect(row.color).toBe('charts.green');
    expect(row.description).toBe('ready · v3 · 2 GPUs 80%');
    expect(row.contextValue).toBe('node.inference.ready');
    expect(row.gpus.map((g) => [g.label, g.description])).toEqual([
      ['GPU 0', '90% · 40/140 GiB · NVIDIA H200'],
      ['GPU 1', '70% · 0.5/140 GiB · NVIDIA H200'],
    ]);
  });

  it('a busy node puts its queue first after the version; a loading one says it loads weights', () => {
    const busy = node({ status: 'busy' }, { health: health({ queue_depth: 2, in_flight: 5, gpus: [] }) });
    expect(nodeRow(busy, NOW)).toMatchObject({
      description: 'busy · v3 · queue 2 · 5 in flight',
      color: 'charts.blue',
    });
    const loading = node({ status: 'busy' }, { health: health({ loading: true, queue_depth: 4, gpus: [] }) });
    expect(nodeRow(loading, NOW).description).toBe('loading weights · v3 · queue 4');
  });

  it('a trainer node that is not connected says why, in the row and in the hover', () => {
    const n = node(
      {
        kind: 'trainer',
        status: 'unhealthy',
        model_version: null,
        url: 'ws://gpu-1:4302',
        name: 'ws://gpu-1:4302',
      },
      { connected: false, run_ids: ['run_a'], health: null, error: 'connect ECONNREFUSED 10.0.0.5:4302' },
    );
    const row = nodeRow(n, NOW);
    expect(row.icon).toBe('mortar-board');
    expect(row.color).toBe('charts.red');
    expect(row.description).toBe('unhealthy · connect ECONNREFUSED 10.0.0.5:4302');
    expect(row.gpus).toEqual([]);
    expect(row.tooltip).toContain('$(error) unhealthy · not connected');
    expect(row.tooltip).toContain('**Not connected:** connect ECONNREFUSED 10\\.0\\.0\\.5:4302');
    expect(row.tooltip).not.toContain('`ws://gpu-1:4302` at'); // its name is its URL: said once

    const lost = nodeRow(
      node(
        { status: 'unhealthy', last_seen_at: seen(45) },
        { connected: false, error: 'cannot reach node ws://gpu-1:4301: connect ECONNREFUSED' },
      ),
      NOW,
    );
    expect(lost.description).toBe('unhealthy · v3 · seen 45s ago · cannot reach node: connect ECONNREFUSED');
    expect(lost.tooltip).toContain('$(error) unhealthy · not connected · last backend vllm-cmd');
    expect(lost.tooltip).not.toContain('up 2h');
  });

  it('a connecting node shows the last connection error; a long one is cut at its first line', () => {
    const err = `getaddrinfo ENOTFOUND ${'very-long-host-name.'.repeat(5)}example\n    at stack`;
    const n = node(
      { status: 'connecting', model_version: null },
      { connected: false, health: null, error: err },
    );
    const row = nodeRow(n, NOW);
    expect(row.color).toBe('charts.yellow');
    expect(row.description.startsWith('connecting · getaddrinfo ENOTFOUND very-long')).toBe(true);
    expect(row.description.endsWith('…')).toBe(true);
    expect(row.description).not.toContain('at stack');
  });

  it('the hover lists runs with the versions served, GPUs with memory and utilisation, restarts and the last error', () => {
    const h = health({
      restarts: 2,
      last_error: 'vLLM exited with code 1',
      versions: { run_a: 3, run_old: 1 },
    });
    const tip = nodeRow(node({}, { health: h }), NOW).tooltip;
    expect(tip).toContain('**inference node** `gpu-1-inference` at `ws://gpu-1:4301`');
    expect(tip).toContain('$(pass) ready · vllm-cmd, up 2h 3m · 2 restarts');
    expect(tip).toContain('- `run_a` — serves v3');
    expect(tip).toContain('- `run_old` — serves v1 (not in use)');
    expect(tip).toContain('- 0 NVIDIA H200: 90% busy, 40 of 140 GiB (29%)');
    expect(tip).toContain('**Last error:** vLLM exited with code 1');
    expect(tip).toContain('last report 2s ago');
  });

  it('a gone node, or one silent for long, shows when it was last seen', () => {
    expect(nodeRow(node({ status: 'gone', last_seen_at: seen(600) }), NOW)).toMatchObject({
      description: 'gone · v3 · seen 10 min ago',
      color: 'disabledForeground',
    });
    const gone = nodeRow(
      node({ status: 'gone', last_seen_at: seen(600) }, { run_ids: [], error: 'not used by a running run' }),
      NOW,
    ).tooltip;
    expect(gone).toContain('$(circle-slash) gone · last backend vllm-cmd');
    expect(gone).toContain('**Gone:** not used by a running run');
    expect(gone).toContain('- `run_a` — serves v3 (not in use)');
    expect(nodeRow(node({ last_seen_at: seen(90) }), NOW)).toMatchObject({
      description: 'ready · v3 · seen 2 min ago · 2 GPUs 80%',
      color: 'disabledForeground',
    });
  });

  it('a detail this version does not know still shows the rest, and node text cannot inject Markdown', () => {
    const n = node({}, { health: { weird: true }, error: '[click](command:evil) `x`' });
    expect(nodeDetail(n)).toMatchObject({ connected: true, run_ids: ['run_a'], health: null });
    const tip = nodeRow({ ...n, status: 'unhealthy' }, NOW).tooltip;
    expect(tip).toContain('\\[click\\]\\(command:evil\\) \\`x\\`');
    expect(nodeRow({ ...n, detail: null }, NOW).description).toBe('ready · v3');
  });

  it('live nodes come first, inference before trainer, then by URL', () => {
    const list = [
      node({ id: 'g', url: 'ws://a:1', status: 'gone' }),
      node({ id: 't', url: 'ws://a:2', kind: 'trainer' }),
      node({ id: 'i2', url: 'ws://b:1' }),
      node({ id: 'i1', url: 'ws://a:1', status: 'unhealthy' }),
    ];
    expect(list.sort(compareNodes).map((n) => n.id)).toEqual(['i1', 'i2', 't', 'g']);
  });

  it('a report that changes only its time and uptime redraws the row at most every 15 s', () => {
    const shown = node();
    const later = (s: number, over: Partial<NodeHealth> = {}) =>
      node({ last_seen_at: seen(2 - s) }, { health: health({ uptime_s: 7_380 + s, ...over }) });
    expect(nodeChanged(shown, later(3))).toBe(false);
    expect(nodeChanged(shown, later(15))).toBe(true);
    expect(nodeChanged(shown, later(3, { queue_depth: 1 }))).toBe(true);
    expect(nodeChanged(shown, node({ status: 'busy', last_seen_at: seen(-1) }))).toBe(true);
  });
});
