// The evaluation and comparison pages in real Chromium: the real bundle (built here with esbuild, as
// scripts/build.mjs does), a fake acquireVsCodeApi, and evaluations shaped as the daemon stores them;
// the comparison is the daemon's own (daemon/eval/compare.ts). Screenshots go to test/artifacts/.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareEvaluations } from '../../daemon/eval/compare';
import { bootstrapMean } from '../../daemon/eval/stats';
import type { EvalTaskResult, Evaluation } from '../../daemon/protocol/evaluation';
import { formatNumber } from '../../webview/src/format';
import type { ToEvaluation } from '../../webview/src/protocol';

// biome-ignore lint/suspicious/noExplicitAny: browser globals inside page.evaluate
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: browser globals inside page.evaluate
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: browser globals inside page.evaluate
declare const getComputedStyle: any;

const root = fileURLToPath(new URL('../..', import.meta.url));
const artifacts = join(root, 'test', 'artifacts');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// the VS Code Dark+ and Light+ variables these pages use
const THEMES = {
  dark: `--vscode-font-family:sans-serif;--vscode-font-size:13px;--vscode-editor-font-family:monospace;--vscode-foreground:#ccc;--vscode-editor-background:#1e1e1e;--vscode-descriptionForeground:#999;--vscode-charts-red:#f14c4c;--vscode-charts-green:#89d185;--vscode-panel-border:#444;--vscode-badge-background:#4d4d4d;--vscode-badge-foreground:#fff;--vscode-button-secondaryBackground:#3a3d41;--vscode-button-secondaryForeground:#ccc;--vscode-errorForeground:#f48771`,
  light: `--vscode-font-family:sans-serif;--vscode-font-size:13px;--vscode-editor-font-family:monospace;--vscode-foreground:#616161;--vscode-editor-background:#fff;--vscode-descriptionForeground:#717171;--vscode-charts-red:#e51400;--vscode-charts-green:#388a34;--vscode-panel-border:#80808059;--vscode-badge-background:#c4c4c4;--vscode-badge-foreground:#333;--vscode-button-secondaryBackground:#5f6a79;--vscode-button-secondaryForeground:#fff;--vscode-errorForeground:#a1260d`,
};

let browser: Browser;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'harness-rl-evaluation-'));
  mkdirSync(artifacts, { recursive: true });
  await esbuild.build({
    entryPoints: { evaluation: join(root, 'webview/src/evaluation.ts') },
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    outdir: dir,
    loader: { '.css': 'css' },
    logLevel: 'warning',
  });
  writeFileSync(
    join(dir, 'page.html'),
    `<!DOCTYPE html><html style="${THEMES.dark}"><head><meta charset="utf-8"><link rel="stylesheet" href="evaluation.css"></head><body class="vscode-dark">
<script>window.__sent=[];window.__state=undefined;window.acquireVsCodeApi=()=>({postMessage:(m)=>window.__sent.push(m),getState:()=>window.__state,setState:(s)=>{window.__state=s}});</script>
<script src="evaluation.js"></script></body></html>`,
  );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
});

afterAll(async () => {
  await browser?.close();
});

async function open(message: ToEvaluation): Promise<Page> {
  const p = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(e.message));
  await p.goto(`file://${join(dir, 'page.html')}`);
  await p.waitForFunction(() => window.__sent.some((m: { type: string }) => m.type === 'ready'));
  await p.evaluate((m) => window.postMessage(m, '*'), message);
  expect(errors).toEqual([]);
  return p;
}

const sent = (p: Page) => p.evaluate(() => window.__sent as { type: string; [k: string]: unknown }[]);

function task(
  key: string,
  rewards: number[],
  tokens: [number, number],
  calls: number,
  rollouts: string[],
): EvalTaskResult {
  const passes = rewards.filter((r) => r >= 1).length;
  return {
    task_id: `task_${key}`,
    index: Number(key.replace(/\D/g, '')),
    key,
    rewards,
    passes,
    pass_at_1: passes / rewards.length,
    pass_at_k: passes > 0 ? 1 : 0,
    mean_reward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
    prompt_tokens: tokens[0],
    completion_tokens: tokens[1],
    calls,
    rollouts,
    failures: [],
  };
}

function evaluation(id: string, tasks: EvalTaskResult[], extra: Partial<Evaluation> = {}): Evaluation {
  return {
    id,
    name: 'math-agent',
    run_id: `run_${id}`,
    split: 'test',
    attempts: 3,
    harness_dir: '/work/examples/math-agent',
    model_version: 4,
    seed: 7,
    status: 'finished',
    error: null,
    created_at: '2026-12-06T10:00:00.000Z',
    finished_at: '2026-12-06T10:01:05.000Z',
    summary: {
      tasks: tasks.length,
      attempts: 3,
      scored: 8,
      unscored_tasks: 0,
      mean_reward: 0.5833,
      ci_low: 0.3333,
      ci_high: 0.8333,
      ci: 'percentile bootstrap over tasks, 2000 resamples, seed 7',
      pass_threshold: 1,
      pass_at_1: 0.5833,
      pass_at_k: 0.75,
      prompt_tokens_per_task: 212.5,
      completion_tokens_per_task: 41.25,
      policy_tokens_per_task: 253.75,
      calls_per_task: 1.5,
      wall_s: 65.4,
      failures: { 'harness exited with code 1': 1, 'timeout after 60 s': 2 },
      infrastructure_retries: 2,
    },
    tasks,
    ...extra,
  };
}

