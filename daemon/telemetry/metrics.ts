// The daemon's Prometheus metrics: proxy counters and histograms updated per recorded call (a few
// hundred ns, bench/telemetry.ts), the tool runs harnesses report (ingest.ts, as the store keeps
// them), gauges read from the store and the span export at scrape time.
import type { NewLlmCall, ToolRun } from '../protocol/entities';
import type { Store } from '../store/store';
import {
  CONTENT_TYPE,
  Counter,
  type CounterChild,
  Gauge,
  type GaugeSample,
  Histogram,
  type HistogramChild,
  Registry,
} from './exposition';

/** Latency buckets in seconds: from a cached answer to a long agentic generation. */
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const ROLLOUT_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
const NODE_STATES = ['connecting', 'ready', 'busy', 'unhealthy', 'gone'] as const;
/** Tool and agent names come from the harnesses (MCP tools, any service.name): past this many distinct ones, "other". */
const MAX_TOOL_NAMES = 100;
const MAX_AGENT_NAMES = 20;
const MAX_NAME_CHARS = 64;

/** A label from an open set of names: the first `max` distinct ones as they are, the rest "other". */
export class NameBucket {
  private readonly seen = new Set<string>();
  constructor(private readonly max: number) {}
  of(name: string | null): string {
    const n = name ? name.slice(0, MAX_NAME_CHARS) : 'unknown';
    if (this.seen.has(n)) return n;
    if (this.seen.size >= this.max) return 'other';
    this.seen.add(n);
    return n;
  }
}

/** What the scrape reads besides the store: the span export's counts, the recorder's queue. */
export interface MetricsSources {
  store: Store;
  recorderQueue(): number;
  spans(): { queued: number; dropped: number; exported: number; failed: number } | null;
  log(message: string, detail?: Record<string, unknown>): void;
}

interface WireChildren {
  total: HistogramChild;
  backend: HistogramChild;
  added: HistogramChild;
}

export class DaemonMetrics {
  readonly contentType = CONTENT_TYPE;
  private readonly registry = new Registry();
  private readonly calls: Counter;
  private readonly latency: Histogram;
  private readonly backendLatency: Histogram;
  private readonly addedLatency: Histogram;
  private readonly errors: Counter;
  private readonly prefixBreaks: Counter;
  private readonly tokensIn: CounterChild;
  private readonly tokensOut: CounterChild;
  /** Children by label values, resolved once (wire|status|token_source, wire). */
  private readonly callChildren = new Map<string, CounterChild>();
  private readonly wireChildren = new Map<string, WireChildren>();
  private readonly toolRuns: Counter;
  private readonly toolSeconds: Histogram;
  private readonly toolNames = new NameBucket(MAX_TOOL_NAMES);
  private readonly agentNames = new NameBucket(MAX_AGENT_NAMES);

