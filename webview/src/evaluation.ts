// Evaluation pages: one evaluation (its summary with the bootstrap interval, then a row per task:
// rewards over the k attempts, pass@1, pass@k, mean with its interval, policy tokens, calls,
// failures), or the comparison of two (comparison.ts). Every number comes from the daemon's record.
import './evaluation.css';
import { bootstrapMean } from '../../daemon/eval/stats';
import type { EvalTaskResult, Evaluation, EvaluationProgress } from '../../daemon/protocol/evaluation';
import { renderComparison } from './comparison';
import { clear, h } from './dom';
import { errorPage } from './errorPage';
import { type EvaluationRef, evaluationLabel, interval, seconds, tokens } from './evalFormat';
import { count, formatNumber } from './format';
import { type EvaluationState, type FromWebview, ToEvaluation, type VsCodeApi } from './protocol';
import { startedAt } from './runLabels';

declare function acquireVsCodeApi(): VsCodeApi<EvaluationState>;
const vscode = acquireVsCodeApi();
const post = (m: FromWebview) => vscode.postMessage(m);
const root = h('div', { id: 'root' });
document.body.append(root);

/** The last progress of the running evaluation shown (a reload of the page shows it again). */
let progress: EvaluationProgress | null = null;

window.addEventListener('message', (ev: MessageEvent) => {
  const parsed = ToEvaluation.safeParse(ev.data);
  if (!parsed.success) {
    clear(root);
    root.append(h('p', { class: 'error', role: 'alert' }, `Cannot show this: ${parsed.error.message}`));
    return;
  }
  const m = parsed.data;
  if (m.type === 'progress') {
    progress = m.progress;
    showProgress(progress);
    return;
  }
  clear(root);
  if (m.type === 'error') {
    root.append(...errorPage(m.message, m.daemon_stopped, post));
    return;
  }
  if (m.type === 'comparison') {
    vscode.setState({ a: m.a.id, b: m.b.id });
    root.append(...renderComparison(m.comparison, m.a, m.b, post));
    return;
  }
  vscode.setState({ evaluation_id: m.evaluation.id });
  root.append(...renderEvaluation(m.evaluation, m.previous, post));
  if (progress?.evaluation_id === m.evaluation.id) showProgress(progress);
});
post({ type: 'ready' });

const n = (x: number | null | undefined) => formatNumber(x);

/** While it runs: its attempts finished of all, with failed, running, queued and retried ones. */
function showProgress(p: EvaluationProgress) {
  const line = document.getElementById('eval-progress');
  if (!line) return;
  clear(line);
  const parts = [`${n(p.finished)} of ${count(p.total, 'attempt')} finished`];
  if (p.failed) parts.push(`${n(p.failed)} failed`);
  if (p.running) parts.push(`${n(p.running)} running`);
  if (p.queued) parts.push(`${n(p.queued)} queued`);
  if (p.retried) parts.push(`${count(p.retried, 'retry', 'retries')} after infrastructure failures`);
  line.append(h('progress', { max: p.total, value: p.finished }), h('span', {}, parts.join(' · ')));
}

function renderEvaluation(e: Evaluation, previous: EvaluationRef | null, send: typeof post): HTMLElement[] {
  const s = e.summary;
  const header = h(
    'header',
    { class: 'bar' },
    h('h1', {}, `Evaluation ${e.name}`),
    h('span', { class: 'badge', id: 'status' }, e.status),
    h('span', {}, `${e.split} split`),
    h('span', {}, `${count(e.attempts, 'attempt')} per task`),
    h('span', {}, `model v${e.model_version ?? '—'}`),
    h('span', { class: 'muted' }, `seed ${e.seed} · ${startedAt(e.created_at)}`),
    previous && e.status === 'finished'
      ? h(
          'button',
          {
            id: 'compare-previous',
            title: `${evaluationLabel(previous)} (${previous.id})`,
            onclick: () => send({ type: 'compareEvaluations', a: previous.id, b: e.id }),
          },
          'Compare with previous',
        )
      : null,
    h('button', { onclick: () => send({ type: 'refresh' }) }, 'Refresh'),
  );
  const out: HTMLElement[] = [header];
  if (e.error) out.push(h('p', { class: 'error', role: 'alert' }, e.error));
  if (e.harness_dir) out.push(h('p', { class: 'muted' }, `harness ${e.harness_dir}`));
  if (!s || !e.tasks) {
    out.push(
      h(
        'p',
        { id: 'pending' },
        e.status === 'running'
          ? 'Evaluating… the figures show here when every task is scored.'
          : 'This evaluation has no figures.',
      ),
    );
    if (e.status === 'running') out.push(h('p', { id: 'eval-progress', class: 'muted' }));
    return out;
  }
  out.push(h('h2', {}, 'Summary'), summaryTable(e, s), h('h2', {}, `Tasks (${e.tasks.length})`));
  out.push(tasksTable(e, s.pass_threshold, send));
  return out;
}

