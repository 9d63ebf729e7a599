// The evaluation webview panel: one evaluation's page (its attempts counted live from the events while
// it runs, the page reloaded every 2 s until it finishes), or the comparison of two
// (GET /api/evaluations/compare); restored after a reload by its serializer.
import type * as vscode from 'vscode';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import { EvaluationState, type ToEvaluation } from '../../webview/src/protocol';
import { errorText } from './client';
import type { Ctx } from './ctx';
import { DAEMON_STOPPED, Panel, panelSerializer, showPanel, webviewHtml } from './panels';
import { StepProgressTracker } from './stepProgress';

export const EVALUATION_VIEW = 'harnessRl.evaluation';
const POLL_MS = 2000;

const keyOf = (t: EvaluationState) => ('evaluation_id' in t ? t.evaluation_id : `${t.a}..${t.b}`);

export class EvaluationPanel extends Panel {
  private static readonly open = new Map<string, EvaluationPanel>();
  private poll: NodeJS.Timeout | undefined;
  /** A running evaluation's attempts (its run's rollouts) by status. */
  private progress: StepProgressTracker | undefined;

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
    this.disposables.push(ctx.onEvent((e) => this.progress?.onEvent(e)));
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
        this.panel.title = `Evaluation ${e.name}`;
        this.post({ type: 'evaluation', evaluation: e, previous: await previousOf(this.ctx, e) });
        this.pollWhile(e.status === 'running');
        this.followProgress(e.status === 'running' ? e.run_id : null);
        return;
      }
      const [a, b] = await Promise.all([client.getEvaluation(t.a), client.getEvaluation(t.b)]);
      this.panel.title = `Compare ${a.name} ↔ ${b.name}`;
      const running = a.status === 'running' || b.status === 'running';
      this.pollWhile(running);
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
      this.pollWhile(false);
      const what =
        'evaluation_id' in t ? `evaluation ${t.evaluation_id}` : `the comparison of ${t.a} and ${t.b}`;
      this.post({ type: 'error', message: `Could not load ${what}: ${errorText(err)}` });
    }
  }

  private followProgress(runId: string | null) {
    if (runId && !this.progress) {
      this.progress = new StepProgressTracker(
        () => this.ctx.client,
        runId,
        (progress) => this.post({ type: 'progress', progress }),
      );
    }
    if (runId) void this.progress?.load();
    else {
      this.progress?.dispose();
      this.progress = undefined;
    }
  }

  /** A running evaluation has no figures until it finishes: look again every 2 s until then. */
  private pollWhile(running: boolean) {
    if (this.poll) clearTimeout(this.poll);
    if (EvaluationPanel.open.get(keyOf(this.target)) !== this) running = false; // closed meanwhile
    this.poll = running ? setTimeout(() => void this.load(), POLL_MS) : undefined;
  }

  override dispose(): void {
    this.progress?.dispose();
    this.progress = undefined;
    if (this.poll) clearTimeout(this.poll);
    this.poll = undefined;
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
