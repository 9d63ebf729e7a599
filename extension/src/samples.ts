// Training samples for the trajectory view. The daemon's samples stage is the single source of
// the merge/advantage formulas; until the extension can call it, the view derives masks from
// the calls and shows advantages as unknown.
import type * as vscode from 'vscode';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { SampleJson } from '../../daemon/protocol/samples';
import type { DaemonClient } from './client';

export async function samplesFor(
  _client: DaemonClient,
  _rollout: RolloutDetail,
  _log: vscode.OutputChannel,
): Promise<SampleJson[] | null> {
  return null;
}
