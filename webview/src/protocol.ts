// Typed messages between the extension host and the webviews: declared once here, both ends
// validate with these schemas (the host before acting, the webview before rendering).
import { z } from 'zod';
import { RolloutDetail } from '../../daemon/protocol/api';
import { Run, RunMetrics, RunWorkers } from '../../daemon/protocol/entities';
import { Comparison, Evaluation, EvaluationProgress } from '../../daemon/protocol/evaluation';
import { SampleJson } from '../../daemon/protocol/samples';
import { StepValidation } from '../../daemon/protocol/training';

/** Host → a webview: it cannot show what it was opened for (daemon_stopped: offer Start Daemon). */
export const ErrorMessage = z.object({
  type: z.literal('error'),
  message: z.string(),
  daemon_stopped: z.boolean().default(false),
});

/** Host → trajectory webview. */
export const TrajectoryData = z.object({
  type: z.literal('trajectory'),
  rollout: RolloutDetail,
  /** Training samples from the daemon's samples stage (buildSamples), when available. */
  samples: z.array(SampleJson).nullable(),
  /** Per sample, the decoded text of each token when the host could decode it. */
  token_texts: z.array(z.array(z.string())).nullable().default(null),
  /** The proxy's OpenAI-style base URL, for "copy as curl". */
  proxy_base_url: z.string(),
  focus_call_id: z.string().nullable().default(null),
});
export const ToTrajectory = z.discriminatedUnion('type', [
  TrajectoryData,
  z.object({ type: z.literal('loading'), rollout_id: z.string() }),
  ErrorMessage,
]);

/** The rollouts of a run's current step by status (the dashboard's progress line). */
export const StepProgress = z.object({
  run_id: z.string(),
  step: z.number().int().nonnegative(),
  total: z.number().int().nonnegative(),
  queued: z.number().int().nonnegative(),
  running: z.number().int().nonnegative(),
  /** succeeded, failed or cancelled */
  finished: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
});

/** Host → dashboard webview. */
export const ToDashboard = z.discriminatedUnion('type', [
  z.object({ type: z.literal('dashboard'), run: Run, metrics: z.array(RunMetrics) }),
  z.object({ type: z.literal('metrics'), metrics: RunMetrics }),
  z.object({ type: z.literal('run'), run: Run }),
  z.object({ type: z.literal('workers'), workers: RunWorkers }),
  /** The other runs the dashboard can overlay. */
  z.object({
    type: z.literal('runs'),
    runs: z.array(Run.pick({ id: true, name: true, status: true, created_at: true })),
  }),
  /** The runs picked for comparison with their metrics (their live rows then come as 'metrics'). */
  z.object({
    type: z.literal('compare'),
    runs: z.array(z.object({ run: Run, metrics: z.array(RunMetrics) })),
  }),
  /** A step's train/inference agreement and scatter, as the webview asked (null with why: none stored). */
  z.object({
    type: z.literal('validation'),
    run_id: z.string(),
    step: z.number().int().nonnegative(),
    validation: StepValidation.nullable(),
    message: z.string().optional(),
  }),
  z.object({ type: z.literal('progress'), progress: StepProgress }),
  /** The daemon stopped (what is shown stays, marked stale) or is back (a 'dashboard' follows). */
  z.object({ type: z.literal('daemon'), running: z.boolean() }),
  ErrorMessage,
]);

/** Host → recording snippets webview. */
export const ToSnippets = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('snippets'),
    recording: z.string(),
    /** The snippets in Markdown (headings, fenced code, paragraphs). */
    markdown: z.string(),
    /** The recording key: shown masked until the person reveals it. */
    key: z.string(),
  }),
  z.object({ type: z.literal('error'), message: z.string() }),
]);

/** An evaluation as other pages name it (the previous one of a config, a comparison's sides). */
export const EvaluationRef = Evaluation.pick({ id: true, name: true, status: true, created_at: true });

/** Host → evaluation webview: one evaluation's page, or the comparison of two. */
export const ToEvaluation = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('evaluation'),
    evaluation: Evaluation,
    /** The previous finished evaluation of the same name (what "Compare with previous" compares to). */
    previous: EvaluationRef.nullable().default(null),
  }),
  z.object({ type: z.literal('comparison'), comparison: Comparison, a: Evaluation, b: Evaluation }),
  /** A running evaluation's attempts by status, live (its `evaluation_progress` events). */
  z.object({ type: z.literal('progress'), progress: EvaluationProgress }),
  ErrorMessage,
]);

/** How many other runs the dashboard overlays at most (the palette has that many more colours). */
export const MAX_COMPARED = 5;

/** Webview → host (every webview). */
export const FromWebview = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('copy'), what: z.string().max(100), text: z.string() }),
  z.object({ type: z.literal('refresh') }),
  z.object({ type: z.literal('startDaemon') }),
  z.object({ type: z.literal('stopRun'), run_id: z.string() }),
  z.object({ type: z.literal('resumeRun'), run_id: z.string() }),
  /** The dashboard wants a step's scatter (answered with 'validation'). */
  z.object({ type: z.literal('stepValidation'), run_id: z.string(), step: z.number().int().nonnegative() }),
  z.object({ type: z.literal('openRollout'), rollout_id: z.string() }),
  z.object({ type: z.literal('compareRuns'), run_ids: z.array(z.string()).max(MAX_COMPARED) }),
  z.object({ type: z.literal('openEvaluation'), evaluation_id: z.string() }),
  /** Compare two evaluations: b − a, a the baseline. */
  z.object({ type: z.literal('compareEvaluations'), a: z.string(), b: z.string() }),
]);

/** What each webview keeps in getState()/setState() and the serializer restores from. */
export const TrajectoryState = z.object({ rollout_id: z.string(), focus_call_id: z.string().nullish() });
export const DashboardState = z.object({
  run_id: z.string(),
  /** EMA smoothing weight of the charts (0 = raw). */
  smoothing: z.number().min(0).max(0.99).optional(),
  /** Runs overlaid for comparison. */
  compare: z.array(z.string()).max(MAX_COMPARED).optional(),
  /** The step whose rollout-vs-trainer scatter shows (absent/null: the latest). */
  scatter_step: z.number().int().nonnegative().nullable().optional(),
});

/** One evaluation (evaluation_id) or the comparison of two (a, b). */
export const EvaluationState = z.union([
  z.object({ evaluation_id: z.string() }),
  z.object({ a: z.string(), b: z.string() }),
]);

export type TrajectoryData = z.infer<typeof TrajectoryData>;
export type ToTrajectory = z.input<typeof ToTrajectory>;
export type ToDashboard = z.input<typeof ToDashboard>;
export type ToSnippets = z.infer<typeof ToSnippets>;
export type ToEvaluation = z.input<typeof ToEvaluation>;
export type EvaluationState = z.infer<typeof EvaluationState>;
export type StepProgress = z.infer<typeof StepProgress>;
export type FromWebview = z.infer<typeof FromWebview>;
export type TrajectoryState = z.infer<typeof TrajectoryState>;
export type DashboardState = z.infer<typeof DashboardState>;

/** The subset of the webview API the bundles use (acquireVsCodeApi()). */
export interface VsCodeApi<S> {
  postMessage(message: FromWebview): void;
  getState(): S | undefined;
  setState(state: S): void;
}
