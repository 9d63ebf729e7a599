import { describe, expect, it } from 'vitest';
import type { RunWorkers } from '../../daemon/protocol/entities';
import { describeWorkers } from './workers';

const base: RunWorkers = {
  run_id: 'run_1',
  mode: 'external',
  workers: [],
  last_seen_at: null,
  command: 'harness-rl worker --run run_1 --url http://127.0.0.1:4100 --data /d',
  error: null,
};
const seen = '2025-01-01T00:00:00.000Z';

describe("a run's workers in words", () => {
  it('an external run with no worker yet waits for one, naming the exact command', () => {
    const note = describeWorkers(base);
    expect(note).toMatchObject({ waiting: true, short: 'waiting for a worker', command: base.command });
    expect(note?.detail).toBe(`Waiting for a worker: run \`${base.command}\``);
  });

  it('says when the last worker went away', () => {
    const note = describeWorkers({ ...base, last_seen_at: seen });
    expect(note?.short).toBe('no worker');
    expect(note?.detail).toMatch(
      /^The last worker went away\. Waiting for a worker: run `harness-rl worker --run run_1/,
    );
  });

  it('has nothing to warn about while workers are attached, or while the daemon starts its own', () => {
    const attached = {
      ...base,
      workers: [{ name: 'host:1', daemon: false, last_seen: seen }],
      last_seen_at: seen,
    };
    expect(describeWorkers(attached)?.waiting).toBe(false);
    expect(describeWorkers({ ...base, mode: 'daemon' })?.waiting).toBe(false);
    expect(describeWorkers(undefined)).toBeNull();
  });

  it("warns while the daemon's own worker restarts", () => {
    const note = describeWorkers({
      ...base,
      mode: 'daemon',
      error: 'the daemon’s worker stopped; restarting',
    });
    expect(note).toMatchObject({ waiting: true, short: 'worker restarting' });
  });

  it('a Ray run names its job instead of asking for a worker command, and says how many workers run', () => {
    const ray = { address: 'http://head:8265', job_id: 'harness-rl-run_1-x', status: 'RUNNING' };
    const starting = describeWorkers({ ...base, mode: 'ray', ray });
    expect(starting).toMatchObject({ waiting: false, command: null });
    expect(starting?.detail).toBe(
      'Ray job harness-rl-run_1-x RUNNING at http://head:8265: its workers are starting.',
    );
    const two = describeWorkers({
      ...base,
      mode: 'ray',
      ray,
      workers: [
        { name: 'ray:10.0.0.2:abc:w0', daemon: false, last_seen: seen },
        { name: 'ray:10.0.0.3:def:w1', daemon: false, last_seen: seen },
      ],
      last_seen_at: seen,
    });
    expect(two?.detail).toBe(
      'Rollouts run on 2 Ray workers (Ray job harness-rl-run_1-x RUNNING at http://head:8265).',
    );
    const down = describeWorkers({
      ...base,
      mode: 'ray',
      ray,
      error: 'Ray at http://head:8265 did not answer',
    });
    expect(down).toMatchObject({ waiting: true, short: 'Ray workers not running' });
  });
});
