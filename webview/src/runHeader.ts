// Run dashboard header: the run's name, status, step and buttons, the current step's rollout
// progress, and the notices under it (paused and why, daemon stopped, no worker to run rollouts).
import type { Run, RunWorkers } from '../../daemon/protocol/entities';
import { clear, h } from './dom';
import { progressText } from './progress';
import type { FromWebview, StepProgress } from './protocol';
import { describeWorkers } from './workers';

/** What the header shows, from the dashboard's state. */
export interface HeaderState {
  run: Run;
  /** The run's name as shown (with when it started where names clash). */
  label: string;
  /** Whether the daemon runs (when it stopped, what is shown is what it last said). */
  daemonRunning: boolean;
  /** The current step's rollouts (running runs only). */
  progress: StepProgress | null;
  workers: RunWorkers | undefined;
}

type Post = (m: FromWebview) => void;

/** The header bar (name, status, step, model version, the run's buttons), then what goes with it. */
export function renderHeader(s: HeaderState, post: Post) {
  const header = document.getElementById('header');
  if (!header) return;
  const r = s.run;
  clear(header);
  const steps = (r.config as { schedule?: { steps?: number } } | null)?.schedule?.steps;
  const live = s.daemonRunning || r.status !== 'running';
  const parts: (Node | null)[] = [
    h('h1', {}, s.label),
    h('span', { class: 'badge', id: 'run-status' }, live ? r.status : 'paused: daemon stopped'),
    h('span', { id: 'run-step' }, `step ${r.step}${steps ? ` of ${steps}` : ''}`),
    h('span', {}, `model v${r.model_version}`),
    r.error && r.status !== 'paused' ? h('span', { class: 'error' }, r.error) : null,
    live && (r.status === 'running' || r.status === 'created' || r.status === 'paused')
      ? h('button', { onclick: () => post({ type: 'stopRun', run_id: r.id }) }, 'Stop run')
      : null,
    r.status === 'paused' || r.status === 'stopped'
      ? h(
          'button',
          { id: 'resume-run', onclick: () => post({ type: 'resumeRun', run_id: r.id }) },
          'Resume run',
        )
      : null,
    h('button', { onclick: () => post({ type: 'refresh' }) }, 'Refresh'),
  ];
  header.append(...parts.filter((p): p is Node => p !== null));
  renderProgress(s);
  renderWorkers(s, post);
  renderPaused(r);
  renderDaemonStopped(s, post);
}

/** In the header while the run trains: the current step's rollouts finished / running / queued. */
export function renderProgress(s: HeaderState) {
  document.getElementById('step-progress')?.remove();
  const p = s.progress;
  if (!p || s.run.status !== 'running' || !s.daemonRunning) return;
  document
    .getElementById('run-step')
    ?.after(
      h(
        'span',
        { id: 'step-progress', role: 'status', 'aria-live': 'polite' },
        h('progress', { max: Math.max(1, p.total), value: p.finished, 'aria-hidden': 'true' }),
        ` ${progressText(p)}`,
      ),
    );
}

/** Below the header: why the run paused (a `validation:` threshold names the step and the figure). */
function renderPaused(r: Run) {
  document.getElementById('run-paused')?.remove();
  if (r.status !== 'paused') return;
  document
    .getElementById('header')
    ?.after(
      h(
        'div',
        { id: 'run-paused', class: 'notice', role: 'alert' },
        h('strong', {}, 'Paused: '),
        h('span', {}, r.error ?? 'the run waits to be resumed'),
      ),
    );
}

/** Below the header while the daemon is down: the run waits for it, not for a worker. */
function renderDaemonStopped(s: HeaderState, post: Post) {
  document.getElementById('daemon-stopped')?.remove();
  if (s.daemonRunning) return;
  const r = s.run;
  const resumes =
    r.status === 'running'
      ? ` Run ${r.name} is paused; it resumes from step ${r.step} when the daemon starts again.`
      : '';
  document
    .getElementById('header')
    ?.after(
      h(
        'div',
        { id: 'daemon-stopped', class: 'notice', role: 'status' },
        h('span', {}, `The Harness RL daemon is not running.${resumes} `),
        h('button', { class: 'primary', onclick: () => post({ type: 'startDaemon' }) }, 'Start Daemon'),
      ),
    );
}

/** Below the header: nothing runs the rollouts (waiting for a worker, the last one went away). */
function renderWorkers(s: HeaderState, post: Post) {
  document.getElementById('run-workers')?.remove();
  const note = s.run.status === 'running' && s.daemonRunning ? describeWorkers(s.workers) : null;
  if (!note?.waiting) return;
  const [before, command] = note.command ? note.detail.split(/`([^`]*)`/) : [note.detail, null];
  document.getElementById('header')?.after(
    h(
      'div',
      { id: 'run-workers', class: 'notice', role: 'status' },
      h('span', {}, before ?? ''),
      command ? h('code', {}, command) : null,
      command
        ? h(
            'button',
            {
              onclick: () => post({ type: 'copy', what: 'the worker command', text: command }),
            },
            'Copy',
          )
        : null,
    ),
  );
}
