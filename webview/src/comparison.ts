// The comparison page of two evaluations (A the baseline, B the other): the mean of the paired
// per-task differences (B − A) with its bootstrap interval, the sign test and its p-value, how many
// tasks B does better, worse or equal on, policy tokens side by side, and a row per paired task.
import type { Comparison, Evaluation } from '../../daemon/protocol/evaluation';
import { h } from './dom';
import { evaluationLabel, interval, percent, tokens } from './evalFormat';
import { formatNumber, signed } from './format';
import type { FromWebview } from './protocol';

const n = (x: number | null | undefined) => formatNumber(x);
const side = (x: number) => (x > 0 ? 'better' : x < 0 ? 'worse' : 'equal');

export function renderComparison(
  c: Comparison,
  a: Evaluation,
  b: Evaluation,
  send: (m: FromWebview) => void,
): HTMLElement[] {
  const open = (e: Evaluation, which: string) =>
    h(
      'button',
      { id: `open-${which}`, onclick: () => send({ type: 'openEvaluation', evaluation_id: e.id }) },
      `Open ${which.toUpperCase()}`,
    );
  const header = h(
    'header',
    { class: 'bar' },
    h('h1', {}, 'Compare evaluations'),
    open(a, 'a'),
    open(b, 'b'),
    h('button', { onclick: () => send({ type: 'refresh' }) }, 'Refresh'),
  );
  return [
    header,
    verdictOf(c),
    factsOf(c, a, b),
    h('h2', {}, `Per task (${c.per_task.length})`),
    perTaskTable(c),
  ];
}

/** B − A with its interval, and whether the difference is significant. */
function verdictOf(c: Comparison): HTMLElement {
  const diff = c.mean_diff;
  return h(
    'p',
    { class: 'verdict', id: 'verdict' },
    'B − A mean reward ',
    h('strong', { class: diff === null ? '' : side(diff) }, diff === null ? '—' : signed(diff)),
    ` 95 % CI ${interval(c.ci_low, c.ci_high)}: `,
    h(
      'strong',
      {
        id: 'significance',
        class: c.significant ? (diff !== null && diff > 0 ? 'better' : 'worse') : 'equal',
      },
      c.significant ? 'significant' : 'not significant',
    ),
  );
}

/** The two evaluations, how they pair, the sign test and the policy tokens. */
function factsOf(c: Comparison, a: Evaluation, b: Evaluation): HTMLElement {
  const s = c.sign_test;
  const row = (key: string, label: string, ...value: (Node | string)[]) =>
    h('tr', { 'data-key': key }, h('td', { class: 'muted' }, label), h('td', {}, ...value));
  return h(
    'table',
    { class: 'kv', id: 'facts' },
    row('a', 'A', `${evaluationLabel(a)} (${a.split}, ${a.attempts}×) `, h('span', { class: 'muted' }, a.id)),
    row('b', 'B', `${evaluationLabel(b)} (${b.split}, ${b.attempts}×) `, h('span', { class: 'muted' }, b.id)),
    row(
      'paired',
      'paired tasks',
      `${c.paired_tasks} (A scored ${scored(a)}, B ${scored(b)}; paired by task id)`,
    ),
    row(
      'counts',
      'per task',
      h(
        'span',
        { class: 'counts' },
        h('span', { class: 'better', id: 'wins' }, `B better on ${s.wins}`),
        h('span', { class: 'worse', id: 'losses' }, `worse on ${s.losses}`),
        h('span', { class: 'equal', id: 'ties' }, `equal on ${s.ties}`),
      ),
    ),
    row('sign_test', 'sign test', `p = ${formatNumber(s.p, 3)} (exact, two-sided, ties dropped)`),
    row('method', 'test', h('span', { class: 'muted' }, c.method)),
    row(
      'tokens',
      'policy tokens per task',
      `A ${tokens(c.tokens.a_per_task)} · B ${tokens(c.tokens.b_per_task)} · change ${percent(c.tokens.change)}`,
    ),
  );
}

/** A row per paired task: both rewards, the difference and the policy tokens. */
function perTaskTable(c: Comparison): HTMLElement {
  const head = ['task', 'A', 'B', 'B − A', 'A tokens', 'B tokens', 'tokens'].map((t, i) =>
    h('th', { class: i === 0 ? '' : 'num' }, t),
  );
  return h(
    'table',
    { class: 'grid', id: 'per-task' },
    h('thead', {}, h('tr', {}, ...head)),
    h(
      'tbody',
      {},
      ...c.per_task.map((t) =>
        h(
          'tr',
          { 'data-task': t.key, class: side(t.diff) },
          h('td', { class: 'key' }, t.key),
          h('td', { class: 'num' }, n(t.a)),
          h('td', { class: 'num' }, n(t.b)),
          h('td', { class: 'num diff' }, signed(t.diff)),
          h('td', { class: 'num' }, tokens(t.a_tokens)),
          h('td', { class: 'num' }, tokens(t.b_tokens)),
          h('td', { class: 'num' }, percent(t.a_tokens > 0 ? (t.b_tokens - t.a_tokens) / t.a_tokens : null)),
        ),
      ),
    ),
  );
}

function scored(e: Evaluation): string {
  return String((e.tasks ?? []).filter((t) => t.mean_reward !== null).length);
}
