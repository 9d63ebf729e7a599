// The webview bundles in real Chromium: a plain page with a fake acquireVsCodeApi, the real bundles
// (built here with esbuild, as scripts/build.mjs does) and a rollout as the daemon returns it.
// Screenshots of each view in VS Code's dark and light themes go to test/artifacts/; the token view's
// colours are measured against WCAG AA in both.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunMetrics } from '../../daemon/protocol/entities';
import type { ToDashboard, ToSnippets, ToTrajectory } from '../../webview/src/protocol';
import { scatterPosition } from '../../webview/src/scatter';
import { capturedRollout, syntheticRollout } from './fixture';
import { viewSamples } from './samples';
import { recordingSnippets } from './snippets';

// page.evaluate callbacks run in the page; this project has no DOM lib
// biome-ignore lint/suspicious/noExplicitAny: browser globals inside page.evaluate
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: browser globals inside page.evaluate
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: browser globals inside page.evaluate
declare const getComputedStyle: any;

const root = fileURLToPath(new URL('../..', import.meta.url));
const artifacts = join(root, 'test', 'artifacts');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// VS Code's Dark+ and Light+ theme variables the styles use (the real webview host injects these).
const COMMON = `--vscode-font-family:sans-serif;--vscode-font-size:13px;--vscode-editor-font-family:monospace;
--vscode-editor-font-size:13px;--vscode-charts-orange:#d18616;`;
const THEMES = {
  dark: `:root{${COMMON}--vscode-foreground:#ccc;--vscode-editor-foreground:#d4d4d4;--vscode-editor-background:#1e1e1e;
--vscode-descriptionForeground:#999;--vscode-charts-red:#f14c4c;--vscode-charts-green:#89d185;--vscode-charts-blue:#3794ff;
--vscode-charts-purple:#b180d7;--vscode-charts-yellow:#cca700;--vscode-panel-border:#444;--vscode-badge-background:#4d4d4d;
--vscode-badge-foreground:#fff;--vscode-button-background:#0e639c;--vscode-button-foreground:#fff;
--vscode-button-secondaryBackground:#3a3d41;--vscode-button-secondaryForeground:#ccc;--vscode-errorForeground:#f48771;
--vscode-focusBorder:#007fd4;--vscode-input-background:#3c3c3c;--vscode-input-foreground:#ccc;
--vscode-editor-findMatchHighlightBackground:#ea5c0055;--vscode-editor-findMatchBackground:#515c6a;--vscode-textCodeBlock-background:#0a0a0a55}`,
  light: `:root{${COMMON}--vscode-foreground:#616161;--vscode-editor-foreground:#000;--vscode-editor-background:#fff;
--vscode-descriptionForeground:#717171;--vscode-charts-red:#e51400;--vscode-charts-green:#388a34;--vscode-charts-blue:#1a85ff;
--vscode-charts-purple:#652d90;--vscode-charts-yellow:#bf8803;--vscode-panel-border:#80808059;--vscode-badge-background:#c4c4c4;
--vscode-badge-foreground:#333;--vscode-button-background:#007acc;--vscode-button-foreground:#fff;
--vscode-button-secondaryBackground:#5f6a79;--vscode-button-secondaryForeground:#fff;--vscode-errorForeground:#a1260d;
--vscode-focusBorder:#0090f1;--vscode-input-background:#fff;--vscode-input-foreground:#616161;--vscode-input-border:#cecece;
--vscode-editor-findMatchHighlightBackground:#ea5c0055;--vscode-editor-findMatchBackground:#a8ac94;--vscode-textCodeBlock-background:#dcdcdc66}`,
};
type Theme = keyof typeof THEMES;

let browser: Browser;
let dir: string;

type Bundle = 'trajectory' | 'dashboard' | 'snippets';

function page(bundle: Bundle, theme: Theme): string {
  const file = join(dir, `${bundle}-${theme}.html`);
  writeFileSync(
    file,
    `<!DOCTYPE html><html><head><meta charset="utf-8"><style>${THEMES[theme]}</style><link rel="stylesheet" href="${bundle}.css"></head><body>
<script>window.__sent=[];window.__state=undefined;window.acquireVsCodeApi=()=>({postMessage:(m)=>window.__sent.push(m),getState:()=>window.__state,setState:(s)=>{window.__state=s}});</script>
<script src="${bundle}.js"></script></body></html>`,
  );
  return `file://${file}`;
}

async function open(bundle: Bundle, theme: Theme = 'dark'): Promise<Page> {
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(e.message));
  await p.goto(page(bundle, theme));
  await p.waitForFunction(() =>
    (window as unknown as { __sent: { type: string }[] }).__sent.some((m) => m.type === 'ready'),
  );
  expect(errors).toEqual([]);
  return p;
}

/** A computed CSS colour (rgb(), rgba() or color(srgb …)) as 0–1 channels and alpha. */
function channels(css: string): [number, number, number, number] {
  const srgb = css.match(/^color\(srgb ([\d.e-]+) ([\d.e-]+) ([\d.e-]+)(?: \/ ([\d.e-]+))?\)$/);
  if (srgb) return [Number(srgb[1]), Number(srgb[2]), Number(srgb[3]), Number(srgb[4] ?? 1)];
  const rgb = css.match(/^rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)$/);
  if (!rgb) throw new Error(`unparsed colour ${css}`);
  return [Number(rgb[1]) / 255, Number(rgb[2]) / 255, Number(rgb[3]) / 255, Number(rgb[4] ?? 1)];
}

