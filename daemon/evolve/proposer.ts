// The proposer: a command that gets a working copy of the parent and a brief (the parent's train
// scores, its failing and best trajectories summarised from the store, the edit budget, the lineage)
// and edits the copy in place. Its LLM calls go through the proxy as a scoped recording, with the endpoint
// variables of daemon/agents/settings.ts, so a coding-agent CLI works unchanged and is recorded.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { terminalEnv } from '../agents/settings';
import type { DaemonContext } from '../context';
import type { LlmCall } from '../protocol/entities';
import type { EvalTaskResult } from '../protocol/evaluation';
import type { EvolveConfig } from '../protocol/evolution';
import type { StoredCandidate, StoredEvaluation } from '../store/store';
import { runProcess } from '../worker/command';
import { unifiedDiff } from './diff';

const clip = (text: string, n: number) => (text.length > n ? `${text.slice(0, n)}…` : text);

/** The text of a call's last user message and its reply (OpenAI chat or Anthropic shapes). */
function exchange(call: LlmCall): { asked: string; replied: string } {
  const text = (c: unknown): string =>
    typeof c === 'string'
      ? c
      : Array.isArray(c)
        ? c.map((p) => (p as { text?: string }).text ?? '').join('')
        : '';
  const messages = (
    (call.request as { messages?: { role: string; content: unknown }[] })?.messages ?? []
  ).filter((m) => m.role === 'user');
  const r = call.response as { choices?: { message?: { content?: unknown } }[]; content?: unknown } | null;
  return {
    asked: text(messages.at(-1)?.content),
    replied: text(r?.choices?.[0]?.message?.content ?? r?.content),
  };
}

async function trajectoryText(ctx: DaemonContext, t: EvalTaskResult): Promise<string> {
  const lines = [
    `- task ${JSON.stringify(t.key)}: mean reward ${t.mean_reward?.toFixed(3) ?? '—'} over ${t.rewards.length} attempts`,
  ];
  const id = t.rollouts[0];
  if (id) {
    const rollout = await ctx.store.getRollout(id);
    lines.push(`  input: ${clip(JSON.stringify(rollout?.input ?? null), 300)}`);
    for (const call of (await ctx.store.listLlmCalls(id)).slice(0, 6)) {
      const { asked, replied } = exchange(call);
      lines.push(
        `  asked: ${clip(JSON.stringify(asked), 300)}`,
        `  model: ${clip(JSON.stringify(replied), 300)}`,
      );
    }
  }
  for (const f of t.failures.filter((x) => x.kind === 'harness')) lines.push(`  failed: ${f.reason}`);
  return lines.join('\n');
}

export interface Brief {
  parent: string;
  /** Which proposal on this parent in this generation (0, 1, …): proposers that try several ideas pick by it. */
  proposal: number;
  train: StoredEvaluation['summary'];
  budget: EvolveConfig['budget'];
  lineage: { hash: string; stats: StoredCandidate['stats']; train_reward: number | null; status: string }[];
  markdown: string;
}

