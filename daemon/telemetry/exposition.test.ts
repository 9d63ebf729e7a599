// The hand-written exposition text, read back by a Prometheus text-format parser: escapes, histograms, gauges.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { Counter, Gauge, Histogram, Registry } from './exposition';

describe('Prometheus exposition', () => {
  it('label values with quotes, backslashes and line feeds read back as written', async () => {
    const r = new Registry();
    const c = r.add(new Counter('x_total', 'help with \\ and\nnewline', ['reason']));
    const odd = 'a "quoted" \\path\\ and\na line feed';
    c.labels(odd).inc(3);
    c.labels('plain').inc();
    r.add(new Gauge('g', 'a gauge', ['k'], () => [[['v'], Number.POSITIVE_INFINITY]]));
    const parsed = parsePrometheusTextFormat(await r.render(() => {}));
    const counter = parsed.find((f) => f.name === 'x_total')!;
    expect(counter.type).toBe('COUNTER');
    expect(counter.help).toBe('help with \\ and\nnewline');
    expect(counter.metrics).toEqual([
      { labels: { reason: odd }, value: '3' },
      { labels: { reason: 'plain' }, value: '1' },
    ]);
    expect(parsed.find((f) => f.name === 'g')!.metrics).toEqual([{ labels: { k: 'v' }, value: '+Inf' }]);
  });

  it('a histogram writes cumulative buckets ending in +Inf', async () => {
    const r = new Registry();
    const h = r.add(new Histogram('lat_seconds', 'latency', [], [0.1, 1]));
    const child = h.labels();
    for (const v of [0.05, 0.1, 0.5, 3]) child.observe(v);
    const [family] = parsePrometheusTextFormat(await r.render(() => {}));
    expect(family!.type).toBe('HISTOGRAM');
    expect(family!.metrics[0]).toEqual({
      buckets: { '0.1': '2', '1': '3', '+Inf': '4' },
      count: '4',
      sum: '3.65',
    });
  });

  it('a gauge whose reading fails is left out and reported; the others are served', async () => {
    const r = new Registry();
    r.add(new Gauge('bad', 'fails', [], () => Promise.reject(new Error('store down'))));
    r.add(new Gauge('good', 'works', [], () => [[[], 1]]));
    const failed: string[] = [];
    const parsed = parsePrometheusTextFormat(await r.render((name) => failed.push(name)));
    expect(parsed.map((f) => f.name)).toEqual(['good']);
    expect(failed).toEqual(['bad']);
  });
});