const A = evaluation('eval_a', [
  task('t1', [1, 1, 0], [200, 40], 1, ['ro_a1', 'ro_a2', 'ro_a3']),
  task('t2', [0, 0, 0], [220, 44], 2, ['ro_b1', 'ro_b2', 'ro_b3']),
  task('t3', [1, 0, 1], [210, 39], 1, ['ro_c1', 'ro_c2', 'ro_c3']),
  {
    ...task('t4', [1, 1], [220, 42], 2, ['ro_d1', 'ro_d2']),
    failures: [{ kind: 'harness', reason: 'timeout after 60 s' }],
  },
]);
const B = evaluation(
  'eval_b',
  [
    task('t1', [1, 1, 1], [150, 30], 1, []),
    task('t2', [1, 0, 0], [160, 31], 1, []),
    task('t3', [1, 0, 1], [150, 30], 1, []),
    task('t4', [0, 0, 0], [170, 35], 1, []),
  ],
  { created_at: '2026-12-06T11:00:00.000Z' },
);

describe('the evaluation page in Chromium', () => {
  it("shows the summary with its interval and wall time, and a row per task with the task's own figures", async () => {
    const previous = {
      id: 'eval_0',
      name: 'math-agent',
      status: 'finished' as const,
      created_at: '2026-12-05T09:00:00.000Z',
    };
    const p = await open({ type: 'evaluation', evaluation: A, previous });
    await p.locator('#tasks tbody tr').first().waitFor();
    expect(await p.locator('h1').innerText()).toBe('Evaluation math-agent');
    const summary = (key: string) => p.locator(`#summary tr[data-key="${key}"] td`).nth(1).innerText();
    expect(await summary('mean_reward')).toMatch(/^0\.583 95 % CI \[0\.333, 0\.833\] percentile bootstrap/);
    expect(await summary('pass_at_1')).toBe('0.583');
    expect(await p.locator('#summary tr[data-key="pass_at_k"] td').first().innerText()).toBe('pass@3');
    expect(await summary('pass_at_k')).toMatch(/^0\.75 \(pass: reward ≥ 1\)/);
    expect(await summary('policy_tokens')).toBe('253.8 (prompt 212.5 + completion 41.3, per attempt)');
    expect(await summary('calls')).toBe('1.5');
    expect(await summary('wall')).toBe('1 min 5 s');
    expect(await summary('attempts')).toBe('8 of 12 scored · 0 tasks unscored · 2 infrastructure retries');
    expect(await p.locator('#summary tr[data-key="failures"] li').allInnerTexts()).toEqual([
      '2 × timeout after 60 s',
      '1 × harness exited with code 1',
    ]);
    // per task: k rewards, pass@1, pass@k, mean, its own bootstrap interval (the evaluation's seed), tokens, calls
    expect(await p.locator('#tasks tbody tr').count()).toBe(4);
    const t1 = p.locator('#tasks tr[data-task="t1"] td');
    expect(await t1.nth(1).locator('.reward').allInnerTexts()).toEqual(['1', '1', '0']);
    expect(await t1.nth(1).locator('.reward.pass').count()).toBe(2);
    expect(await t1.nth(2).innerText()).toBe('0.667');
    expect(await t1.nth(3).innerText()).toBe('1');
    expect(await t1.nth(4).innerText()).toBe('0.667');
    const ci = bootstrapMean([1, 1, 0], 7);
    expect(await t1.nth(5).innerText()).toBe(`[${formatNumber(ci.low)}, ${formatNumber(ci.high)}]`);
    expect(await t1.nth(6).innerText()).toBe('240');
    expect(await t1.nth(7).innerText()).toBe('1');
    expect(await p.locator('#tasks tr[data-task="t4"] td').nth(8).innerText()).toBe(
      '1 × timeout after 60 s (harness)',
    );
    await p.screenshot({ path: join(artifacts, 'webview-evaluation-dark.png'), fullPage: true });
    // an attempt's reward opens its trajectory; Compare with previous compares previous (A) → this (B)
    await t1.nth(1).locator('.reward').nth(2).click();
    await p.locator('#compare-previous').click();
    const out = await sent(p);
    expect(out).toContainEqual({ type: 'openRollout', rollout_id: 'ro_a3' });
    expect(out).toContainEqual({ type: 'compareEvaluations', a: 'eval_0', b: 'eval_a' });
    expect(await p.evaluate(() => window.__state)).toEqual({ evaluation_id: 'eval_a' });
    await p.close();
  });

  it("counts a running evaluation's attempts live, and a message that breaks the protocol is an error, not a blank page", async () => {
    const running: ToEvaluation = {
      type: 'evaluation',
      evaluation: { ...A, status: 'running', summary: null, tasks: null, finished_at: null },
    };
    const p = await open(running);
    await expect.poll(() => p.locator('#pending').innerText()).toMatch(/^Evaluating…/);
    expect(await p.locator('#status').innerText()).toBe('running');
    const progress = {
      evaluation_id: A.id,
      run_id: A.run_id,
      total: 12,
      queued: 4,
      running: 3,
      finished: 5,
      succeeded: 4,
      failed: 1,
      retried: 2,
    };
    await p.evaluate((m) => window.postMessage(m, '*'), { type: 'progress', progress });
    const line = p.locator('#eval-progress');
    await expect
      .poll(() => line.innerText())
      .toBe(
        '5 of 12 attempts finished · 1 failed · 3 running · 4 queued · 2 retries after infrastructure failures',
      );
    expect(await line.locator('progress').getAttribute('value')).toBe('5');
    // the host reads the page again on the evaluation's events: the count stays
    await p.evaluate((m) => window.postMessage(m, '*'), running);
    await expect.poll(() => line.innerText()).toMatch(/^5 of 12 attempts finished/);
    await p.evaluate(() => window.postMessage({ type: 'evaluation', evaluation: { id: 3 } }, '*'));
    await expect.poll(() => p.locator('[role=alert]').innerText()).toMatch(/^Cannot show this/);
    await p.close();
  });
});

