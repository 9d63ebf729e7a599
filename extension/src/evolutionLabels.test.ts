import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  candidateEvaluationName,
  type Evolution,
  evolutionRecordingName,
  parseCandidateEvaluationName,
  parseEvolutionRecordingName,
} from '../../daemon/protocol/evolution';
import { evaluationLabel } from '../../webview/src/evalFormat';
import { evolutionRow } from './evolutionLabels';
import { evaluationRunName, recordingName } from './labels';

const evolution = (status: Evolution['status'], error: string | null = null): Evolution => ({
  id: 'evo_1',
  name: 'evolve math',
  status,
  error,
  harness_dir: '/w/harness',
  created_at: '2026-12-07T00:00:00.000Z',
  finished_at: null,
  result: null,
});

describe('an evolution row in the Evolution view', () => {
  it('an interrupted evolution says so and offers Resume Evolution, not Stop', () => {
    const row = evolutionRow(evolution('interrupted', 'the daemon stopped; harness-rl evolve resume evo_1'));
    expect(row.description).toBe('interrupted');
    expect(row.contextValue).toBe('evolution.interrupted');
    expect(row.icon).toBe('debug-pause');
    expect(row.tooltip).toContain('evolve resume evo_1');
    expect(row.tooltip).toContain('Resume Evolution goes on');
  });

  it('a running evolution spins and offers Stop Evolution; a finished one offers neither', () => {
    const running = evolutionRow(evolution('running'));
    expect(running.contextValue).toBe('evolution.running');
    expect(running.icon).toBe('loading~spin');
    expect(running.tooltip).not.toContain('Resume');
    const done = evolutionRow({
      ...evolution('finished'),
      result: { held_out: { root: 0.25, best: 0.5 } } as Evolution['result'],
    });
    expect(done.contextValue).toBe('evolution.finished');
    expect(done.description).toBe('finished · held-out 0.250 → 0.500');
  });
});

/** Whether a menu `when` clause (`view == … && viewItem == X` or `viewItem =~ /re/`) matches a row. */
function shows(when: string, contextValue: string): boolean {
  const eq = /viewItem == ([\w.]+)/.exec(when);
  if (eq) return eq[1] === contextValue;
  const re = /viewItem =~ \/(.+)\/$/.exec(when);
  return re ? new RegExp(re[1]!).test(contextValue) : false;
}

describe("the Evolution view's evolution actions (package.json menus)", () => {
  const menus = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).contributes
    .menus['view/item/context'] as { command: string; when: string; group: string }[];
  const statuses: Evolution['status'][] = ['running', 'finished', 'failed', 'stopped', 'interrupted'];
  const offered = (command: string, inline: boolean) =>
    statuses.filter((s) =>
      menus.some(
        (m) =>
          m.command === command &&
          m.group.startsWith('inline') === inline &&
          shows(m.when, evolutionRow(evolution(s)).contextValue),
      ),
    );

  it('Resume Evolution is shown, inline and in the context menu, on interrupted and stopped ones only', () => {
    for (const inline of [true, false])
      expect(offered('harnessRl.resumeEvolution', inline)).toEqual(['stopped', 'interrupted']);
  });

  it('Stop Evolution is shown, inline and in the context menu, on running ones only', () => {
    for (const inline of [true, false])
      expect(offered('harnessRl.stopEvolution', inline)).toEqual(['running']);
  });
});

describe("a candidate's evaluation run in the Runs view", () => {
  it('reads as the candidate and split its stored name holds; other names stay as they are', () => {
    const stored = candidateEvaluationName('evo_01m98ax818130m94k2', 'd43886f0b2c4e1a9', 'test');
    expect(parseCandidateEvaluationName(stored)).toEqual({
      evolution: 'evo_01m98ax818130m94k2',
      hash: 'd43886f0b2c4e1a9',
      split: 'test',
    });
    expect(evaluationRunName(stored)).toBe('candidate d43886f0b2 test');
    for (const name of ['eval math test', 'evolve evo_1 d43886f0 g1 proposer', 'evolve evo_1 nothex train'])
      expect(evaluationRunName(name)).toBe(name);
    expect(parseCandidateEvaluationName('evolve evo_1 d43886f0 holdout')).toBeNull();
  });

  it('the evaluation and comparison pages name it the same way, with when it ran', () => {
    const created_at = '2026-12-07T10:05:00.000Z';
    const stored = candidateEvaluationName('evo_01m98ax818130m94k2', 'd43886f0b2c4e1a9', 'train');
    expect(evaluationLabel({ id: 'ev_1', name: stored, created_at })).toMatch(
      /^candidate d43886f0b2 train · Dec 7 \d\d:05$/,
    );
    expect(evaluationLabel({ id: 'ev_2', name: 'eval math test', created_at })).toMatch(
      /^eval math test · Dec 7 /,
    );
  });

  it("a proposer's or critic's recording reads as its role and generation", () => {
    for (const role of ['proposer', 'critic'] as const) {
      const stored = evolutionRecordingName('evo_01m98cbped79603h', 3, role);
      expect(parseEvolutionRecordingName(stored)).toEqual({
        evolution: 'evo_01m98cbped79603h',
        generation: 3,
        role,
      });
      expect(recordingName(stored)).toBe(`${role} · generation 3`);
    }
    for (const name of ['vscode test session', 'evolve evo_1 g1 judge', 'claude-code: Fix the cart'])
      expect(recordingName(name)).toBe(name);
  });
});
