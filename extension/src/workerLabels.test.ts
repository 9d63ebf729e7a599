// The Nodes view's Workers rows, from GET /api/runs/:id/workers and GET /api/rollouts/:id answers
// parsed with the daemon's own schemas.
import { describe, expect, it } from 'vitest';
import { RolloutDetail } from '../../daemon/protocol/api';
import { RunWorkers } from '../../daemon/protocol/entities';
import {
  attemptOutputText,
  attemptRow,
  attemptsByWorker,
  rayWorkerPlace,
  runWorkersRow,
  showsWorkers,
} from './workerLabels';

const NOW = Date.parse('2026-12-07T01:00:00.000Z');
const at = (secondsAgo: number) => new Date(NOW - secondsAgo * 1000).toISOString();
const RUN = { id: 'run_ray1', name: 'coding-ray' };

const rayWorkers = (over: Record<string, unknown> = {}) =>
  RunWorkers.parse({
    run_id: RUN.id,
    mode: 'ray',
    ray: { address: 'http://127.0.0.1:8265', job_id: 'raysubmit_abc123', status: 'RUNNING' },
    workers: [
      { name: 'ray:10.0.0.2:5f3a9c01b2d4:w1', daemon: false, last_seen: at(3) },
      { name: 'ray:10.0.0.1:a1b2c3d4e5f6:w0', daemon: false, last_seen: at(2) },
      { name: 'ray:10.0.0.2:5f3a9c01b2d4:w10', daemon: false, last_seen: at(4) },
      { name: 'ray:10.0.0.2:5f3a9c01b2d4:w2', daemon: false, last_seen: at(70) },
    ],
    last_seen_at: at(2),
    command: 'harness-rl worker --run run_ray1',
    error: null,
    ...over,
  });

function rollout(id: string, attempts: Array<Record<string, unknown>>) {
  return RolloutDetail.parse({
    id,
    kind: 'run',
    run_id: RUN.id,
    group_id: 'grp_1',
    task_id: null,
    recording_id: null,
    input: { prompt: 'fix the bug' },
    status: 'succeeded',
    attempt_count: attempts.length,
    max_attempts: 3,
    reward: 1,
    error: null,
    stats: null,
    created_at: at(300),
    updated_at: at(10),
    started_at: at(200),
    finished_at: at(10),
    attempts: attempts.map((a, i) => ({
      id: `att_${id}_${i + 1}`,
      rollout_id: id,
      index: i + 1,
      status: 'succeeded',
      worker: 'ray:10.0.0.1:a1b2c3d4e5f6:w0',
      error: null,
      failure: null,
      started_at: at(200),
      heartbeat_at: at(100),
      finished_at: at(100),
      ...a,
    })),
    rewards: [],
    llm_calls: [],
    prefix_breaks: [],
  });
}