function summaryTable(e: Evaluation, s: NonNullable<Evaluation['summary']>): HTMLElement {
  const failures = Object.entries(s.failures).sort((a, b) => b[1] - a[1]);
  const row = (key: string, label: string, ...value: (Node | string)[]) =>
    h('tr', { 'data-key': key }, h('td', { class: 'muted' }, label), h('td', {}, ...value));
  return h(
    'table',
    { class: 'kv', id: 'summary' },
    row(
      'mean_reward',
      'mean reward',
      h('strong', {}, n(s.mean_reward)),
      ` 95 % CI ${interval(s.ci_low, s.ci_high)} `,
      h('span', { class: 'muted' }, s.ci),
    ),
    row('pass_at_1', 'pass@1', n(s.pass_at_1)),
    row(
      'pass_at_k',
      `pass@${e.attempts}`,
      n(s.pass_at_k),
      h('span', { class: 'muted' }, ` (pass: reward ≥ ${n(s.pass_threshold)})`),
    ),
    row(
      'policy_tokens',
      'policy tokens per task',
      `${tokens(s.policy_tokens_per_task)} `,
      h(
        'span',
        { class: 'muted' },
        `(prompt ${tokens(s.prompt_tokens_per_task)} + completion ${tokens(s.completion_tokens_per_task)}, per attempt)`,
      ),
    ),
    row('calls', 'llm calls per task', n(s.calls_per_task)),
    row('wall', 'wall time', seconds(s.wall_s)),
    row(
      'attempts',
      'attempts',
      `${s.scored} of ${s.tasks * s.attempts} scored · ${count(s.unscored_tasks, 'task')} unscored · ${count(s.infrastructure_retries, 'infrastructure retry', 'infrastructure retries')}`,
    ),
    row(
      'failures',
      'failures',
      failures.length === 0
        ? 'none'
        : h('ul', { class: 'plain' }, ...failures.map(([reason, k]) => h('li', {}, `${k} × ${reason}`))),
    ),
  );
}

function tasksTable(e: Evaluation, threshold: number, send: typeof post): HTMLElement {
  const head = [
    'task',
    'rewards',
    'pass@1',
    `pass@${e.attempts}`,
    'mean',
    '95 % CI',
    'policy tokens',
    'calls',
  ];
  return h(
    'table',
    { class: 'grid', id: 'tasks' },
    h(
      'thead',
      {},
      h('tr', {}, ...head.map((c, i) => h('th', { class: i >= 2 ? 'num' : '' }, c)), h('th', {}, 'failures')),
    ),
    h('tbody', {}, ...(e.tasks ?? []).map((t) => taskRow(t, e.seed, threshold, send))),
  );
}

function taskRow(t: EvalTaskResult, seed: number, threshold: number, send: typeof post): HTMLElement {
  // the task's own interval: the same bootstrap as the summary's, over its attempts
  const ci = t.rewards.length >= 2 ? bootstrapMean(t.rewards, seed) : null;
  const chips = t.rewards.map((r, i) => {
    const rollout = t.rollouts[i];
    const attrs = {
      class: `reward ${r >= threshold ? 'pass' : 'fail'}`,
      title: rollout ? `attempt ${i + 1}: open its trajectory` : `attempt ${i + 1}`,
    };
    return rollout
      ? h('button', { ...attrs, onclick: () => send({ type: 'openRollout', rollout_id: rollout }) }, n(r))
      : h('span', attrs, n(r));
  });
  const failures = new Map<string, number>();
  for (const f of t.failures) {
    const key = `${f.reason} (${f.kind})`;
    failures.set(key, (failures.get(key) ?? 0) + 1);
  }
  return h(
    'tr',
    { 'data-task': t.key },
    h('td', { class: 'key' }, t.key),
    h('td', { class: 'rewards' }, ...chips),
    h('td', { class: 'num' }, n(t.pass_at_1)),
    h('td', { class: 'num' }, n(t.pass_at_k)),
    h('td', { class: 'num mean' }, n(t.mean_reward)),
    h('td', { class: 'num ci' }, ci ? interval(ci.low, ci.high) : '—'),
    h('td', { class: 'num tokens' }, tokens(t.prompt_tokens + t.completion_tokens)),
    h('td', { class: 'num calls' }, n(t.calls)),
    h('td', { class: 'failures' }, [...failures].map(([k, c]) => `${c} × ${k}`).join('; ')),
  );
}