/** The brief for a child of `parent`: built only from train evaluations (held-out is never shown). */
export async function buildBrief(
  ctx: DaemonContext,
  parent: StoredCandidate,
  train: StoredEvaluation,
  lineage: StoredCandidate[],
  siblings: StoredCandidate[],
  budget: EvolveConfig['budget'],
  proposal: number,
): Promise<Brief> {
  const s = train.summary;
  const tasks = [...(train.tasks ?? [])].filter((t) => t.mean_reward !== null);
  tasks.sort((a, b) => (a.mean_reward ?? 0) - (b.mean_reward ?? 0));
  const failing = await Promise.all(tasks.slice(0, 3).map((t) => trajectoryText(ctx, t)));
  const best = await Promise.all(
    tasks
      .slice(-2)
      .reverse()
      .map((t) => trajectoryText(ctx, t)),
  );
  const md = [
    '# Improve this agent harness',
    'The working copy is the harness folder (your current directory). Edit it in place so that it scores higher on tasks like the ones below. Make general improvements (prompting, answer extraction, retries, control flow); a change that contains task inputs, answers or ids, or routes on them, is rejected, and a held-out set of tasks you never see decides in the end.',
    '',
    `## Scores of this harness (train split, ${s?.tasks ?? 0} tasks × ${s?.attempts ?? 0} attempts)`,
    `mean reward ${s?.mean_reward?.toFixed(3) ?? '—'} (95 % CI ${s?.ci_low?.toFixed(3) ?? '—'}–${s?.ci_high?.toFixed(3) ?? '—'}), pass@1 ${s?.pass_at_1?.toFixed(3) ?? '—'}, policy tokens per task ${s?.policy_tokens_per_task?.toFixed(0) ?? '—'}, calls per task ${s?.calls_per_task?.toFixed(2) ?? '—'}`,
    ...Object.entries(s?.failures ?? {}).map(([r, n]) => `- failed ${n} ×: ${r}`),
    '',
    '## Edit budget',
    budget === false
      ? 'none'
      : `at most ${budget.files} files, ${budget.hunks} hunks and ${budget.lines} changed lines (added + removed); a larger change is rejected`,
    '',
    '## Failing trajectories',
    ...failing,
    '',
    '## Best trajectories',
    ...best,
    '',
    '## Lineage (earlier edits that led here)',
    ...(lineage.length
      ? lineage.map(
          (c) =>
            `### ${c.hash} (generation ${c.generation}, train ${c.train_reward?.toFixed(3) ?? '—'})\n\`\`\`diff\n${clip(unifiedDiff(c.patch), 3000)}\`\`\``,
        )
      : ['(this is the starting harness)']),
    ...(siblings.length
      ? [
          '',
          '## Other edits tried on this harness',
          ...siblings.map(
            (c) =>
              `- ${c.hash}: ${c.status}${Object.entries(c.verdicts)
                .filter(([, v]) => v.verdict === 'reject')
                .map(([k, v]) => ` (${k}: ${v.reason})`)
                .join('')}`,
          ),
        ]
      : []),
  ].join('\n');
  return {
    parent: parent.hash,
    proposal,
    train: s,
    budget,
    lineage: lineage.map((c) => ({
      hash: c.hash,
      stats: c.stats,
      train_reward: c.train_reward,
      status: c.status,
    })),
    markdown: md,
  };
}

/** Relative argv entries that name files in the config folder become absolute (the proposer runs elsewhere). */
export function resolveArgv(argv: string[], baseDir: string | null): string[] {
  return argv.map((a) =>
    baseDir && !isAbsolute(a) && /[./]/.test(a) && existsSync(resolve(baseDir, a)) ? resolve(baseDir, a) : a,
  );
}

export async function runProposer(
  ctx: DaemonContext,
  o: {
    argv: string[];
    workdir: string;
    briefDir: string;
    brief: Brief;
    upstream: EvolveConfig['proposer_upstream'];
    name: string;
    timeoutMs: number;
    signal: AbortSignal;
  },
): Promise<{ exit_code: number | null; seconds: number; recording_id: string | null; log: string }> {
  mkdirSync(o.briefDir, { recursive: true });
  const md = join(o.briefDir, 'brief.md');
  const js = join(o.briefDir, 'brief.json');
  writeFileSync(md, o.brief.markdown);
  writeFileSync(js, JSON.stringify({ ...o.brief, markdown: undefined }, null, 2));
  // Scoped: a recording a person has running (VS Code's) keeps recording while the proposer runs.
  const recording = await ctx.store.createRecording({ name: o.name, upstream: o.upstream, scoped: true });
  const base = ctx.baseUrl();
  const env = {
    ...process.env,
    ...terminalEnv({ openaiBaseUrl: `${base}/v1`, anthropicBaseUrl: base, key: recording.key }),
    HARNESS_RL_BRIEF: md,
    HARNESS_RL_BRIEF_JSON: js,
    HARNESS_RL_WORKDIR: o.workdir,
  };
  const controller = new AbortController();
  const stop = () => controller.abort();
  o.signal.addEventListener('abort', stop, { once: true });
  const timer = setTimeout(stop, o.timeoutMs);
  const started = Date.now();
  try {
    const r = await runProcess(o.argv, { cwd: o.workdir, env, signal: controller.signal });
    return {
      exit_code: r.code,
      seconds: (Date.now() - started) / 1000,
      recording_id: recording.id,
      log: clip(`${r.stdout.slice(-2000)}${r.stderr ? `\n${r.stderr.slice(-2000)}` : ''}`, 4000),
    };
  } finally {
    clearTimeout(timer);
    o.signal.removeEventListener('abort', stop);
    await ctx.store.stopRecording(recording.id).catch(() => {});
  }
}