/** WCAG 2 contrast ratio of text `fg` on `bg` drawn over the opaque page background `page`. */
function contrast(fg: string, bg: string, page: string): number {
  const under = channels(page);
  const over = (top: number[], below: number[]) =>
    top.slice(0, 3).map((c, i) => c * top[3] + below[i] * (1 - top[3]));
  const back = over(channels(bg), under);
  const text = over(channels(fg), back);
  const lum = (c: number[]) => {
    const [r, g, b] = c.map((v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [hi, lo] = [lum(text), lum(back)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'harness-rl-webview-'));
  mkdirSync(artifacts, { recursive: true });
  await esbuild.build({
    entryPoints: {
      trajectory: join(root, 'webview/src/trajectory.ts'),
      dashboard: join(root, 'webview/src/dashboard.ts'),
      snippets: join(root, 'webview/src/snippets.ts'),
    },
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    outdir: dir,
    loader: { '.css': 'css' },
    logLevel: 'warning',
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
});

afterAll(async () => {
  await browser?.close();
});

const captured = capturedRollout();
const cases = [
  { name: 'synthetic rollout with a prefix break', rollout: syntheticRollout(), siblings: null },
  ...(captured
    ? [
        {
          name: 'real demo rollout (reference engine)',
          rollout: captured.rollout,
          siblings: captured.siblings,
        },
      ]
    : []),
];

describe.each(cases)('trajectory webview in Chromium: $name', ({ name, rollout, siblings: captured }) => {
  const siblings = captured ?? [
    { id: rollout.id, group_id: rollout.group_id, reward: rollout.reward },
    { id: 'ro_sibling', group_id: rollout.group_id, reward: 0 },
  ];
  const { samples, token_texts, prefix_breaks } = viewSamples(rollout, null, siblings);
  const slug = name.startsWith('real') ? 'real' : 'synthetic';
  const message: ToTrajectory = {
    type: 'trajectory',
    rollout: {
      ...rollout,
      prefix_breaks: rollout.prefix_breaks.length ? rollout.prefix_breaks : (prefix_breaks ?? []),
    },
    samples,
    token_texts,
    proxy_base_url: 'http://127.0.0.1:4100/v1',
    focus_call_id: null,
  };

  it('shows every llm call of the conversation with its timing, model version and wire API', async () => {
    const p = await open('trajectory');
    await p.evaluate((m) => window.postMessage(m, '*'), message);
    await p.locator('section.call').first().waitFor();
    expect(await p.locator('section.call').count()).toBe(rollout.llm_calls.length);
    const head = await p.locator('section.call .head').first().innerText();
    expect(head).toContain('chat');
    expect(head).toMatch(/model v\d+/);
    expect(head).toMatch(/total \d+ ms/);
    expect(await p.locator('.entry.user').count()).toBeGreaterThan(0);
    if (slug === 'synthetic') {
      expect(await p.locator('.entry.system').count()).toBe(1);
      // Every reward with its source; a verifier's detail on hover.
      const rewards = p.locator('.summary .reward');
      expect(await rewards.allTextContents()).toEqual(['0.5 (harness)', ', 1 (verifier)']);
      expect(JSON.parse((await rewards.nth(1).getAttribute('title')) ?? 'null')).toEqual({
        passed: 4,
        failed: 0,
      });
    }
    expect(await p.locator('.entry.assistant.response').count()).toBe(rollout.llm_calls.length);
    await p.screenshot({ path: join(artifacts, `webview-conversation-${slug}-dark.png`), fullPage: true });
    // state for the serializer
    const state = await p.evaluate(() => (window as unknown as { __state: { rollout_id: string } }).__state);
    expect(state.rollout_id).toBe(rollout.id);
    await p.close();
    const light = await open('trajectory', 'light');
    await light.evaluate((m) => window.postMessage(m, '*'), message);
    await light.locator('section.call').first().waitFor();
    await light.screenshot({
      path: join(artifacts, `webview-conversation-${slug}-light.png`),
      fullPage: true,
    });
    await light.close();
  });

  it('rounds the reward, pluralises counts and counts trained tokens the same way in the header and the Training tab', async () => {
    const p = await open('trajectory');
    await p.evaluate((m) => window.postMessage(m, '*'), {
      ...message,
      rollout: {
        ...message.rollout,
        reward: 0.6499999999999999,
        attempts: message.rollout.attempts.slice(0, 1),
      },
    });
    await p.locator('section.call').first().waitFor();
    expect(await p.locator('#reward').innerText()).toBe('reward 0.65');
    const summary = await p.locator('.summary').innerText();
    expect(summary).toMatch(/\b1 attempt\b/);
    const trained = (await p.locator('#sample-counts').innerText()).match(/(\d+) trained tokens?/)?.[1];
    await p.locator('button[data-tab="training"]').click();
    await p.locator('.tokens').first().waitFor();
    expect(Number(trained)).toBe(await p.locator('.tokens .tok.m1').count());
    await p.close();
  });

  it('renders the training view token by token: loss mask, logprob heat map, advantages and prefix breaks', async () => {
    const p = await open('trajectory');
    await p.evaluate((m) => window.postMessage(m, '*'), message);
    await p.locator('button[data-tab="training"]').click();
    await p.locator('.tokens').first().waitFor();
    const views = await p.locator('.sample').count();
    expect(views).toBe(samples?.length);
    const expectedTrained = (samples ?? []).reduce(
      (n, s) => n + s.loss_mask.filter((m) => m === 1).length,
      0,
    );
    expect(await p.locator('.tokens .tok.m1').count()).toBe(expectedTrained);
    const expectedTokens = (samples ?? []).reduce((n, s) => n + s.input_ids.length, 0);
    expect(await p.locator('.tokens .tok').count()).toBe(expectedTokens);
    // heat map on trained tokens with a logprob, advantage underline (reward 1 vs sibling 0 → positive)
    expect(await p.locator('.tokens .tok.m1[data-heat]').count()).toBeGreaterThan(0);
    const adv = samples?.[0]?.advantages.find((_, i) => samples[0].loss_mask[i] === 1) ?? 0;
    const signed = adv > 0 ? '.tokens .tok.adv-pos' : adv < 0 ? '.tokens .tok.adv-neg' : null;
    if (signed) expect(await p.locator(signed).count()).toBeGreaterThan(0);
    // the break between sample 0 and 1 with its diagnosis
    const breakBox = p.locator('.break');
    if ((samples?.length ?? 0) > 1) {
      expect(await breakBox.count()).toBe((samples?.length ?? 1) - 1);
      expect(await breakBox.first().innerText()).toMatch(/Prefix break \((template|retokenized|other)\)/);
      // the samples stage decodes the break's windows with the reference tokenizer
      expect(await breakBox.first().innerText()).toContain('<|');
    }
    // token boundaries: reference tokens show their text
    const first = await p.locator('.tokens .tok').first().innerText();
    expect(first).toBe(token_texts?.[0]?.[0] ?? String(samples?.[0]?.input_ids[0]));
    // token details: pointing at a trained token shows its logprob and signed advantage in the panel
    await p.locator('.tokens .tok.m1').first().hover();
    const details = await p.locator('#token-details').innerText();
    expect(details).toMatch(/logprob\s+−?\d/);
    if (adv !== 0) expect(details).toMatch(adv > 0 ? /advantage\s+\+[\d.]+ \(positive\)/ : /\(negative\)/);
    await p.close();
  });

  it('wraps the token view between tokens, never inside one (<|end|> stays on one line)', async () => {
    const p = await open('trajectory');
    await p.setViewportSize({ width: 420, height: 900 });
    await p.evaluate((m) => window.postMessage(m, '*'), message);
    await p.locator('button[data-tab="training"]').click();
    await p.locator('.tokens').first().waitFor();
    const split = await p.evaluate(() => {
      const out: string[] = [];
      for (const t of Array.from(document.querySelectorAll('.tokens .tok')) as {
        textContent: string;
        getClientRects(): { length: number };
      }[]) {
        const text = t.textContent ?? '';
        if (!text.includes('\n') && text.length < 20 && t.getClientRects().length > 1) out.push(text);
      }
      return out;
    });
    expect(split).toEqual([]);
    await p.close();
  });

  it('reaches the token details from the keyboard: Tab to a sample, arrow keys move the cursor token', async () => {
    const p = await open('trajectory');
    await p.evaluate((m) => window.postMessage(m, '*'), message);
    await p.locator('button[data-tab="training"]').click();
    await p.locator('.tokens').first().waitFor();
    // Tab from the search box (the last header control before the body is Refresh)
    await p.locator('#search').focus();
    for (let i = 0; i < 10; i++) {
      await p.keyboard.press('Tab');
      if (await p.evaluate(() => document.activeElement?.classList.contains('tokens'))) break;
    }
    expect(await p.evaluate(() => document.activeElement?.classList.contains('tokens'))).toBe(true);
    expect(await p.locator('#token-details').innerText()).toMatch(/token\s+#0 of sample 0/);
    await p.keyboard.press('ArrowRight');
    await p.keyboard.press('ArrowRight');
    expect(await p.locator('#token-details').innerText()).toMatch(/token\s+#2 of sample 0/);
    await p.keyboard.press('End');
    const last = (samples?.[0]?.input_ids.length ?? 1) - 1;
    expect(await p.locator('#token-details').innerText()).toMatch(
      new RegExp(`token\\s+#${last} of sample 0`),
    );
    expect(await p.locator('#token-details').getAttribute('aria-live')).toBe('polite');
    expect(await p.locator('.tokens').first().locator('.tok.cursor').count()).toBe(1);
    await p.close();
  });

  it.each(['dark', 'light'] as const)(
    'every token meets WCAG AA contrast (≥ 4.5) in the %s theme, heat map included',
    async (theme) => {
      const p = await open('trajectory', theme);
      await p.evaluate((m) => window.postMessage(m, '*'), message);
      await p.locator('button[data-tab="training"]').click();
      await p.locator('.tokens').first().waitFor();
      const colours: { fg: string; bg: string; page: string; text: string; heat: string | null }[] =
        await p.evaluate(() => {
          const page = getComputedStyle(document.body).backgroundColor;
          return Array.from(document.querySelectorAll('.tokens .tok')).map((el: unknown) => {
            const e = el as { textContent: string; dataset: { heat?: string } };
            const cs = getComputedStyle(e);
            return {
              fg: cs.color,
              bg: cs.backgroundColor,
              page,
              text: e.textContent,
              heat: e.dataset.heat ?? null,
            };
          });
        });
      expect(colours.length).toBe((samples ?? []).reduce((n, s) => n + s.input_ids.length, 0));
      // the heat map must actually paint: some tokens with a visible red background
      expect(colours.filter((c) => c.heat !== null && channels(c.bg)[3] > 0).length).toBeGreaterThan(0);
      const worst = colours
        .map((c) => ({ ...c, ratio: contrast(c.fg, c.bg, c.page) }))
        .sort((a, b) => a.ratio - b.ratio)[0];
      expect(
        worst.ratio,
        `"${worst.text}" ${worst.fg} on ${worst.bg} (heat ${worst.heat})`,
      ).toBeGreaterThanOrEqual(4.5);
      await p.screenshot({ path: join(artifacts, `webview-training-${slug}-${theme}.png`), fullPage: true });
      await p.close();
    },
  );

  it('finds text within the trajectory and copies a call as curl', async () => {
    const p = await open('trajectory');
    await p.evaluate((m) => window.postMessage(m, '*'), message);
    await p.locator('section.call').first().waitFor();
    const needle =
      JSON.stringify(rollout.llm_calls[0].request).match(/"content":"([^"]{3,12})/)?.[1] ?? 'assistant';
    await p.locator('#search').fill(needle);
    const count = await p.locator('#search-count').innerText();
    expect(count).toMatch(/^1 of \d+$/);
    expect(await p.locator('mark.search-hit').count()).toBeGreaterThan(0);
    await p.locator('section.call .head button', { hasText: 'curl' }).first().click();
    const sent = await p.evaluate(
      () => (window as unknown as { __sent: { type: string; what?: string; text?: string }[] }).__sent,
    );
    const copy = sent.find((m) => m.type === 'copy');
    expect(copy?.what).toBe('the call as curl');
    expect(copy?.text).toContain("curl 'http://127.0.0.1:4100/v1/chat/completions'");
    expect(copy?.text).toContain(needle);
    await p.close();
  });

  it('shows a clear error instead of a blank page for a message that breaks the protocol', async () => {
    const p = await open('trajectory');
    await p.evaluate(() => window.postMessage({ type: 'trajectory', rollout: { id: 1 } }, '*'));
    await expect.poll(() => p.locator('.error').count()).toBe(1);
    expect(await p.locator('.error').innerText()).toContain('bad message');
    await p.close();
  });
});

it('an empty recording says no calls yet on its Training tab', async () => {
  const rollout = syntheticRollout();
  const p = await open('trajectory');
  await p.evaluate((m) => window.postMessage(m, '*'), {
    type: 'trajectory',
    rollout: { ...rollout, kind: 'recording', llm_calls: [], prefix_breaks: [], reward: null, stats: null },
    samples: null,
    token_texts: null,
    proxy_base_url: 'http://127.0.0.1:4100/v1',
    focus_call_id: null,
  } satisfies ToTrajectory);
  await p.locator('button[data-tab="training"]').click();
  expect(await p.locator('#no-tokens').innerText()).toMatch(/^No calls yet/);
  expect(await p.locator('#reward').innerText()).toBe('reward —');
  expect(await p.locator('.summary').innerText()).toContain('0 llm calls');
  await p.close();
});

it('shows each tool run the agent reported between the llm calls it ran between: tool, duration, outcome, result size', async () => {
  const rollout = syntheticRollout();
  const at = (s: number) => new Date(Date.UTC(2026, 11, 7, 0, 0, s)).toISOString();
  const llm_calls = rollout.llm_calls.map((c, i) => ({ ...c, created_at: at(10 * i + 1) }));
  const tool = (name: string, s: number, over: object = {}) => ({
    id: `tool_${name}`,
    rollout_id: rollout.id,
    tool: name,
    call_id: `toolu_${name}`,
    started_at: at(s),
    duration_ms: 53,
    success: true,
    result_bytes: 167,
    error: null,
    source: 'claude_code.tool_result',
    agent: 'claude-code',
    attributes: { 'session.id': 's1' },
    created_at: at(s),
    ...over,
  });
  const p = await open('trajectory');
  await p.evaluate((m) => window.postMessage(m, '*'), {
    type: 'trajectory',
    rollout: {
      ...rollout,
      llm_calls,
      tool_runs: [
        tool('Write', 2),
        tool('Bash', 12, { success: false, error: 'exit 1', result_bytes: 2048 }),
      ],
    },
    samples: null,
    token_texts: null,
    proxy_base_url: 'http://127.0.0.1:4100/v1',
    focus_call_id: null,
  } satisfies ToTrajectory);
  await p.locator('.tool-run').first().waitFor();
  // in document order: call #0, Write, call #1, Bash (failed), call #2
  const order = await p.evaluate(() =>
    [...document.querySelectorAll('#body > section.call, #body > .tool-run')].map(
      (e: { className: string; innerText: string }) =>
        e.className.startsWith('call') ? 'call' : e.innerText.replace(/\s+/g, ' ').trim(),
    ),
  );
  expect(order).toEqual([
    'call',
    'TOOL RUN Write · 53 ms · ok · 167 B result',
    'call',
    'TOOL RUN Bash · 53 ms · failed · 2.0 KB result exit 1',
    'call',
  ]);
  expect(await p.locator('.tool-run').first().getAttribute('title')).toContain(
    'claude_code.tool_result from claude-code',
  );
  expect(await p.locator('.summary').innerText()).toContain('3 llm calls · 2 tool runs');
  await p.screenshot({ path: join(artifacts, 'webview-conversation-tool-runs-dark.png'), fullPage: true });
  await p.close();
});

describe('run dashboard in Chromium', () => {
  const run = {
    id: 'run_fixture',
    name: 'math-agent',
    status: 'running' as const,
    kind: 'training' as const,
    config: { name: 'math-agent', schedule: { steps: 10 } },
    step: 4,
    model_version: 4,
    error: null,
    created_at: '2026-12-02T12:00:00.000Z',
    updated_at: '2026-12-02T12:00:00.000Z',
  };
  const row = (step: number): RunMetrics => ({
    run_id: run.id,
    step,
    metrics: {
      reward_mean: 0.2 + step * 0.1,
      loss: 1 / (step + 1),
      kl: 0.01 * step,
      entropy: 2 - step * 0.1,
      clip_fraction: 0.05,
      tokens_per_s: 1200 + step * 10,
      prefix_breaks: step % 2,
    },
    created_at: run.created_at,
  });

  it('draws a uPlot chart per metric and adds live points as steps finish', async () => {
    const p = await open('dashboard');
    const initial: ToDashboard = { type: 'dashboard', run, metrics: [row(0), row(1), row(2)] };
    await p.evaluate((m) => window.postMessage(m, '*'), initial);
    await p.locator('.chart canvas').first().waitFor();
    expect(await p.locator('.chart canvas').count()).toBe(7);
    for (const title of [
      'Mean reward',
      'Loss',
      'KL',
      'Entropy',
      'Clip fraction',
      'Tokens/s',
      'Prefix breaks per step',
    ]) {
      expect(await p.locator('.chart h3', { hasText: title }).count()).toBe(1);
    }
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'metrics',
      metrics: row(3),
    } satisfies ToDashboard);
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'run',
      run: { ...run, step: 5 },
    } satisfies ToDashboard);
    await expect.poll(() => p.locator('#run-step').innerText()).toBe('step 5 of 10');
    // the heading says the latest value in words (loss = 1/(step+1)), live
    expect(await p.locator('.chart[data-key="loss"] .latest').innerText()).toBe('0.25 at step 3');
    const points = await p.evaluate(
      () => document.querySelectorAll('.chart[data-key="reward_mean"] .u-legend').length,
    );
    expect(points).toBe(1);
    // the config as a form: one section per part, each setting on its row
    const schedule = p.locator('#config .config-section', { has: p.locator('h3', { hasText: 'Schedule' }) });
    expect(await schedule.locator('tr', { hasText: 'steps' }).locator('td').innerText()).toBe('10');
    await p.locator('button', { hasText: 'Stop run' }).click();
    const sent = await p.evaluate(
      () => (window as unknown as { __sent: { type: string; run_id?: string }[] }).__sent,
    );
    expect(sent.find((m) => m.type === 'stopRun')?.run_id).toBe(run.id);
    await p.close();
  });

  it('keeps flat charts on a small axis, smooths on request and overlays another run with its own colour', async () => {
    const other = { ...run, id: 'run_other', name: 'baseline', status: 'finished' as const };
    const flat = (step: number, runId = run.id): RunMetrics => ({
      ...row(step),
      run_id: runId,
      metrics: { ...row(step).metrics, kl: 0, reward_mean: ((step * 7919) % 10) / 10 },
    });
    for (const theme of ['dark', 'light'] as const) {
      const p = await open('dashboard', theme);
      await p.evaluate((m) => window.postMessage(m, '*'), {
        type: 'dashboard',
        run,
        metrics: Array.from({ length: 30 }, (_, i) => flat(i)),
      } satisfies ToDashboard);
      await p.locator('.chart canvas').first().waitFor();
      // KL is 0 at every step: a 0–1 axis, not uPlot's 0–100; titles never show the raw key
      expect(await p.locator('.chart[data-key="kl"]').getAttribute('data-y-range')).toBe('0,1');
      expect(await p.locator('.chart h3').allInnerTexts()).not.toContain('kl');
      expect((await p.locator('.chart h3').allInnerTexts()).join(' ')).not.toMatch(/\(\w+_\w+\)/);
      // smoothing from the keyboard: raw lines stay, faint, beside the smoothed ones
      await p.locator('#smoothing').focus();
      for (let i = 0; i < 60; i++) await p.keyboard.press('ArrowRight');
      await expect.poll(() => p.locator('#smoothing-value').innerText()).toBe('0.6');
      const legend = p.locator('.chart[data-key="reward_mean"] .u-legend');
      expect(await legend.locator('.u-series.raw').count()).toBe(1);
      expect(await legend.innerText()).not.toContain('(raw)');
      const saved = await p.evaluate(() => (window as unknown as { __state: { smoothing: number } }).__state);
      expect(saved.smoothing).toBe(0.6);
      // comparing: pick a run, the host answers with its metrics, both runs share every chart
      await p.evaluate((m) => window.postMessage(m, '*'), {
        type: 'runs',
        runs: [run, other].map(({ id, name, status, created_at }) => ({ id, name, status, created_at })),
      } satisfies ToDashboard);
      await p.locator('#compare summary').click();
      await p.locator('#compare label', { hasText: 'baseline' }).locator('input').check();
      const sent = await p.evaluate(
        () => (window as unknown as { __sent: { type: string; run_ids?: string[] }[] }).__sent,
      );
      expect(sent.filter((m) => m.type === 'compareRuns').at(-1)?.run_ids).toEqual([other.id]);
      await p.evaluate((m) => window.postMessage(m, '*'), {
        type: 'compare',
        runs: [{ run: other, metrics: Array.from({ length: 20 }, (_, i) => flat(i, other.id)) }],
      } satisfies ToDashboard);
      await expect.poll(() => legend.innerText()).toContain('baseline');
      expect(await p.locator('#compare summary').innerText()).toContain('(1)');
      await p.screenshot({ path: join(artifacts, `webview-dashboard-${theme}.png`), fullPage: true });
      await p.close();
    }
  });

  it("plots the train/inference agreement against the run's thresholds, shows a step's scatter, and a pause with Resume", async () => {
    const message =
      'validation paused the run after step 2: logprob_diff_mean 0.3 > 0.1 (validation.logprob_diff_mean_max). ' +
      'Resume with: harness-rl run resume run_fixture';
    const paused = {
      ...run,
      status: 'paused' as const,
      step: 3,
      error: message,
      config: { ...run.config, validation: { logprob_diff_mean_max: 0.1, prob_correlation_min: 0.9 } },
    };
    const agreeing = (step: number): RunMetrics => ({
      ...row(step),
      metrics: {
        ...row(step).metrics,
        rollout_logprob_tokens: 40,
        logprob_diff_mean: 0.02 + step * 0.14,
        logprob_diff_max: 0.5,
        prob_correlation: 0.99 - step * 0.05,
        tis_weight_mean: 1,
        tis_capped_fraction: 0.01 * step,
      },
    });
    const sent = async () =>
      p.evaluate(
        () => (window as unknown as { __sent: { type: string; run_id?: string; step?: number }[] }).__sent,
      );
    const p = await open('dashboard');
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'dashboard',
      run: paused,
      metrics: [agreeing(0), agreeing(1), agreeing(2)],
    } satisfies ToDashboard);
    await p.locator('.chart canvas').first().waitFor();
    for (const key of [
      'logprob_diff_mean',
      'logprob_diff_max',
      'prob_correlation',
      'tis_weight_mean',
      'tis_capped_fraction',
    ])
      expect(await p.locator(`.chart[data-key="${key}"] canvas`).count()).toBe(1);
    // each threshold is a dashed line named in the chart's legend, inside the y range
    const diff = p.locator('.chart[data-key="logprob_diff_mean"]');
    expect(await diff.getAttribute('data-thresholds')).toBe('max 0.1');
    expect(await diff.locator('.u-legend').innerText()).toContain('max 0.1');
    expect(await p.locator('.chart[data-key="prob_correlation"]').getAttribute('data-thresholds')).toBe(
      'min 0.9',
    );
    const [lo, hi] = ((await diff.getAttribute('data-y-range')) ?? '').split(',').map(Number);
    expect(lo! <= 0.1 && hi! >= 0.3).toBe(true);
    // the pause names the step and the figure; Resume asks the host to resume this run
    expect(await p.locator('#run-paused').innerText()).toContain('step 2: logprob_diff_mean 0.3 > 0.1');
    expect(await p.locator('#run-status').innerText()).toBe('paused');
    await p.locator('#resume-run').click();
    expect((await sent()).find((m) => m.type === 'resumeRun')?.run_id).toBe(run.id);
    // the latest step's scatter is asked for and drawn: one dot per pair, the figures in words
    await expect
      .poll(async () => (await sent()).filter((m) => m.type === 'stepValidation').at(-1))
      .toEqual({ type: 'stepValidation', run_id: run.id, step: 2 });
    const validation = {
      tokens: 3,
      logprob_diff_mean: 0.3,
      logprob_diff_max: 1.2,
      prob_correlation: 0.8,
      tis_weight_mean: 1.1,
      tis_capped_fraction: 0.05,
      scatter: [
        [0.5, 0.5],
        [0.2, 0.6],
        [0.9, 0.85],
      ] as [number, number][],
    };
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'validation',
      run_id: run.id,
      step: 2,
      validation,
    } satisfies ToDashboard);
    await expect.poll(() => p.locator('#agreement svg circle').count()).toBe(3);
    const dot = await p
      .locator('#agreement svg circle')
      .nth(1)
      .evaluate((c: { getAttribute(n: string): string }) => [
        Number(c.getAttribute('cx')),
        Number(c.getAttribute('cy')),
      ]);
    expect(dot).toEqual(scatterPosition([0.2, 0.6], 320).map((x) => Number(x.toFixed(1))));
    expect(await p.locator('#scatter-figures').innerText()).toBe(
      'step 2 · 3 tokens with a rollout logprob · |Δ logprob| mean 0.3, max 1.2 · prob correlation 0.8 · TIS weight mean 1.1, 5% capped',
    );
    await p.screenshot({ path: join(artifacts, 'webview-dashboard-validation.png'), fullPage: true });
    // another step, picked: asked for, remembered, and a step without a scatter says why
    await p.locator('#scatter-step').selectOption('0');
    await expect
      .poll(async () => (await sent()).filter((m) => m.type === 'stepValidation').at(-1)?.step)
      .toBe(0);
    expect(
      await p.evaluate(
        () => (window as unknown as { __state: { scatter_step: number } }).__state.scatter_step,
      ),
    ).toBe(0);
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'validation',
      run_id: run.id,
      step: 0,
      validation: null,
      message: 'step 0 of run run_fixture has no train/inference validation',
    } satisfies ToDashboard);
    await expect
      .poll(() => p.locator('#agreement').innerText())
      .toContain('has no train/inference validation');
    // a new step adds itself to the picker; the picked step stays
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'metrics',
      metrics: agreeing(3),
    } satisfies ToDashboard);
    await expect
      .poll(() => p.locator('#scatter-step option').allInnerTexts())
      .toEqual(['latest (step 3)', 'step 3', 'step 2', 'step 1', 'step 0']);
    expect(await p.locator('#scatter-step').inputValue()).toBe('0');
    await p.close();
  });

  it('says the run waits for a worker, with the command and a Copy button, until one attaches', async () => {
    const p = await open('dashboard');
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'dashboard',
      run: { ...run, step: 0 },
      metrics: [],
    } satisfies ToDashboard);
    await p.locator('h1', { hasText: 'math-agent' }).waitFor();
    const command = `harness-rl worker --run ${run.id} --url http://127.0.0.1:4100 --data /home/me/.harness-rl`;
    const workers = {
      run_id: run.id,
      mode: 'external' as const,
      workers: [],
      last_seen_at: null,
      command,
      error: null,
    };
    await p.evaluate((m) => window.postMessage(m, '*'), { type: 'workers', workers } satisfies ToDashboard);
    await expect.poll(() => p.locator('#run-workers').innerText()).toContain('Waiting for a worker: run');
    expect(await p.locator('#run-workers code').innerText()).toBe(command);
    await p.screenshot({ path: join(artifacts, 'webview-dashboard-waiting.png'), fullPage: true });
    await p.locator('#run-workers button', { hasText: 'Copy' }).click();
    const sent = await p.evaluate(
      () => (window as unknown as { __sent: { type: string; text?: string }[] }).__sent,
    );
    expect(sent.find((m) => m.type === 'copy')?.text).toBe(command);
    const seen = '2026-12-02T12:00:01.000Z';
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'workers',
      workers: {
        ...workers,
        workers: [{ name: 'host:1', daemon: false, last_seen: seen }],
        last_seen_at: seen,
      },
    } satisfies ToDashboard);
    await expect.poll(() => p.locator('#run-workers').count()).toBe(0);
    await p.evaluate((m) => window.postMessage(m, '*'), {
      type: 'workers',
      workers: { ...workers, last_seen_at: seen },
    } satisfies ToDashboard);
    await expect.poll(() => p.locator('#run-workers').innerText()).toContain('The last worker went away.');
    await p.close();
  });

  const post = (p: Page, m: ToDashboard) => p.evaluate((msg) => window.postMessage(msg, '*'), m);
  const sentOf = (p: Page) =>
    p.evaluate(() => (window as unknown as { __sent: { type: string }[] }).__sent.map((m) => m.type));

  it('after the daemon stops says so with Start Daemon, not "running" nor worker advice; back when it is', async () => {
    const p = await open('dashboard');
    await post(p, { type: 'dashboard', run, metrics: [row(0)] });
    await post(p, {
      type: 'workers',
      workers: {
        run_id: run.id,
        mode: 'daemon',
        workers: [],
        last_seen_at: '2026-12-02T12:00:01.000Z',
        command: 'harness-rl worker',
        error: null,
      },
    });
    await p.locator('#run-workers').waitFor();
    await post(p, { type: 'daemon', running: false });
    await expect.poll(() => p.locator('#run-status').innerText()).toBe('paused: daemon stopped');
    const text = await p.locator('#root').innerText();
    expect(text).toContain('resumes from step 4 when the daemon starts again');
    expect(text).not.toMatch(/Waiting for a worker|Stop run/);
    await p.screenshot({ path: join(artifacts, 'webview-dashboard-daemon-stopped.png'), fullPage: true });
    await p.locator('#daemon-stopped button', { hasText: 'Start Daemon' }).click();
    expect(await sentOf(p)).toContain('startDaemon');
    await post(p, { type: 'dashboard', run, metrics: [row(0)] });
    await expect.poll(() => p.locator('#run-status').innerText()).toBe('running');
    expect(await p.locator('#daemon-stopped').count()).toBe(0);
    await p.close();
  });

  it('an error page with the daemon stopped offers Start Daemon and Retry, and names no other button', async () => {
    for (const bundle of ['dashboard', 'trajectory'] as const) {
      const p = await open(bundle);
      await p.evaluate((m) => window.postMessage(m, '*'), {
        type: 'error',
        message: 'The Harness RL daemon is not running.',
        daemon_stopped: true,
      });
      await p.locator('.error').waitFor();
      expect(await p.locator('button').allInnerTexts()).toEqual(['Start Daemon', 'Retry']);
      expect(await p.locator('body').innerText()).not.toMatch(/press Refresh/);
      await p.locator('button', { hasText: 'Start Daemon' }).click();
      await p.locator('button', { hasText: 'Retry' }).click();
      expect((await sentOf(p)).slice(-2)).toEqual(['startDaemon', 'refresh']);
      await p.close();
    }
  });

  it("counts the current step's rollouts finished, running and queued, live", async () => {
    const p = await open('dashboard');
    await post(p, { type: 'dashboard', run, metrics: [row(0)] });
    const progress = { run_id: run.id, step: 4, total: 8, queued: 3, running: 4, finished: 1, failed: 0 };
    await post(p, { type: 'progress', progress });
    await expect
      .poll(() => p.locator('#step-progress').innerText())
      .toBe('step 4: 1 of 8 rollouts finished · 4 running · 3 queued');
    await post(p, {
      type: 'progress',
      progress: { ...progress, queued: 0, running: 1, finished: 7, failed: 1 },
    });
    await expect
      .poll(() => p.locator('#step-progress').innerText())
      .toBe('step 4: 7 of 8 rollouts finished · 1 failed · 1 running');
    expect(await p.locator('#step-progress progress').getAttribute('value')).toBe('7');
    // a run event redraws the header: the progress stays
    await post(p, { type: 'run', run: { ...run, model_version: 5 } });
    await expect.poll(() => p.locator('#step-progress').count()).toBe(1);
    await p.screenshot({ path: join(artifacts, 'webview-dashboard-progress.png') });
    await p.close();
  });

  it('redraws its charts in the new colours when the theme changes while it is open', async () => {
    const p = await open('dashboard', 'dark');
    await post(p, { type: 'dashboard', run, metrics: [row(0), row(1), row(2)] });
    await p.locator('.chart canvas').first().waitFor();
    expect(await p.locator('#charts').getAttribute('data-axis-stroke')).toBe('#ccc');
    const first = await p.evaluate(() => document.querySelector('.chart canvas'));
    // what VS Code does on a theme switch: new variables on <html>, a new class on <body>
    await p.evaluate(
      (light) => {
        document.documentElement.setAttribute('style', light);
        document.body.className = 'vscode-light';
      },
      THEMES.light.replace(/^:root\{|\}$/g, ''),
    );
    await expect.poll(() => p.locator('#charts').getAttribute('data-axis-stroke')).toBe('#616161');
    expect(await p.evaluate((old) => document.querySelector('.chart canvas') !== old, first)).toBe(true);
    await p.close();
  });

  it('draws every y-axis label whole: no minus sign or leading zero cut off at the left edge', async () => {
    const p = await open('dashboard');
    const metrics = Array.from({ length: 6 }, (_, step) => ({
      ...row(step),
      metrics: { reward_mean: -0.0236, loss: 0.0325 + step * 0.0001, kl: -123456.5 + step },
    }));
    await post(p, { type: 'dashboard', run, metrics });
    await p.locator('.chart canvas').first().waitFor();
    for (const key of ['reward_mean', 'loss', 'kl']) {
      // the leftmost columns of the canvas hold no ink: every label fits inside the axis
      const ink = await p.evaluate((k) => {
        const canvas = document.querySelector(`.chart[data-key="${k}"] canvas`);
        const data = canvas.getContext('2d').getImageData(0, 0, 2, canvas.height).data;
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
        return n;
      }, key);
      expect(ink, key).toBe(0);
    }
    await p.screenshot({ path: join(artifacts, 'webview-dashboard-axis-labels.png') });
    await p.close();
  });

  it('tells runs with the same name apart in the title, the compare list and the legend', async () => {
    const p = await open('dashboard');
    const twin = {
      ...run,
      id: 'run_twin',
      created_at: '2026-12-01T09:30:00.000Z',
      status: 'finished' as const,
    };
    await post(p, { type: 'dashboard', run, metrics: [row(0), row(1)] });
    await post(p, {
      type: 'runs',
      runs: [twin].map(({ id, name, status, created_at }) => ({ id, name, status, created_at })),
    });
    await expect.poll(() => p.locator('h1').innerText()).toMatch(/^math-agent · Dec 2 \d\d:00$/);
    await p.locator('#compare summary').click();
    const pick = p.locator('#compare label', { hasText: /math-agent · Dec 1/ });
    await pick.locator('input').check();
    await post(p, { type: 'compare', runs: [{ run: twin, metrics: [row(0), row(1)] }] });
    const legend = p.locator('.chart[data-key="loss"] .u-legend');
    await expect.poll(() => legend.innerText()).toMatch(/math-agent · Dec 1/);
    expect(await legend.innerText()).toMatch(/math-agent · Dec 2/);
    await p.close();
  });
});

