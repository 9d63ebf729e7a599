// Training samples for the trajectory view, built by the daemon's own samples stage (buildSamples)
// with the run's algorithm settings and the group's rewards, so masks and advantages are exactly
// what the trainer sees. Token texts come from the reference engine's tokenizer when the calls were
// served by it (other tokenizers stay ids).
import type * as vscode from 'vscode';
import { decode, tokenString } from '../../daemon/engine/tokenizer';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { PrefixBreak, Rollout } from '../../daemon/protocol/entities';
import type { SampleJson } from '../../daemon/protocol/samples';
import { algorithmOf, buildSamples, toSampleJson, trajectoryFromCalls } from '../../daemon/samples/index';
import type { DaemonClient } from './client';
import { errorText } from './client';

export interface ViewSamples {
  samples: SampleJson[] | null;
  token_texts: string[][] | null;
  /** the rollout's prefix breaks as the samples stage diagnoses them (with text where decodable) */
  prefix_breaks: PrefixBreak[] | null;
}

export async function samplesFor(
  client: DaemonClient,
  rollout: RolloutDetail,
  log: vscode.OutputChannel,
): Promise<ViewSamples> {
  try {
    const run = rollout.run_id ? await client.getRun(rollout.run_id).catch(() => null) : null;
    const siblings = rollout.group_id ? (await client.getGroup(rollout.group_id)).rollouts : [];
    return viewSamples(rollout, run?.config ?? null, siblings);
  } catch (err) {
    log.appendLine(`samples for rollout ${rollout.id}: ${errorText(err)}`);
    return { samples: null, token_texts: null, prefix_breaks: null };
  }
}

/** The rollout's samples as its run's samples stage builds them (siblings give the group's rewards). Pure. */
export function viewSamples(
  rollout: RolloutDetail,
  runConfig: unknown,
  siblings: Pick<Rollout, 'id' | 'group_id' | 'reward'>[],
): ViewSamples {
  const algo = algorithmOf(runConfig);
  const calls = [...rollout.llm_calls].sort((a, b) => a.seq - b.seq);
  const trajectories = [
    // a recording's view shows an imported session's tokens too (as Export Recording… writes them)
    trajectoryFromCalls(rollout, calls, { imported: rollout.kind === 'recording' }),
    ...siblings
      .filter((s) => s.id !== rollout.id)
      .map((s) => ({ rollout_id: s.id, group_id: s.group_id ?? s.id, reward: s.reward, calls: [] })),
  ];
  const reference = calls.some((c) => c.backend?.includes('reference') || c.model === 'reference');
  const built = buildSamples(trajectories, {
    decode: reference ? (ids) => decode(ids) : undefined,
    merge: algo.merge,
    advantage: algo.advantage,
    loss_agg: algo.loss_agg,
    // the view shows whole samples; length limits are reported in the daemon's rollout stats
    max_len: algo.max_len ?? algo.max_prompt_tokens + algo.max_response_tokens,
  });
  const samples = built.samples.filter((s) => s.rollout_id === rollout.id).map(toSampleJson);
  const token_texts = reference ? samples.map((s) => s.input_ids.map(tokenString)) : null;
  const prefix_breaks = built.rollouts.get(rollout.id)?.prefix_breaks ?? null;
  return { samples: samples.length ? samples : null, token_texts, prefix_breaks };
}
