import { describe, expect, it } from 'vitest';
import { AGENT_SETTINGS, settingsMarkdown } from '../../daemon/agents/settings';
import { describeWorkers } from '../../webview/src/workers';
import {
  callLabel,
  describeStatus,
  formatReward,
  groupDescription,
  rewardColor,
  rolloutDescription,
  runDescription,
  runLabels,
  statusIcon,
  taskText,
} from './labels';
import { parseRange, verifierReward } from './parse';
import { recordingEnv, recordingSnippets } from './snippets';

describe('tree labels', () => {
  it('shows status, reward and counts', () => {
    expect(formatReward(null)).toBe('no reward');
    expect(formatReward(0.12345)).toBe('reward 0.123');
    expect(statusIcon('succeeded')).toBe('pass');
    expect(statusIcon('failed')).toBe('error');
    expect(statusIcon('logprobs_mismatch')).toBe('warning');
    expect(statusIcon('dropped')).toBe('dash'); // a group dynamic sampling left out
    const d = rolloutDescription({
      status: 'succeeded',
      reward: 1,
      attempt_count: 2,
      stats: { samples: 2, prefix_breaks: 1, mask_tokens: 10, truncations: 0 },
    } as never);
    expect(d).toBe('1 · succeeded · 2 attempts · 1 prefix break');
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

describe('telling rows apart', () => {
  it('rounds rewards and puts them first; counts one thing one way', () => {
    expect(formatReward(0.6499999999999999)).toBe('reward 0.65');
    const row = { status: 'succeeded', reward: 0.6499999999999999, attempt_count: 1, stats: null } as const;
    expect(rolloutDescription(row)).toBe('0.65 · succeeded');
    expect(rolloutDescription({ ...row, reward: null, status: 'running' })).toBe('running');
    expect(groupDescription({ size: 1, status: 'complete' })).toBe('1 rollout · complete');
    expect(groupDescription({ size: 8, status: 'running' })).toBe('8 rollouts · running');
  });

  it('colours a reward from red (0 or less) through yellow to green (1 or more)', () => {
    expect(rewardColor(null)).toBeUndefined();
    expect([-1, 0, 0.3, 0.99, 1, 4].map(rewardColor)).toEqual([
      'charts.red',
      'charts.red',
      'charts.yellow',
      'charts.yellow',
      'charts.green',
      'charts.green',
    ]);
  });

  it('shows a task as one line of its text, its last user message, its name or its fields', () => {
    expect(taskText({ prompt: 'What is\n 2+3?', answer: 5 })).toBe('What is 2+3?');
    expect(
      taskText({
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'x' },
          { role: 'user', content: 'sum 1 and 2' },
        ],
      }),
    ).toBe('sum 1 and 2');
    expect(taskText({ input: { question: 'deep' } })).toBe('deep');
    expect(taskText({ id: 'add-2-3', a: 2, b: 3 })).toBe('add-2-3');
    expect(taskText({ a: 2, b: 3, op: '+' })).toBe('a=2 b=3 op=+');
    expect(taskText('x'.repeat(100), 10)).toBe(`${'x'.repeat(9)}…`);
    expect(taskText(null)).toBe('');
  });

  it('names runs by name, adding when they started only where names clash', () => {
    const runs = [
      { id: 'run_a1', name: 'math-agent', created_at: '2026-12-03T15:52:00Z' },
      { id: 'run_b2', name: 'math-agent', created_at: '2026-12-03T16:10:00Z' },
      { id: 'run_c3', name: 'search', created_at: '2026-12-03T16:10:00Z' },
      { id: 'run_d4', name: 'twin', created_at: '2026-12-03T16:10:00Z' },
      { id: 'run_e5', name: 'twin', created_at: '2026-12-03T16:10:30Z' },
    ];
    const labels = runLabels(runs, (iso) => iso.slice(11, 16));
    expect(Object.fromEntries(labels)).toEqual({
      run_a1: 'math-agent · 15:52',
      run_b2: 'math-agent · 16:10',
      run_c3: 'search',
      run_d4: 'twin · 16:10 · run_d4',
      run_e5: 'twin · 16:10 · run_e5',
    });
    expect(new Set(labels.values()).size).toBe(runs.length);
  });

  it("a run's description leads with its step out of its steps", () => {
    const run = {
      status: 'running',
      step: 3,
      model_version: 3,
      config: { schedule: { steps: 30 } },
    } as const;
    expect(runDescription(run)).toBe('step 3/30 · running · v3');
    expect(runDescription({ ...run, config: null })).toBe('step 3 · running · v3');
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
  it('are the agent settings of daemon/agents/settings.ts with the recording filled in', () => {
    const md = recordingSnippets(rec, 'reference');
    const e = {
      openaiBaseUrl: rec.openai_base_url,
      anthropicBaseUrl: rec.anthropic_base_url,
      key: 'k123',
      model: 'reference',
    };
    for (const agent of AGENT_SETTINGS) {
      if (!agent.recordingSnippet)
        expect(md).toContain(agent.name); // named, with a pointer to the docs
      else
        expect(md).toContain(
          `## ${agent.name} — ${agent.wire}\n\n${settingsMarkdown(agent, e, { command: false })}`,
        );
    }
    expect(md).toContain('export ANTHROPIC_MODEL=reference');
  });
  it('terminals get both providers pointed at the recording', () => {
    expect(recordingEnv(rec)).toMatchObject({
      OPENAI_BASE_URL: rec.openai_base_url,
      OPENAI_API_KEY: 'k123',
      ANTHROPIC_BASE_URL: rec.anthropic_base_url,
      ANTHROPIC_AUTH_TOKEN: 'k123',
    });
  });
  it("terminals send Claude Code's tool runs (its OTLP logs) to the recording with its key", () => {
    expect(recordingEnv(rec)).toMatchObject({
      CLAUDE_CODE_ENABLE_TELEMETRY: '1',
      OTEL_LOGS_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${rec.anthropic_base_url}/v1/logs`,
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer k123',
    });
    // one shell word in the snippet a person copies (unquoted, the key would be a second word)
    expect(recordingSnippets(rec, 'm')).toContain(
      "export OTEL_EXPORTER_OTLP_HEADERS='Authorization=Bearer k123'",
    );
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

  it('a run that a validation threshold paused shows where and why, the message safe as Markdown', () => {
    const s = describeStatus({
      kind: 'paused',
      runId: 'run_1',
      run: 'math',
      step: 4,
      message:
        'validation paused the run after step 3: logprob_diff_mean 0.25 > 0.1 (validation.logprob_diff_mean_max)',
      url: 'u',
    });
    expect(s.text).toBe('$(debug-pause) math paused at step 4');
    expect(s.detail).toBe(
      'Run **math** paused: validation paused the run after step 3: logprob\\_diff\\_mean 0.25 \\> 0.1 (validation.logprob\\_diff\\_mean\\_max)',
    );
  });

  it('a daemon that answers but refuses the known tokens is told apart from no daemon', () => {
    const found = describeStatus({ kind: 'found', url: 'http://127.0.0.1:4100' });
    expect(found.text).toBe('$(key) Harness RL');
    expect(found.detail).toContain('does not accept the known tokens');
    expect(describeStatus({ kind: 'stopped' }).detail).toBe('Daemon stopped');
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
