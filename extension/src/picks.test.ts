import { describe, expect, it } from 'vitest';
import type { Recording, Rollout, Run } from '../../daemon/protocol/entities';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import { candidateEvaluationName, evolutionRecordingName } from '../../daemon/protocol/evolution';
import { runNames, startedAt } from './labels';
import { evaluationPicks, recordingPicks, rolloutPicks, runPicks } from './picks';

const EVO = 'evo_01m98ax818130m94k2';
const HASH = 'd43886f0b2c4e1a9';
const at = (minute: number) => `2026-12-07T10:${String(minute).padStart(2, '0')}:00.000Z`;

const run = (id: string, name: string, minute = 0, kind: Run['kind'] = 'evaluation'): Run => ({
  id,
  name,
  status: 'finished',
  kind,
  config: { schedule: { steps: 0 } },
  step: 0,
  model_version: 0,
  error: null,
  created_at: at(minute),
  updated_at: at(minute),
});

const recording = (id: string, name: string, minute = 0): Recording => ({
  id,
  name,
  status: 'stopped',
  upstream: null,
  rollout_id: `ro_${id}`,
  created_at: at(minute),
  stopped_at: null,
});

describe('the run picker (Open Run Dashboard, Stop Run…)', () => {
  it("names a candidate's evaluation run as the Runs view does, its stored name in the detail", () => {
    const stored = candidateEvaluationName(EVO, HASH, 'train');
    const rows = runPicks([run('run_1', stored), run('run_2', 'math', 1, 'training')]);
    expect(rows.map((r) => r.label)).toEqual(['candidate d43886f0b2 train', 'math']);
    expect(rows[0]!.detail).toBe(`started ${startedAt(at(0))} · ${stored}`);
    expect(rows[1]!.detail).toBe(`started ${startedAt(at(1))}`);
    expect(rows[1]!.description).toBe('step 0 · finished · v0');
    expect(rows.map((r) => r.r.id)).toEqual(['run_1', 'run_2']);
  });

  it("tells apart one candidate's runs in two evolutions by when they started", () => {
    const rows = runPicks([
      run('run_1', candidateEvaluationName(EVO, HASH, 'train'), 1),
      run('run_2', candidateEvaluationName('evo_2', HASH, 'train'), 2),
    ]);
    expect(rows.map((r) => r.label)).toEqual([
      `candidate d43886f0b2 train · ${startedAt(at(1))}`,
      `candidate d43886f0b2 train · ${startedAt(at(2))}`,
    ]);
  });
});

describe('the recording picker (Rate, Export, Stop Recording…)', () => {
  it("names an evolution's proposer and critic recordings as the Recordings view does", () => {
    const proposer = evolutionRecordingName(EVO, 1, 'proposer');
    const rows = recordingPicks([
      recording('rec_1', proposer),
      recording('rec_2', evolutionRecordingName(EVO, 1, 'critic')),
      recording('rec_3', 'vscode test session', 5),
    ]);
    expect(rows.map((r) => r.label)).toEqual([
      'proposer · generation 1',
      'critic · generation 1',
      'vscode test session',
    ]);
    expect(rows[0]!.detail).toBe(`started ${startedAt(at(0))} · ${proposer}`);
    expect(rows[2]!.detail).toBe(`started ${startedAt(at(5))}`);
    expect(rows[2]!.description).toBe('stopped');
    expect(rows.map((r) => r.r.id)).toEqual(['rec_1', 'rec_2', 'rec_3']);
  });
});

describe('the evaluation picker (Open Evaluation, Compare Evaluations)', () => {
  it("names a candidate's evaluation by its candidate and split, its id in the detail", () => {
    const e = {
      id: 'ev_1',
      name: candidateEvaluationName(EVO, HASH, 'test'),
      status: 'finished',
      split: 'test',
      created_at: at(3),
      summary: null,
    } as unknown as Evaluation;
    const [row] = evaluationPicks([e, { ...e, id: 'ev_2', name: 'math' }]);
    expect(row!.label).toBe(`candidate d43886f0b2 test · ${startedAt(at(3))}`);
    expect(row!.detail).toBe('ev_1');
    expect(evaluationPicks([{ ...e, name: 'math' }])[0]!.label).toBe(`math · ${startedAt(at(3))}`);
  });
});

describe('the rollout picker (Open Trajectory)', () => {
  it('lists finished rollouts first, each group sibling told apart by its reward, run, step and id', () => {
    const base = {
      kind: 'run' as const,
      run_id: 'run_1',
      group_id: 'g1',
      task_id: 't1',
      recording_id: null,
      input: { id: 'sub-9-9' },
      attempt_count: 1,
      max_attempts: 2,
      error: null,
      stats: null,
      created_at: '2026-12-02T12:00:00.000Z',
      updated_at: '2026-12-02T12:00:00.000Z',
      started_at: null,
      finished_at: null,
      tito: null,
    };
    const rows = rolloutPicks(
      [
        { ...base, id: 'r_aaaaaa01', status: 'queued', reward: null },
        { ...base, id: 'r_aaaaaa02', status: 'succeeded', reward: 1 },
      ] as unknown as Rollout[],
      new Map([['run_1', 'math']]),
      new Map([['g1', 3]]),
    );
    expect(rows.map((r) => r.id)).toEqual(['r_aaaaaa02', 'r_aaaaaa01']);
    expect(new Set(rows.map((r) => r.label)).size).toBe(2);
    expect(rows[0].description).toBe('1 · succeeded · run math · step 3');
  });

  it("names a candidate's evaluation run as the Runs view does", () => {
    const rollout = {
      id: 'ro_1',
      kind: 'run',
      run_id: 'run_1',
      group_id: null,
      status: 'succeeded',
      reward: 1,
      attempt_count: 1,
      stats: null,
      input: { id: 't' },
      created_at: at(0),
    } as unknown as Rollout;
    const names = runNames([run('run_1', candidateEvaluationName(EVO, HASH, 'train'))]);
    expect(rolloutPicks([rollout], names)[0]!.description).toBe(
      '1 · succeeded · run candidate d43886f0b2 train',
    );
  });
});
