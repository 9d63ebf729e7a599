// Prometheus metrics (prom-client): proxy counters updated per recorded call, gauges read from the store at scrape time.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { NewLlmCall } from '../protocol/entities';
import type { Store } from '../store/store';

/** Latency buckets in seconds: from a cached answer to a long agentic generation. */
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const ROLLOUT_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
const NODE_STATES = ['connecting', 'ready', 'busy', 'unhealthy', 'gone'] as const;

/** What the scrape reads besides the store: the span exporter's drop count, the recorder's queue. */
export interface MetricsSources {
  store: Store;
  recorderQueue(): number;
  spans(): { queued: number; dropped: number; exported: number; failed: number } | null;
}

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly calls: Counter<'wire_api' | 'status' | 'token_source'>;
  private readonly latency: Histogram<'wire_api'>;
  private readonly backendLatency: Histogram<'wire_api'>;
  private readonly addedLatency: Histogram<'wire_api'>;
  private readonly tokens: Counter<'direction'>;
  private readonly errors: Counter<'kind'>;
  private readonly prefixBreaks: Counter<'kind'>;
  /** Label children resolved once: prom-client's labels() hashes its arguments on every call. */
  private readonly children = new Map<string, { inc(): void }>();
  private readonly latencyChildren = new Map<string, [Histogram, Histogram, Histogram]>();
  private readonly tokensIn;
  private readonly tokensOut;

  constructor(private readonly sources: MetricsSources) {
    const r = [this.registry];
    this.calls = new Counter({
      name: 'harness_rl_proxy_calls_total',
      help: 'LLM calls recorded by the proxy, by wire API, status (ok, error, cancelled) and token source',
      labelNames: ['wire_api', 'status', 'token_source'],
      registers: r,
    });
    this.latency = new Histogram({
      name: 'harness_rl_proxy_call_seconds',
      help: 'Time from the request reaching the proxy to the last byte of the answer',
      labelNames: ['wire_api'],
      buckets: LATENCY_BUCKETS,
      registers: r,
    });
    this.backendLatency = new Histogram({
      name: 'harness_rl_proxy_backend_seconds',
      help: 'Time from the request leaving the proxy for the backend to the last byte of the answer',
      labelNames: ['wire_api'],
      buckets: LATENCY_BUCKETS,
      registers: r,
    });
    this.addedLatency = new Histogram({
      name: 'harness_rl_proxy_added_seconds',
      help: "The proxy's own time before the backend got the request (parsing, bridge rendering, waiting for a backend slot)",
      labelNames: ['wire_api'],
      buckets: LATENCY_BUCKETS,
      registers: r,
    });
    this.tokens = new Counter({
      name: 'harness_rl_proxy_tokens_total',
      help: 'Tokens through the proxy: in (prompt) and out (completion), from the recorded usage',
      labelNames: ['direction'],
      registers: r,
    });
    this.tokensIn = this.tokens.labels('in');
    this.tokensOut = this.tokens.labels('out');
    this.errors = new Counter({
      name: 'harness_rl_proxy_errors_total',
      help: 'Failed LLM calls by kind (the HTTP status class, or timeout/cancelled)',
      labelNames: ['kind'],
      registers: r,
    });
    this.prefixBreaks = new Counter({
      name: 'harness_rl_bridge_prefix_breaks_total',
      help: "Calls whose history broke the bridge's token prefix (the harness changed an earlier turn), by kind of change",
      labelNames: ['kind'],
      registers: r,
    });
    this.registerScrapeGauges(r);
  }

  /** Counts one recorded call. Kept to map look-ups and adds: it runs on the proxy's path. */
  observeCall(c: NewLlmCall): void {
    const key = `${c.wire_api}|${c.status}|${c.token_source}`;
    let child = this.children.get(key);
    if (!child) {
      child = this.calls.labels(c.wire_api, c.status, c.token_source);
      this.children.set(key, child);
    }
    child.inc();
    let h = this.latencyChildren.get(c.wire_api);
    if (!h) {
      h = [
        this.latency.labels(c.wire_api) as unknown as Histogram,
        this.backendLatency.labels(c.wire_api) as unknown as Histogram,
        this.addedLatency.labels(c.wire_api) as unknown as Histogram,
      ];
      this.latencyChildren.set(c.wire_api, h);
    }
    if (c.total_ms != null) {
      h[0].observe(c.total_ms / 1000);
      if (c.queue_ms != null) {
        h[1].observe(Math.max(0, c.total_ms - c.queue_ms) / 1000);
        h[2].observe(c.queue_ms / 1000);
      }
    }
    if (c.usage) {
      this.tokensIn.inc(c.usage.prompt_tokens);
      this.tokensOut.inc(c.usage.completion_tokens);
    }
    if (c.status !== 'ok') this.errors.labels(errorKind(c)).inc();
    const kind = prefixBreakOf(c);
    if (kind) this.prefixBreaks.labels(kind).inc();
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private registerScrapeGauges(r: Registry[]): void {
    const { store } = this.sources;
    const sources = this.sources;
    new Gauge({
      name: 'harness_rl_recorder_queue_depth',
      help: 'LLM-call records waiting for their store transaction',
      registers: r,
      collect() {
        this.set(sources.recorderQueue());
      },
    });
    new Gauge({
      name: 'harness_rl_rollouts',
      help: 'Rollouts of running runs by state (queued is the queue depth the workers drain)',
      labelNames: ['run_id', 'state'],
      registers: r,
      async collect() {
        this.reset();
        for (const run of await runningRuns(store))
          for (const state of ROLLOUT_STATES)
            this.labels(run, state).set(await countRollouts(store, run, state));
      },
    });
    new Gauge({
      name: 'harness_rl_runs',
      help: 'Runs by status',
      labelNames: ['status'],
      registers: r,
      async collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const run of (await store.listRuns({ limit: 1000 })).items)
          counts.set(run.status, (counts.get(run.status) ?? 0) + 1);
        for (const [status, n] of counts) this.labels(status).set(n);
      },
    });
    new Gauge({
      name: 'harness_rl_run_step',
      help: "Each run's latest finished training step",
      labelNames: ['run_id', 'name'],
      registers: r,
      async collect() {
        this.reset();
        for (const run of (await store.listRuns({ limit: 1000 })).items) {
          this.labels(run.id, run.name).set(run.step);
        }
      },
    });
    new Gauge({
      name: 'harness_rl_step_metric',
      help: "The latest step's metrics of each running run (loss, reward_mean, logprob_diff_mean, prob_correlation …)",
      labelNames: ['run_id', 'metric'],
      registers: r,
      async collect() {
        this.reset();
        for (const run of await runningRuns(store)) {
          const rows = await store.listRunMetrics(run);
          const last = rows[rows.length - 1];
          if (!last) continue;
          for (const [name, v] of Object.entries(last.metrics))
            if (typeof v === 'number' && Number.isFinite(v)) this.labels(run, name).set(v);
        }
      },
    });
    new Gauge({
      name: 'harness_rl_node_up',
      help: 'GPU nodes by kind and status (1 for the status the node is in)',
      labelNames: ['node', 'kind', 'status'],
      registers: r,
      async collect() {
        this.reset();
        for (const node of await store.listNodes())
          for (const s of NODE_STATES) this.labels(node.name, node.kind, s).set(node.status === s ? 1 : 0);
      },
    });
    new Gauge({
      name: 'harness_rl_otlp_spans',
      help: 'OTLP span export: queued now, and exported, dropped (queue full) and failed since the start',
      labelNames: ['state'],
      registers: r,
      collect() {
        this.reset();
        const s = sources.spans();
        if (!s) return;
        for (const [state, n] of Object.entries(s)) this.labels(state).set(n);
      },
    });
  }
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

async function countRollouts(store: Store, runId: string, state: string): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await store.listRollouts({ run_id: runId, status: state as never, limit: 1000, cursor });
    n += page.items.length;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return n;
}
