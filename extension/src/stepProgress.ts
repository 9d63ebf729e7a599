// Follows the rollouts of a run's current step for the dashboard: loads the step's groups and their
// rollouts once, then applies rollout events; a group of a newer step (or an unknown one) reloads.
import type { Group, Rollout, RolloutStatus } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import { countStep } from '../../webview/src/progress';
import type { StepProgress } from '../../webview/src/protocol';
import type { DaemonClient } from './client';
import { Throttle } from './throttle';

export class StepProgressTracker {
  private step = -1;
  private readonly groups = new Set<string>();
  private readonly statuses = new Map<string, RolloutStatus>();
  private readonly reload = new Throttle(() => void this.load(), 500);
  private readonly post = new Throttle(() => this.emit(), 150);

  constructor(
    private readonly client: () => DaemonClient | undefined,
    private readonly runId: string,
    private readonly onProgress: (p: StepProgress) => void,
  ) {}

  /** The newest step's groups (the first page lists the newest first) and their rollouts. */
  async load(): Promise<void> {
    const client = this.client();
    if (!client) return;
    try {
      const page = await client.runGroups(this.runId, { limit: 50 });
      const step = Math.max(-1, ...page.items.map((g) => g.step));
      const current = page.items.filter((g) => g.step === step);
      const rollouts = await Promise.all(
        current.map((g) => client.listRollouts({ group_id: g.id, limit: 1000 }).then((p) => p.items)),
      );
      this.step = step;
      this.groups.clear();
      this.statuses.clear();
      for (const g of current) this.groups.add(g.id);
      for (const r of rollouts.flat()) this.statuses.set(r.id, r.status);
      this.emit();
    } catch {
      // the dashboard says what failed when it loads; progress just waits for the next event
    }
  }

  onEvent(e: DaemonEvent): void {
    if (e.type === 'group' && e.group.run_id === this.runId) this.onGroup(e.group);
    if (e.type === 'rollout' && e.rollout.run_id === this.runId) this.onRollout(e.rollout);
  }

  private onGroup(g: Group) {
    if (g.step > this.step || (g.step === this.step && !this.groups.has(g.id))) this.reload.schedule();
  }

  private onRollout(r: Rollout) {
    if (!r.group_id || !this.groups.has(r.group_id)) {
      this.reload.schedule();
      return;
    }
    this.statuses.set(r.id, r.status);
    this.post.schedule();
  }

  private emit() {
    if (this.step < 0) return;
    this.onProgress(countStep(this.runId, this.step, [...this.statuses.values()]));
  }

  dispose(): void {
    this.reload.dispose();
    this.post.dispose();
  }
}
