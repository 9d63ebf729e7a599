// Evaluations and comparisons as lines a person reads (the CLI prints them; the extension shows them).
// Pure: no Node or VS Code APIs.
import type { Comparison, Evaluation } from '../protocol/evaluation';

/** A figure to `digits` decimals, or "—" where there is none (the CLI's and the Evolution view's). */
export const f = (x: number | null | undefined, digits = 3) =>
  x === null || x === undefined ? '—' : x.toFixed(digits);

/** The figures of a finished evaluation, as lines a person reads. */
export function evaluationText(e: Evaluation): string {
  const s = e.summary;
  const head = `evaluation ${e.id} (${e.name}): ${e.status}${e.error ? ` (${e.error})` : ''}`;
  if (!s) return head;
  const lines = [
    head,
    `  split ${e.split}, ${s.tasks} tasks × ${s.attempts} attempts, model version ${e.model_version ?? '—'}, seed ${e.seed}`,
    `  mean reward ${f(s.mean_reward)}  95% CI [${f(s.ci_low)}, ${f(s.ci_high)}]  (${s.ci})`,
    `  pass@1 ${f(s.pass_at_1)}  pass@${s.attempts} ${f(s.pass_at_k)}  (pass: reward ≥ ${s.pass_threshold})`,
    `  policy tokens per task ${f(s.policy_tokens_per_task, 1)} (prompt ${f(s.prompt_tokens_per_task, 1)} + completion ${f(s.completion_tokens_per_task, 1)}), calls ${f(s.calls_per_task, 2)}`,
    `  wall ${s.wall_s.toFixed(1)} s, ${s.scored} attempts scored, ${s.unscored_tasks} tasks unscored`,
  ];
  const failures = Object.entries(s.failures);
  if (failures.length) lines.push('  failures:', ...failures.map(([r, n]) => `    ${n} × ${r}`));
  return lines.join('\n');
}

export function comparisonText(c: Comparison): string {
  const lines = [
    `compare ${c.a} (A) → ${c.b} (B): ${c.paired_tasks} paired tasks`,
    `  mean reward change (B − A) ${f(c.mean_diff)}  95% CI [${f(c.ci_low)}, ${f(c.ci_high)}]  ${c.significant ? 'significant' : 'not significant'}`,
    `  sign test: B better on ${c.sign_test.wins}, worse on ${c.sign_test.losses}, tied on ${c.sign_test.ties}; p = ${c.sign_test.p.toPrecision(3)}`,
    `  policy tokens per task: A ${f(c.tokens.a_per_task, 1)}  B ${f(c.tokens.b_per_task, 1)}  change ${c.tokens.change === null ? '—' : `${(c.tokens.change * 100).toFixed(1)} %`}`,
    `  (${c.method})`,
  ];
  return lines.join('\n');
}