describe('recording snippets in Chromium', () => {
  const rec = {
    name: 'session 2026-12-03',
    key: 'hrl_rec_0123456789abcdef',
    openai_base_url: 'http://127.0.0.1:4100/r/rec_1/v1',
    anthropic_base_url: 'http://127.0.0.1:4100/r/rec_1',
  };
  const markdown = recordingSnippets(rec, 'reference');
  const message: ToSnippets = { type: 'snippets', recording: rec.name, markdown, key: rec.key };

  it.each(['dark', 'light'] as const)(
    'shows the snippets read-only in the %s theme, the key masked until shown, a Copy button per code block',
    async (theme) => {
      const p = await open('snippets', theme);
      await p.evaluate((m) => window.postMessage(m, '*'), message);
      await p.locator('.snippet').first().waitFor();
      expect(await p.locator('h1').innerText()).toContain(rec.name);
      expect(await p.locator('.snippet').count()).toBe((markdown.match(/^```/gm) ?? []).length / 2);
      expect(await p.locator('.snippet button.copy').count()).toBe(await p.locator('.snippet').count());
      expect(await p.locator('body').innerText()).not.toContain(rec.key);
      expect(await p.locator('h2', { hasText: 'Codex' }).count()).toBe(1);
      await p.screenshot({ path: join(artifacts, `webview-snippets-${theme}.png`), fullPage: true });
      // a copy holds the real key and the real URLs, masked or not
      await p.locator('.snippet', { hasText: 'model_provider' }).locator('button.copy').click();
      await p.locator('.snippet').first().locator('button.copy').click();
      const sent = await p.evaluate(
        () => (window as unknown as { __sent: { type: string; what?: string; text?: string }[] }).__sent,
      );
      const copies = sent.filter((m) => m.type === 'copy');
      expect(copies[0].text).toContain(`base_url = "${rec.openai_base_url}"`);
      expect(copies[0].what).toContain('Codex');
      expect(copies[1].text).toContain(`export OPENAI_API_KEY=${rec.key}`);
      await p.locator('#reveal').click();
      expect(await p.locator('#reveal').getAttribute('aria-pressed')).toBe('true');
      expect(await p.locator('body').innerText()).toContain(rec.key);
      await p.close();
    },
  );
});
