// "Export samples…": pages through the succeeded rollouts of the groups a run's steps trained on (closed
// complete: not those dropped by schedule.dynamic_sampling or as incomplete) and builds their training
// samples with the daemon's samples stage and the run's algorithm settings (as the trainer gets them).
// The file has the offline CLI's format (spec/samples.md): one SampleJson per line, then a summary line.
import type { CancellationToken } from 'vscode';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { Run } from '../../daemon/protocol/entities';
import {
  buildSamples,
  runBuildOptions,
  type TrajectoryArrays,
  toSampleJson,
  trajectoryFromCalls,
} from '../../daemon/samples/index';
import type { DaemonClient } from './client';

/**
 * The trajectory of a rollout: its calls with token ids, in order (pure). Imported calls (token_source
 * "import") only with `imported`: the samples stage leaves them out otherwise.
 */
export function trajectoryOf(d: RolloutDetail, options: { imported?: boolean } = {}): TrajectoryArrays {
  return trajectoryFromCalls(
    d,
    [...d.llm_calls].sort((a, b) => a.seq - b.seq),
    options,
  );
}

/** Samples JSONL (plus the summary line) for the given rollouts of a run (pure). */
export function samplesJsonl(
  runConfig: unknown,
  rollouts: RolloutDetail[],
  options: { imported?: boolean } = {},
): { text: string; samples: number } {
  const built = buildSamples(
    rollouts.map((d) => trajectoryOf(d, options)),
    runBuildOptions(runConfig),
  );
  const { trajectories, samples, prefix_breaks, excluded, mask_tokens } = built.summary;
  const lines = built.samples.map((s) => JSON.stringify(toSampleJson(s)));
  lines.push(JSON.stringify({ summary: { trajectories, samples, prefix_breaks, excluded, mask_tokens } }));
  return { text: `${lines.join('\n')}\n`, samples: built.samples.length };
}

export async function exportSamples(
  client: DaemonClient,
  run: Run,
  onProgress: (rollouts: number) => void,
  token?: CancellationToken,
): Promise<{ text: string; lines: number }> {
  const trained = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await client.runGroups(run.id, { cursor, limit: 1000 });
    for (const g of page.items) if (g.status === 'complete') trained.add(g.id);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  const details: RolloutDetail[] = [];
  do {
    const page = await client.listRollouts({ run_id: run.id, status: 'succeeded', cursor, limit: 200 });
    for (const r of page.items) {
      if (token?.isCancellationRequested) throw new Error('cancelled');
      if (r.group_id === null || !trained.has(r.group_id)) continue;
      details.push(await client.getRollout(r.id));
      onProgress(details.length);
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  const { text, samples } = samplesJsonl(run.config, details);
  return { text, lines: samples };
}
