import { describe, expect, it } from 'vitest';
import { describeWorkers } from '../../webview/src/workers';
import { callLabel, describeStatus, formatReward, rolloutDescription, statusIcon } from './labels';
import { parseRange, verifierReward } from './parse';
import { recordingEnv, recordingSnippets } from './snippets';

describe('tree labels', () => {
  it('shows status, reward and counts', () => {
    expect(formatReward(null)).toBe('no reward');
    expect(formatReward(0.12345)).toBe('reward 0.123');
    expect(statusIcon('succeeded')).toBe('pass');
    expect(statusIcon('failed')).toBe('error');
    const d = rolloutDescription({
      status: 'succeeded',
      reward: 1,
      attempt_count: 2,
      stats: { samples: 2, prefix_breaks: 1, mask_tokens: 10, truncations: 0 },
    } as never);
    expect(d).toBe('succeeded · reward 1 · 2 attempts · 1 prefix breaks');
    const c = callLabel({
      seq: 3,
      wire_api: 'responses',
      model: 'm',
      status: 'ok',
      usage: null,
      total_ms: 12.4,
      model_version: 2,
      prompt_ids: [1, 2],
      response_ids: [3],
    });
    expect(c).toEqual({ label: '#3 responses m', description: 'ok · 2+1 tok · 12 ms · v2' });
  });
});

describe('user input parsers', () => {
  it('reward ranges', () => {
    expect(parseRange('')).toEqual({});
    expect(parseRange('0.5..')).toEqual({ min: 0.5, max: undefined });
    expect(parseRange('..0')).toEqual({ min: undefined, max: 0 });
    expect(parseRange('-1..1')).toEqual({ min: -1, max: 1 });
    expect(parseRange('1')).toEqual({ min: 1, max: 1 });
    expect(parseRange('a..b')).toBeUndefined();
  });
  it('a verifier reward is its last printed number, else its exit code', () => {
    expect(verifierReward('running…\n0.75\n', 1)).toBe(0.75);
    expect(verifierReward('all tests passed\n', 0)).toBe(1);
    expect(verifierReward('3 failed\n', 1)).toBe(0);
    expect(verifierReward('', null)).toBe(0);
  });
});

describe('recording snippets', () => {
  const rec = {
    name: 's',
    key: 'k123',
    openai_base_url: 'http://127.0.0.1:4100/v1',
    anthropic_base_url: 'http://127.0.0.1:4100',
  };
  it('Codex uses the responses wire API and the scoped key comes from the environment', () => {
    const md = recordingSnippets(rec, 'reference');
    expect(md).toContain('wire_api = "responses"');
    expect(md).toContain('base_url = "http://127.0.0.1:4100/v1"');
    expect(md).toContain('apiBase: http://127.0.0.1:4100/v1');
    expect(md).toContain('OpenAI Compatible');
  });
  it('terminals get both providers pointed at the recording', () => {
    expect(recordingEnv(rec)).toMatchObject({
      OPENAI_BASE_URL: rec.openai_base_url,
      OPENAI_API_KEY: 'k123',
      ANTHROPIC_BASE_URL: rec.anthropic_base_url,
      ANTHROPIC_AUTH_TOKEN: 'k123',
    });
  });
});

describe('the status bar', () => {
  it('shows the latest training run with its step, and how many others train beside it', () => {
    const one = describeStatus({ kind: 'training', run: 'math', step: 3, steps: 10, url: 'u', others: 0 });
    expect(one.text).toBe('$(sync~spin) math step 3/10');
    const three = describeStatus({ kind: 'training', run: 'math', step: 3, steps: 10, url: 'u', others: 2 });
    expect(three.text).toBe('$(sync~spin) math step 3/10 (+2)');
    expect(three.detail).toContain('and 2 more runs');
    expect(describeStatus({ kind: 'recording', name: 's', url: 'u' }).text).toBe('$(record) Recording s');
  });

  it('stops spinning and says what to run while a run waits for a worker', () => {
    const workers = describeWorkers({
      run_id: 'run_1',
      mode: 'external',
      workers: [],
      last_seen_at: '2025-01-01T00:00:00.000Z',
      command: 'harness-rl worker --run run_1 --url u --data /d',
      error: null,
    });
    const s = describeStatus({ kind: 'training', run: 'math', step: 0, steps: 30, url: 'u', workers });
    expect(s.text).toBe('$(warning) math step 0/30 · no worker');
    expect(s.detail).toContain(
      'The last worker went away. Waiting for a worker: run `harness-rl worker --run run_1',
    );
    const attached = describeStatus({
      kind: 'training',
      run: 'math',
      step: 2,
      steps: 30,
      url: 'u',
      workers: null,
    });
    expect(attached.text).toBe('$(sync~spin) math step 2/30');
  });
});
