// The evaluation webview panel: one evaluation's page, or the comparison of two
// (GET /api/evaluations/compare); restored after a reload by its serializer. Live from the events: an
// `evaluation` event of what it shows reads the page again, `evaluation_progress` updates its attempts;
// no polling (a reconnect of the event socket reads it again once).
import type * as vscode from 'vscode';
import { attemptProgress } from '../../daemon/eval/progress';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import type { DaemonEvent } from '../../daemon/protocol/events';
import { EvaluationState, type ToEvaluation } from '../../webview/src/protocol';
import { type DaemonClient, errorText } from './client';
import type { Ctx } from './ctx';
import { evaluationRunName } from './labels';
import { DAEMON_STOPPED, Panel, panelSerializer, showPanel, webviewHtml } from './panels';
import { Throttle } from './throttle';

export const EVALUATION_VIEW = 'harnessRl.evaluation';

const keyOf = (t: EvaluationState) => ('evaluation_id' in t ? t.evaluation_id : `${t.a}..${t.b}`);
const idsOf = (t: EvaluationState) => ('evaluation_id' in t ? [t.evaluation_id] : [t.a, t.b]);

export class EvaluationPanel extends Panel {
  private static readonly open = new Map<string, EvaluationPanel>();
  private readonly reread = new Throttle(() => void this.load(), 150);

  static show(ctx: Ctx, target: EvaluationState): EvaluationPanel {
    const existing = EvaluationPanel.open.get(keyOf(target));
    const shown = showPanel(
      ctx,
      existing,
      EVALUATION_VIEW,
      'evaluation_id' in target ? 'Evaluation' : 'Compare Evaluations',
      (panel) => new EvaluationPanel(ctx, panel, target),
    );
    if (existing) void existing.load();
    return shown;
  }

  static serializer(ctx: Ctx): vscode.WebviewPanelSerializer {
    return panelSerializer(ctx, EvaluationState, (panel, state) => new EvaluationPanel(ctx, panel, state));
  }

  private constructor(
    ctx: Ctx,
    panel: vscode.WebviewPanel,
    readonly target: EvaluationState,
  ) {
    super(ctx, panel);
    EvaluationPanel.open.set(keyOf(target), this);
    panel.webview.html = webviewHtml(panel.webview, ctx.extensionUri, 'evaluation', panel.title);
    this.disposables.push(
      ctx.onEvent((e) => this.onEvent(e)),
      ctx.onEventsReconnected(() => this.reread.schedule()),
    );
  }

  private onEvent(e: DaemonEvent) {
    const ids = idsOf(this.target);
    if (e.type === 'evaluation' && ids.includes(e.evaluation.id)) this.reread.schedule();
    if (
      e.type === 'evaluation_progress' &&
      'evaluation_id' in this.target &&
      ids.includes(e.progress.evaluation_id)
    )
      this.post({ type: 'progress', progress: e.progress });
  }

  private post(m: ToEvaluation) {
    void this.panel.webview.postMessage(m);
  }

  async load(): Promise<void> {
    const client = this.ctx.client;
    if (!client) {
      this.post({ type: 'error', message: DAEMON_STOPPED, daemon_stopped: true });
      return;
    }
    const t = this.target;
    try {
      if ('evaluation_id' in t) {
        const e = await client.getEvaluation(t.evaluation_id);
        this.panel.title = `Evaluation ${evaluationRunName(e.name)}`;
        this.post({ type: 'evaluation', evaluation: e, previous: await previousOf(this.ctx, e) });
        if (e.status === 'running') {
          const progress = await progressOf(client, e).catch(() => null);
          if (progress) this.post({ type: 'progress', progress });
        }
        return;
      }
      const [a, b] = await Promise.all([client.getEvaluation(t.a), client.getEvaluation(t.b)]);
      this.panel.title = `Compare ${evaluationRunName(a.name)} ↔ ${evaluationRunName(b.name)}`;
      const running = a.status === 'running' || b.status === 'running';
      if (a.status !== 'finished' || b.status !== 'finished') {
        const not = [a, b].find((e) => e.status !== 'finished')!;
        this.post({
          type: 'error',
          message: `Evaluation ${not.name} (${not.id}) is ${not.status}: a comparison needs two finished evaluations.${running ? ' This page reloads when it finishes.' : ''}`,
        });
        return;
      }
      this.post({ type: 'comparison', comparison: await client.compareEvaluations(a.id, b.id), a, b });
    } catch (err) {
      const what =
        'evaluation_id' in t ? `evaluation ${t.evaluation_id}` : `the comparison of ${t.a} and ${t.b}`;
      this.post({ type: 'error', message: `Could not load ${what}: ${errorText(err)}` });
    }
  }

  override dispose(): void {
    this.reread.dispose();
    const key = keyOf(this.target);
    if (EvaluationPanel.open.get(key) === this) EvaluationPanel.open.delete(key);
    super.dispose();
  }
}

/** The newest finished evaluation of the same name made before this one (what it compares with). */
async function previousOf(ctx: Ctx, e: Evaluation) {
  const list = await ctx.client?.listEvaluations().catch(() => null);
  const prev = list?.items.find(
    (x) => x.id !== e.id && x.name === e.name && x.status === 'finished' && x.created_at < e.created_at,
  );
  return prev ? { id: prev.id, name: prev.name, status: prev.status, created_at: prev.created_at } : null;
}

/**
 * A running evaluation's attempts as the page opens (later ones come as events): its run's groups (one
 * per task, `attempts` in size) and rollouts, counted as the daemon counts them.
 */
async function progressOf(client: DaemonClient, e: Evaluation) {
  const [groups, rollouts] = await Promise.all([
    client.runGroups(e.run_id, { limit: 1000 }),
    client.listRollouts({ run_id: e.run_id, limit: 1000 }),
  ]);
  const slots = groups.items.reduce((n, g) => n + g.size, 0);
  const statuses = rollouts.items.map((r) => r.status);
  return attemptProgress({ evaluation_id: e.id, run_id: e.run_id }, slots, statuses);
}