  constructor(private readonly sources: MetricsSources) {
    const r = this.registry;
    this.calls = r.add(
      new Counter(
        'harness_rl_proxy_calls_total',
        'LLM calls recorded by the proxy, by wire API, status (ok, error, cancelled) and token source',
        ['wire_api', 'status', 'token_source'],
      ),
    );
    this.latency = r.add(
      new Histogram(
        'harness_rl_proxy_call_seconds',
        'Time from the request reaching the proxy to the last byte of the answer',
        ['wire_api'],
        LATENCY_BUCKETS,
      ),
    );
    this.backendLatency = r.add(
      new Histogram(
        'harness_rl_proxy_backend_seconds',
        'Time from the request leaving the proxy for the backend to the last byte of the answer',
        ['wire_api'],
        LATENCY_BUCKETS,
      ),
    );
    this.addedLatency = r.add(
      new Histogram(
        'harness_rl_proxy_added_seconds',
        "The proxy's own time before the backend got the request (parsing, bridge rendering, waiting for a backend slot)",
        ['wire_api'],
        LATENCY_BUCKETS,
      ),
    );
    const tokens = r.add(
      new Counter(
        'harness_rl_proxy_tokens_total',
        'Tokens through the proxy: in (prompt) and out (completion), from the recorded usage',
        ['direction'],
      ),
    );
    this.tokensIn = tokens.labels('in');
    this.tokensOut = tokens.labels('out');
    this.errors = r.add(
      new Counter(
        'harness_rl_proxy_errors_total',
        'Failed LLM calls by kind: request (4xx), rate_limited, timeout, backend (5xx), cancelled',
        ['kind'],
      ),
    );
    this.prefixBreaks = r.add(
      new Counter(
        'harness_rl_bridge_prefix_breaks_total',
        "Calls whose history broke the bridge's token prefix (the harness changed an earlier turn), by kind of change",
        ['kind'],
      ),
    );
    this.toolRuns = r.add(
      new Counter(
        'harness_rl_tool_runs_total',
        `Tool runs the harnesses reported (OTLP), stored once each, by agent, tool (the first ${MAX_TOOL_NAMES} names; then other) and success (true, false, unknown)`,
        ['agent', 'tool', 'success'],
      ),
    );
    this.toolSeconds = r.add(
      new Histogram(
        'harness_rl_tool_run_seconds',
        'How long the reported tool runs took, by agent (runs that give a duration)',
        ['agent'],
        LATENCY_BUCKETS,
      ),
    );
    this.registerScrapeGauges();
  }

  /** Counts tool runs as the store kept them (a repeated report is not counted again). */
  observeToolRuns(runs: readonly ToolRun[]): void {
    for (const t of runs) {
      const agent = this.agentNames.of(t.agent);
      this.toolRuns.labels(agent, this.toolNames.of(t.tool), String(t.success ?? 'unknown')).inc();
      if (t.duration_ms !== null) this.toolSeconds.labels(agent).observe(t.duration_ms / 1000);
    }
  }

  /** Counts one recorded call: map look-ups and adds only, it runs on the proxy's path. */
  observeCall(c: NewLlmCall): void {
    const key = `${c.wire_api}|${c.status}|${c.token_source}`;
    let child = this.callChildren.get(key);
    if (!child) {
      child = this.calls.labels(c.wire_api, c.status, c.token_source);
      this.callChildren.set(key, child);
    }
    child.inc();
    let h = this.wireChildren.get(c.wire_api);
    if (!h) {
      h = {
        total: this.latency.labels(c.wire_api),
        backend: this.backendLatency.labels(c.wire_api),
        added: this.addedLatency.labels(c.wire_api),
      };
      this.wireChildren.set(c.wire_api, h);
    }
    if (c.total_ms != null) {
      h.total.observe(c.total_ms / 1000);
      if (c.queue_ms != null) {
        h.backend.observe(Math.max(0, c.total_ms - c.queue_ms) / 1000);
        h.added.observe(c.queue_ms / 1000);
      }
    }
    if (c.usage) {
      this.tokensIn.inc(c.usage.prompt_tokens);
      this.tokensOut.inc(c.usage.completion_tokens);
    }
    if (c.status !== 'ok') this.errors.labels(errorKind(c)).inc();
    if (c.bridge) {
      const kind = prefixBreakOf(c);
      if (kind) this.prefixBreaks.labels(kind).inc();
    }
  }

  text(): Promise<string> {
    return this.registry.render((name, err) =>
      this.sources.log('metrics: a gauge could not be read', { metric: name, error: String(err) }),
    );
  }

  private registerScrapeGauges(): void {
    for (const gauge of [...runGauges(this.sources.store), ...serviceGauges(this.sources)])
      this.registry.add(gauge);
  }
}