describe('the Nodes view Workers rows', () => {
  it('a Ray worker name gives its node ip, node id and index; other names give none', () => {
    expect(rayWorkerPlace('ray:10.0.0.2:5f3a9c01b2d4:w10')).toEqual({
      ip: '10.0.0.2',
      node: '5f3a9c01b2d4',
      index: 10,
    });
    expect(rayWorkerPlace('laptop-1234')).toBeNull();
  });

  it('a run on Ray shows its job id and status, and its workers grouped by Ray node with their count', () => {
    const row = runWorkersRow(RUN, rayWorkers(), NOW);
    expect(row.label).toBe('Workers · coding-ray');
    expect(row.description).toBe('Ray job raysubmit_abc123 · running · 4 workers · 2 nodes');
    expect(row.icon).toBe('cloud');
    expect(row.tooltip).toContain('http://127.0.0.1:8265');
    expect(row.places.map((p) => [p.label, p.description, p.workers.map((w) => w.label)])).toEqual([
      ['10.0.0.1', '1 worker', ['w0']],
      ['10.0.0.2', '3 workers', ['w1', 'w2', 'w10']],
    ]);
    expect(row.places[1]!.workers.map((w) => w.description)).toEqual([
      'seen 3s ago',
      'seen 1 min ago',
      'seen 4s ago',
    ]);
  });

  it('a Ray job that failed, or not submitted yet, says so', () => {
    const failed = runWorkersRow(
      RUN,
      rayWorkers({
        ray: { address: 'http://127.0.0.1:8265', job_id: 'raysubmit_abc123', status: 'FAILED' },
        workers: [],
        error: 'the Ray job ended: FAILED\nTraceback …',
      }),
      NOW,
    );
    expect(failed.description).toBe(
      'Ray job raysubmit_abc123 · failed · 0 workers · the Ray job ended: FAILED',
    );
    expect(failed.icon).toBe('warning');
    expect(failed.places).toEqual([]);
    const pending = runWorkersRow(
      RUN,
      rayWorkers({ ray: { address: 'http://h:8265', job_id: null, status: null }, workers: [] }),
      NOW,
    );
    expect(pending.description).toBe('Ray job (not submitted) · unknown · 0 workers');
  });

  it('attached workers show (under "attached"); a run only the daemon serves does not', () => {
    const attached = RunWorkers.parse({
      run_id: RUN.id,
      mode: 'external',
      workers: [{ name: 'laptop-42', daemon: false, last_seen: at(5) }],
      last_seen_at: at(5),
      command: 'harness-rl worker --run run_ray1',
      error: null,
    });
    expect(showsWorkers(attached)).toBe(true);
    const row = runWorkersRow(RUN, attached, NOW);
    expect(row.icon).toBe('plug');
    expect(row.places.map((p) => [p.label, p.workers.map((w) => w.label)])).toEqual([
      ['attached', ['laptop-42']],
    ]);
    const daemonOnly = RunWorkers.parse({
      ...attached,
      mode: 'daemon',
      workers: [{ name: 'daemon-1', daemon: true, last_seen: at(1) }],
    });
    expect(showsWorkers(daemonOnly)).toBe(false);
    expect(showsWorkers(rayWorkers({ workers: [] }))).toBe(true);
  });

  it('a worker lists its newest attempts first, at most 5, and an infrastructure failure shows why', () => {
    const w0 = 'ray:10.0.0.1:a1b2c3d4e5f6:w0';
    const w1 = 'ray:10.0.0.2:5f3a9c01b2d4:w1';
    const many = Array.from({ length: 7 }, (_, i) => rollout(`ro_${i}`, [{ started_at: at(100 - i) }]));
    const retried = rollout('ro_retry', [
      {
        worker: w1,
        status: 'failed',
        error: 'the Ray node died',
        failure: { kind: 'infrastructure', reason: 'node_lost' },
        started_at: at(60),
      },
      { worker: w0, started_at: at(30), status: 'running', finished_at: null },
    ]);
    const by = attemptsByWorker([...many, retried].flatMap((r) => r.attempts));
    expect(by.get(w0)!.map((a) => a.id)).toEqual([
      'att_ro_retry_2',
      'att_ro_6_1',
      'att_ro_5_1',
      'att_ro_4_1',
      'att_ro_3_1',
    ]);
    const failed = attemptRow(by.get(w1)![0]!, NOW);
    expect(failed).toMatchObject({
      attemptId: 'att_ro_retry_1',
      label: 'ro_retry #1',
      description: 'failed · infrastructure: node_lost · started 1 min ago',
      icon: 'error',
    });
    expect(failed.tooltip).toContain('the Ray node died');
  });

  it("an attempt's output document names the attempt and its worker, and says when only the tail is kept", () => {
    expect(
      attemptOutputText({ id: 'att_1', worker: 'ray:10.0.0.1:a1:w0' }, { output: 'ok\n', truncated: true }),
    ).toBe('# attempt att_1 on ray:10.0.0.1:a1:w0 (only the tail is kept)\nok\n');
    expect(attemptOutputText({ id: 'att_2' }, { output: '', truncated: false })).toBe(
      '# attempt att_2\n(no output)',
    );
  });
});
