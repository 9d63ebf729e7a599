// The dashboard's train/inference agreement section: pick a step (the latest by default, following new
// steps), ask the host for its scatter, draw it with the step's figures in words.
import type { RunMetrics } from '../../daemon/protocol/entities';
import type { StepValidation } from '../../daemon/protocol/training';
import { clear, h } from './dom';
import { agreementSteps } from './metrics';
import type { FromWebview } from './protocol';
import { agreementText, scatterPlot } from './scatter';

type Shown = { step: number; validation: StepValidation | null; message?: string };

export class AgreementView {
  private readonly section = h('section', { id: 'agreement' });
  private runId = '';
  private steps: number[] = [];
  private shown: Shown | null = null;
  private requested: number | null = null;

  constructor(
    private readonly post: (m: FromWebview) => void,
    /** The step picked (null: the latest). */
    private chosen: number | null,
    private readonly onChoose: (step: number | null) => void,
    private readonly color: (name: string, fallback: string) => string,
  ) {}

  /** The section for a run (re)drawn from its rows; empty and hidden until a step has the figures. */
  render(runId: string, rows: RunMetrics[]): HTMLElement {
    if (runId !== this.runId) this.shown = null;
    this.runId = runId;
    this.update(rows);
    return this.section;
  }

  /** New rows (a step finished): the picker grows, and "latest" moves to the new step. */
  update(rows: RunMetrics[]): void {
    this.steps = agreementSteps(rows);
    this.refresh();
  }

  /** Ask for the target step's scatter unless it shows or was asked for; draw what there is. */
  private refresh(): void {
    const target = this.target();
    if (target !== null && this.shown?.step !== target && this.requested !== target) {
      this.requested = target;
      this.post({ type: 'stepValidation', run_id: this.runId, step: target });
    }
    this.draw();
  }

  /** The host's answer to a stepValidation request. */
  receive(m: Shown & { run_id: string }): void {
    if (m.run_id !== this.runId || m.step !== this.target()) return;
    this.requested = null;
    this.shown = { step: m.step, validation: m.validation, message: m.message };
    this.draw();
  }

  private target(): number | null {
    if (this.chosen !== null && this.steps.includes(this.chosen)) return this.chosen;
    return this.steps.at(-1) ?? null;
  }

  private draw(): void {
    const s = this.section;
    clear(s);
    s.hidden = this.steps.length === 0;
    if (s.hidden) return;
    const latest = this.steps.at(-1)!;
    const picker = h(
      'select',
      { id: 'scatter-step', 'aria-label': 'step of the scatter' },
      h('option', { value: '', selected: this.chosen === null }, `latest (step ${latest})`),
      [...this.steps]
        .reverse()
        .map((step) => h('option', { value: step, selected: this.chosen === step }, `step ${step}`)),
    );
    picker.addEventListener('change', () => {
      this.chosen = picker.value === '' ? null : Number(picker.value);
      this.onChoose(this.chosen);
      this.refresh();
    });
    s.append(h('h2', {}, 'Rollout vs trainer probability ', picker));
    const target = this.target();
    const shown = this.shown?.step === target ? this.shown : null;
    if (!shown) s.append(h('p', { class: 'muted' }, `loading step ${target}…`));
    else if (!shown.validation)
      s.append(h('p', { class: 'muted' }, shown.message ?? `step ${shown.step} has no scatter`));
    else {
      const colors = {
        dot: this.color('--vscode-charts-blue', '#3794ff'),
        axis: this.color('--vscode-foreground', '#ccc'),
        grid: this.color('--vscode-panel-border', '#8883'),
      };
      s.append(
        h(
          'div',
          { class: 'scatter-box' },
          scatterPlot(shown.validation, shown.step, colors),
          h('p', { class: 'muted', id: 'scatter-figures' }, agreementText(shown.step, shown.validation)),
        ),
      );
    }
  }
}
