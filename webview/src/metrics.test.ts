import { describe, expect, it } from 'vitest';
import type { RunMetrics } from '../../daemon/protocol/entities';
import { callAsCurl } from './curl';
import { chartSpecs, seriesOf, upsertMetrics } from './metrics';
import { FromWebview, ToDashboard } from './protocol';

const row = (step: number, metrics: Record<string, number | null>): RunMetrics => ({
  run_id: 'r',
  step,
  metrics,
  created_at: 't',
});

describe('dashboard metrics', () => {
  it('always shows the standard charts, picks the key the trainer used, and adds unknown keys after them', () => {
    const specs = chartSpecs([row(0, { mean_reward: 0.1, kl: 0, groups: 4 })]);
    expect(specs.slice(0, 7).map((s) => s.title)).toEqual([
      'Mean reward',
      'Loss',
      'KL',
      'Entropy',
      'Clip fraction',
      'Tokens/s',
      'Prefix breaks per step',
    ]);
    expect(specs[0].key).toBe('mean_reward');
    expect(specs.at(-1)).toEqual({ title: 'groups', key: 'groups' });
  });

  it('series are sorted by step, one point per step, live rows replace their step', () => {
    let rows = [row(2, { loss: 0.5 }), row(0, { loss: 1 })];
    rows = upsertMetrics(rows, row(1, { loss: 0.7 }));
    rows = upsertMetrics(rows, row(2, { loss: 0.4 }));
    expect(seriesOf(rows, 'loss')).toEqual([
      [0, 1, 2],
      [1, 0.7, 0.4],
    ]);
    expect(seriesOf(rows, 'kl')).toEqual([[], []]);
  });
});

describe('webview message protocol', () => {
  it('accepts the messages both ends send and rejects others with the field named', () => {
    expect(FromWebview.parse({ type: 'copy', what: 'curl', text: 'x' }).type).toBe('copy');
    const bad = FromWebview.safeParse({ type: 'copy', what: 'curl' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0].path).toEqual(['text']);
    expect(ToDashboard.safeParse({ type: 'metrics', metrics: row(0, { loss: 1 }) }).success).toBe(true);
    expect(ToDashboard.safeParse({ type: 'nope' }).success).toBe(false);
  });

  it('copy as curl replays the request against the proxy with the right path and quoting', () => {
    const curl = callAsCurl(
      { wire_api: 'chat', request: { messages: [{ role: 'user', content: "it's" }] } },
      'http://h/v1/',
    );
    expect(curl).toContain("curl 'http://h/v1/chat/completions'");
    expect(curl).toContain(`'{"messages":[{"role":"user","content":"it'\\''s"}]}'`);
    expect(callAsCurl({ wire_api: 'messages', request: {} }, 'http://h/v1')).toContain('x-api-key');
  });
});
