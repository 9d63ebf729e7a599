// "Export samples…": pages through a run's rollouts and writes one trajectory per line in the
// samples stage's input format (spec/samples.md), ready for `harness-rl samples --input`.
import type { CancellationToken } from 'vscode';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { Run } from '../../daemon/protocol/entities';
import type { Trajectory } from '../../daemon/protocol/samples';
import type { DaemonClient } from './client';

/** The trajectory of a finished rollout: its calls with token ids, in order (pure). */
export function trajectoryOf(d: RolloutDetail): Trajectory | null {
  if (!d.group_id) return null;
  const calls = [...d.llm_calls]
    .sort((a, b) => a.seq - b.seq)
    .filter((c) => c.status === 'ok' && c.prompt_ids && c.response_ids)
    .map((c) => ({
      prompt_ids: c.prompt_ids!,
      response_ids: c.response_ids!,
      ...(c.response_logprobs ? { response_logprobs: c.response_logprobs } : {}),
    }));
  return { rollout_id: d.id, group_id: d.group_id, reward: d.reward, calls };
}

export async function exportSamples(
  client: DaemonClient,
  run: Run,
  onProgress: (rollouts: number) => void,
  token?: CancellationToken,
): Promise<{ text: string; lines: number }> {
  const lines: string[] = [];
  let cursor: string | undefined;
  let seen = 0;
  do {
    const page = await client.listRollouts({ run_id: run.id, status: 'succeeded', cursor, limit: 200 });
    for (const r of page.items) {
      if (token?.isCancellationRequested) throw new Error('cancelled');
      const t = trajectoryOf(await client.getRollout(r.id));
      if (t?.calls.length) lines.push(JSON.stringify(t));
      onProgress(++seen);
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return { text: lines.join('\n') + (lines.length ? '\n' : ''), lines: lines.length };
}
