import { describe, expect, it } from 'vitest';
import type { RunMetrics } from '../../daemon/protocol/entities';
import { callAsCurl } from './curl';
import {
  agreementSteps,
  alignSeries,
  chartSpecs,
  flatRange,
  latest,
  metricTitle,
  seriesOf,
  smooth,
  thresholdsOf,
  upsertMetrics,
} from './metrics';
import { FromWebview, ToDashboard } from './protocol';
import { scatterPosition } from './scatter';

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
    expect(specs.at(-1)).toEqual({ title: 'Groups', key: 'groups' });
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

describe('dashboard smoothing, comparing runs and flat charts', () => {
  it('smooths like TensorBoard: weight 0 is the raw series, the first point is not pulled towards 0', () => {
    expect(smooth([1, 2, 3], 0)).toEqual([1, 2, 3]);
    const s = smooth([1, 1, 1, 1], 0.9);
    for (const v of s) expect(v).toBeCloseTo(1, 10);
    // by hand: m1 = 0.5·0 + 0.5·0 = 0 → 0; m2 = 0.5·0 + 0.5·4 = 2, debias 1 − 0.25 → 2.667
    const [a, b] = smooth([0, 4], 0.5) as number[];
    expect(a).toBe(0);
    expect(b).toBeCloseTo(2 / 0.75, 10);
  });

  it('keeps gaps as gaps and a noisy series gets less noisy', () => {
    expect(smooth([1, null, 3], 0.5)[1]).toBeNull();
    const noisy = Array.from({ length: 200 }, (_, i) => (i % 2 ? 1 : -1));
    const sm = smooth(noisy, 0.9) as number[];
    const spread = (xs: number[]) => Math.max(...xs.slice(100)) - Math.min(...xs.slice(100));
    expect(spread(sm)).toBeLessThan(spread(noisy) / 5);
  });

  it('puts runs with different steps on one axis with gaps where a run has no point', () => {
    expect(
      alignSeries([
        [
          [0, 1, 2],
          [1, 2, 3],
        ],
        [
          [1, 3],
          [5, 6],
        ],
      ]),
    ).toEqual([
      [0, 1, 2, 3],
      [1, 2, 3, null],
      [null, 5, null, 6],
    ]);
  });

  it('gives all-zero charts a 0–1 axis and titles unknown keys in words', () => {
    expect(flatRange(0)).toEqual([0, 1]);
    expect(flatRange(5)).toEqual([4.5, 5.5]);
    expect(flatRange(-2)).toEqual([-2.2, -1.8]);
    expect(metricTitle('dropped_groups')).toBe('Dropped groups');
    expect(chartSpecs([row(0, { dropped_groups: 1 })]).at(-1)).toEqual({
      title: 'Dropped groups',
      key: 'dropped_groups',
    });
  });
});

describe('dynamic sampling on the dashboard', () => {
  it('charts the sampling rounds and the groups kept with titles only when a step has them', () => {
    expect(chartSpecs([row(0, { loss: 1 })]).map((s) => s.key)).not.toContain('sampling_rounds');
    const specs = chartSpecs([row(0, { loss: 1, sampling_rounds: 2, kept_groups: 4, sampled_groups: 8 })]);
    expect(specs.filter((s) => s.key === 'sampling_rounds' || s.key === 'kept_groups')).toEqual([
      { title: 'Sampling rounds per step (dynamic sampling)', key: 'sampling_rounds' },
      { title: 'Informative groups trained on (dynamic sampling)', key: 'kept_groups' },
    ]);
    expect(specs.at(-1)).toEqual({ title: 'Sampled groups', key: 'sampled_groups' });
  });
});

describe('train/inference agreement on the dashboard', () => {
  it('charts the agreement figures after the clip fraction only when a step has them', () => {
    const without = chartSpecs([row(0, { loss: 1 })]).map((s) => s.key);
    expect(without).not.toContain('logprob_diff_mean');
    const keys = chartSpecs([row(0, { loss: 1, logprob_diff_mean: 0.01, tis_capped_fraction: 0 })]).map(
      (s) => s.key,
    );
    expect(keys.slice(4, 7)).toEqual(['clip_fraction', 'logprob_diff_mean', 'tis_capped_fraction']);
    expect(keys.filter((k) => k === 'logprob_diff_mean')).toHaveLength(1);
  });

  it("draws the run's validation thresholds of a metric, and nothing for a run without them", () => {
    const config = { validation: { logprob_diff_mean_max: 0.1, prob_correlation_min: 0.9, patience: 2 } };
    expect(thresholdsOf(config, 'logprob_diff_mean')).toEqual([{ bound: 'max', value: 0.1 }]);
    expect(thresholdsOf(config, 'prob_correlation')).toEqual([{ bound: 'min', value: 0.9 }]);
    expect(thresholdsOf(config, 'loss')).toEqual([]);
    expect(thresholdsOf({ name: 'x' }, 'logprob_diff_mean')).toEqual([]);
    expect(thresholdsOf(null, 'kl')).toEqual([]);
  });

  it('offers a scatter for the steps with rollout logprobs, and places a dot by its two probabilities', () => {
    const rows = [
      row(2, { rollout_logprob_tokens: 5 }),
      row(0, { rollout_logprob_tokens: 0 }),
      row(1, { loss: 1 }),
    ];
    expect(agreementSteps(rows)).toEqual([2]);
    // a 320 px plot with 34 px margins: x grows with the rollout prob, y (downwards) shrinks with the trainer's
    expect(scatterPosition([0, 0], 320)).toEqual([34, 286]);
    expect(scatterPosition([1, 1], 320)).toEqual([286, 34]);
    expect(scatterPosition([0.5, 0.25], 320)).toEqual([160, 223]);
  });
});

describe('a chart heading says the latest value', () => {
  it('is the last step with a finite value', () => {
    const rows = [row(0, { loss: 1 }), row(2, { loss: null }), row(1, { loss: 0.5 })];
    expect(latest(rows, 'loss')).toEqual({ step: 1, value: 0.5 });
    expect(latest(rows, 'kl')).toBeNull();
  });
});