describe('the comparison page in Chromium', () => {
  const comparison = compareEvaluations(A, B, 0);

  it("shows the daemon's paired comparison: mean difference with its interval, the sign test, counts and tokens", async () => {
    const p = await open({ type: 'comparison', comparison, a: A, b: B });
    await p.locator('#per-task tbody tr').first().waitFor();
    // t1 +1/3, t2 +1/3, t3 0, t4 −1: B better on 2, worse on 1, equal on 1
    expect(comparison.sign_test).toMatchObject({ wins: 2, losses: 1, ties: 1 });
    const verdict = await p.locator('#verdict').innerText();
    expect(verdict).toContain(
      `B − A mean reward −0.0833 95 % CI [${formatNumber(comparison.ci_low)}, ${formatNumber(comparison.ci_high)}]`,
    );
    expect(verdict).toMatch(/not significant$/);
    expect(await p.locator('#wins').innerText()).toBe('B better on 2');
    expect(await p.locator('#losses').innerText()).toBe('worse on 1');
    expect(await p.locator('#ties').innerText()).toBe('equal on 1');
    expect(await p.locator('#facts tr[data-key="sign_test"] td').nth(1).innerText()).toMatch(
      /^p = 1 \(exact/,
    );
    expect(await p.locator('#facts tr[data-key="method"] td').nth(1).innerText()).toBe(comparison.method);
    // tokens per task and attempt: A (240+264+249+262)/4 = 253.75, B (180+191+180+205)/4 = 189
    expect(await p.locator('#facts tr[data-key="tokens"] td').nth(1).innerText()).toBe(
      'A 253.8 · B 189 · change −25.5 %',
    );
    expect(await p.locator('#facts tr[data-key="paired"] td').nth(1).innerText()).toMatch(
      /^4 \(A scored 4, B 4/,
    );
    const t4 = p.locator('#per-task tr[data-task="t4"]');
    expect(await t4.getAttribute('class')).toBe('worse');
    expect(await t4.locator('td').allInnerTexts()).toEqual(['t4', '1', '0', '−1', '262', '205', '−21.8 %']);
    expect(await p.locator('#per-task tr[data-task="t1"] td.diff').innerText()).toBe('+0.333');
    await p.screenshot({ path: join(artifacts, 'webview-comparison-dark.png'), fullPage: true });
    await p.locator('#open-b').click();
    expect(await sent(p)).toContainEqual({ type: 'openEvaluation', evaluation_id: 'eval_b' });
    expect(await p.evaluate(() => window.__state)).toEqual({ a: 'eval_a', b: 'eval_b' });
    await p.close();
  });

  it("follows a theme switch: better and worse tasks take the new theme's colours", async () => {
    const p = await open({ type: 'comparison', comparison, a: A, b: B });
    const better = p.locator('#per-task tr[data-task="t1"]');
    const worse = p.locator('#per-task tr[data-task="t4"]');
    await better.waitFor();
    const colour = (l: typeof better) => l.evaluate((el) => getComputedStyle(el).color);
    expect(await colour(better)).toBe('rgb(137, 209, 133)');
    expect(await colour(worse)).toBe('rgb(241, 76, 76)');
    // what VS Code does on a theme switch: new variables on <html>, a new class on <body>
    await p.evaluate((light) => {
      document.documentElement.setAttribute('style', light);
      document.body.className = 'vscode-light';
    }, THEMES.light);
    expect(await colour(better)).toBe('rgb(56, 138, 52)');
    expect(await colour(worse)).toBe('rgb(229, 20, 0)');
    await p.screenshot({ path: join(artifacts, 'webview-comparison-light.png'), fullPage: true });
    await p.close();
  });
});