/** Gauges read from the store at each scrape: rollouts, runs, their steps and latest metrics. */
function runGauges(store: Store): Gauge[] {
  return [
    new Gauge(
      'harness_rl_rollouts',
      'Rollouts of running runs by state (queued is the queue the workers drain)',
      ['run_id', 'state'],
      async () => {
        const out: GaugeSample[] = [];
        for (const run of await runningRuns(store))
          for (const state of ROLLOUT_STATES)
            out.push([[run, state], await countRollouts(store, run, state)]);
        return out;
      },
    ),
    new Gauge('harness_rl_runs', 'Runs by status', ['status'], async () => {
      const counts = new Map<string, number>();
      for (const run of (await store.listRuns({ limit: 1000 })).items)
        counts.set(run.status, (counts.get(run.status) ?? 0) + 1);
      return [...counts].map(([status, n]): GaugeSample => [[status], n]);
    }),
    new Gauge(
      'harness_rl_run_step',
      "Each run's latest finished training step",
      ['run_id', 'name'],
      async () =>
        (await store.listRuns({ limit: 1000 })).items.map(
          (run): GaugeSample => [[run.id, run.name], run.step],
        ),
    ),
    new Gauge(
      'harness_rl_step_metric',
      "The latest step's metrics of each running run (loss, reward_mean, logprob_diff_mean, prob_correlation …)",
      ['run_id', 'metric'],
      async () => {
        const out: GaugeSample[] = [];
        for (const run of await runningRuns(store)) {
          const rows = await store.listRunMetrics(run);
          const last = rows[rows.length - 1];
          for (const [name, v] of Object.entries(last?.metrics ?? {}))
            if (typeof v === 'number' && Number.isFinite(v)) out.push([[run, name], v]);
        }
        return out;
      },
    ),
  ];
}

/** Gauges of the daemon's own parts at each scrape: the recorder's queue, GPU nodes, OTLP export. */
function serviceGauges(sources: MetricsSources): Gauge[] {
  const { store } = sources;
  return [
    new Gauge(
      'harness_rl_recorder_queue_depth',
      'LLM-call records waiting for their store transaction',
      [],
      () => [[[], sources.recorderQueue()]],
    ),
    new Gauge(
      'harness_rl_node_up',
      'GPU nodes by kind and status (1 for the status the node is in)',
      ['node', 'kind', 'status'],
      async () =>
        (await store.listNodes()).flatMap((node) =>
          NODE_STATES.map((s): GaugeSample => [[node.name, node.kind, s], node.status === s ? 1 : 0]),
        ),
    ),
    new Gauge(
      'harness_rl_otlp_spans',
      'OTLP span export: queued now, and exported, dropped (queue full) and failed since the start',
      ['state'],
      () => Object.entries(sources.spans() ?? {}).map(([state, n]): GaugeSample => [[state], n]),
    ),
  ];
}

/** The kind of history change that broke the bridge's prefix (BridgeRecord.change), or null. */
export function prefixBreakOf(c: NewLlmCall): string | null {
  const change = (c.bridge as { change?: { change?: unknown } } | null)?.change?.change;
  return typeof change === 'string' ? change : null;
}

function errorKind(c: NewLlmCall): string {
  if (c.status === 'cancelled') return 'cancelled';
  const s = c.http_status;
  if (s == null) return 'unknown';
  if (s === 429) return 'rate_limited';
  if (s === 504 || s === 408) return 'timeout';
  if (s >= 500) return 'backend';
  return 'request';
}

/** The ids of running runs (gauges per run cover only these: finished runs stay in the store). */
async function runningRuns(store: Store): Promise<string[]> {
  return (await store.listRuns({ limit: 1000 })).items.filter((r) => r.status === 'running').map((r) => r.id);
}

/** Rollouts of a run in one state, counted a page at a time. */
async function countRollouts(
  store: Store,
  runId: string,
  state: (typeof ROLLOUT_STATES)[number],
): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await store.listRollouts({ run_id: runId, status: state, limit: 1000, cursor });
    n += page.items.length;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return n;
}
