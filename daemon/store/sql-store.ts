// The Store, written once over the Driver seam; SQLite and PostgreSQL differ only in their drivers.
// Every method is one transaction; events are published to subscribers after the commit. The SQL
// of each entity lives in ./sql/<entity>.ts; this class only hands each call to its home, with every
// text it stores through the one redactor (../redact.ts; a call's fields in sql/calls.ts).
import type {
  Attempt,
  Group,
  GroupStatus,
  LlmCall,
  ModelVersion,
  NewLlmCall,
  NewToolRun,
  NodeInfo,
  Page,
  PrefixBreak,
  Recording,
  Reward,
  Rollout,
  RolloutStats,
  Run,
  RunKind,
  RunMetrics,
  Task,
  ToolRun,
} from '../protocol/entities';
import type { DaemonEvent, DaemonEventType } from '../protocol/events';
import type { AttemptFailure } from '../protocol/failures';
import type { StepValidation } from '../protocol/training';
import { redactText, redactValue } from '../redact';
import type { Driver } from './driver';
import { keyHash } from './ids';
import * as attempts from './sql/attempts';
import * as calls from './sql/calls';
import { SqlContext } from './sql/context';
import * as evaluations from './sql/evaluations';
import * as evolutions from './sql/evolutions';
import * as modelVersions from './sql/model-versions';
import * as nodes from './sql/nodes';
import * as recordings from './sql/recordings';
import * as rewards from './sql/rewards';
import * as rollouts from './sql/rollouts';
import * as runs from './sql/runs';
import * as tasks from './sql/tasks';
import * as toolRuns from './sql/tool-runs';
import type {
  EvaluationPatch,
  GroupFilter,
  NewEvaluation,
  NewImportedRecording,
  NewRecording,
  NewRollout,
  RolloutFilter,
  Store,
  StoredCandidate,
  StoredEvaluation,
  StoredEvolution,
} from './store';

export { summarizeCall } from './sql/calls';

export class SqlStore implements Store {
  readonly kind: string;
  private readonly c: SqlContext;

  constructor(db: Driver) {
    this.kind = db.dialect;
    this.c = new SqlContext(db);
  }

  /** The driver, for tests and tools that need raw SQL (migrations, benchmarks). */
  get driver(): Driver {
    return this.c.db;
  }

  /** What the call chains' bases hold in memory (sql/call-chain.ts), for tests and benchmarks. */
  get chainsHeld(): { bytes: number; chains: number } {
    return this.c.chains.held;
  }

  async close(): Promise<void> {
    if (this.c.closed) return;
    this.c.closed = true;
    this.c.unsubscribeAll();
    await this.c.db.close();
  }

  subscribe(listener: (event: DaemonEvent) => void, types?: readonly DaemonEventType[]): () => void {
    return this.c.subscribe(listener, types);
  }

  /** Publish an event that changes nothing stored (who is attached to a run …). */
  announce(event: DaemonEvent): void {
    if (!this.c.closed) this.c.publish([redactValue(event)]);
  }

  // ---- runs
  createRun(input: { name: string; config: unknown; base_dir?: string; kind?: RunKind }): Promise<Run> {
    return runs.createRun(this.c, {
      ...input,
      name: redactText(input.name),
      config: redactValue(input.config),
    });
  }
  getRun(id: string): Promise<Run | null> {
    return runs.getRun(this.c, id);
  }
  listRuns(p?: { cursor?: string; limit?: number; kind?: RunKind }): Promise<Page<Run>> {
    return runs.listRuns(this.c, p);
  }
  updateRun(
    id: string,
    patch: Partial<Pick<Run, 'status' | 'step' | 'model_version' | 'error'>>,
  ): Promise<Run> {
    return runs.updateRun(this.c, id, patch.error ? { ...patch, error: redactText(patch.error) } : patch);
  }
  addRunMetrics(runId: string, step: number, metrics: Record<string, number | null>): Promise<RunMetrics> {
    return runs.addRunMetrics(this.c, runId, step, metrics);
  }
  listRunMetrics(runId: string): Promise<RunMetrics[]> {
    return runs.listRunMetrics(this.c, runId);
  }
  setStepValidation(runId: string, step: number, validation: StepValidation): Promise<void> {
    return runs.setStepValidation(this.c, runId, step, validation);
  }
  getStepValidation(runId: string, step: number): Promise<StepValidation | null> {
    return runs.getStepValidation(this.c, runId, step);
  }

  // ---- tasks and groups
  createTasks(runId: string, input: { input: unknown; split: Task['split'] }[]): Promise<Task[]> {
    return tasks.createTasks(this.c, runId, input);
  }
  listTasks(runId: string, split?: Task['split']): Promise<Task[]> {
    return tasks.listTasks(this.c, runId, split);
  }
  createGroup(input: { run_id: string; task_id: string | null; step: number; size: number }): Promise<Group> {
    return tasks.createGroup(this.c, input);
  }
  getGroup(id: string): Promise<Group | null> {
    return tasks.getGroup(this.c, id);
  }
  listGroups(runId: string, p?: GroupFilter): Promise<Page<Group>> {
    return tasks.listGroups(this.c, runId, p);
  }
  setGroupStatus(id: string, status: GroupStatus): Promise<void> {
    return tasks.setGroupStatus(this.c, id, status);
  }

  // ---- rollouts and attempts
  createRollout(input: NewRollout): Promise<Rollout & { key: string }> {
    return rollouts.createRollout(this.c, input);
  }
  createRollouts(inputs: NewRollout[]): Promise<(Rollout & { key: string })[]> {
    return rollouts.createRollouts(this.c, inputs);
  }
  getRollout(id: string): Promise<Rollout | null> {
    return rollouts.getRollout(this.c, id);
  }
  getRolloutKeyHash(id: string): Promise<string | null> {
    return rollouts.getRolloutKeyHash(this.c, id);
  }
  issueRolloutKey(id: string): Promise<string | null> {
    return rollouts.issueRolloutKey(this.c, id);
  }
  listRollouts(filter: RolloutFilter): Promise<Page<Rollout>> {
    return rollouts.listRollouts(this.c, filter);
  }
  issueWorkerKey(runId: string): Promise<string | null> {
    return runs.issueWorkerKey(this.c, runId);
  }
  runOfWorkerKey(hash: string): Promise<string | null> {
    return runs.runOfWorkerKey(this.c, hash);
  }
  revokeWorkerKey(runId: string): Promise<void> {
    return runs.revokeWorkerKey(this.c, runId);
  }
  claimRollout(filter?: { run_id?: string; worker?: string }) {
    return attempts.claimRollout(
      this.c,
      filter?.worker ? { ...filter, worker: redactText(filter.worker) } : filter,
    );
  }
  startAttempt(rolloutId: string, worker?: string): Promise<Attempt> {
    return attempts.startAttempt(this.c, rolloutId, worker && redactText(worker));
  }
  heartbeat(attemptId: string): Promise<void> {
    return attempts.heartbeat(this.c, attemptId);
  }
  finishAttempt(
    attemptId: string,
    status: Exclude<Attempt['status'], 'running'>,
    error?: string,
    failure?: AttemptFailure | null,
  ): Promise<Rollout> {
    return attempts.finishAttempt(this.c, attemptId, status, error && redactText(error), failure);
  }
  completeRollout(id: string): Promise<Rollout> {
    return rollouts.completeRollout(this.c, id);
  }
  failRollout(id: string, error: string): Promise<Rollout> {
    return rollouts.failRollout(this.c, id, typeof error === 'string' ? redactText(error) : error);
  }
  cancelRollout(id: string): Promise<Rollout> {
    return rollouts.cancelRollout(this.c, id);
  }
  listStaleAttempts(olderThanMs: number): Promise<Attempt[]> {
    return attempts.listStaleAttempts(this.c, olderThanMs);
  }
  listAttempts(rolloutId: string): Promise<Attempt[]> {
    return attempts.listAttempts(this.c, rolloutId);
  }
  setRolloutStats(id: string, stats: RolloutStats, prefixBreaks: PrefixBreak[]): Promise<void> {
    return rollouts.setRolloutStats(this.c, id, stats, redactValue(prefixBreaks));
  }
  getPrefixBreaks(id: string): Promise<PrefixBreak[]> {
    return rollouts.getPrefixBreaks(this.c, id);
  }

  // ---- llm calls
  recordLlmCall(call: NewLlmCall): Promise<LlmCall> {
    return calls.recordLlmCall(this.c, call);
  }
  recordLlmCalls(input: NewLlmCall[]): Promise<LlmCall[]> {
    return calls.recordLlmCalls(this.c, input);
  }
  getLlmCall(id: string): Promise<LlmCall | null> {
    return calls.getLlmCall(this.c, id);
  }
  listLlmCalls(rolloutId: string): Promise<LlmCall[]> {
    return calls.listLlmCalls(this.c, rolloutId);
  }
  listRecordingCalls(recordingId: string): Promise<LlmCall[]> {
    return calls.listRecordingCalls(this.c, recordingId);
  }

  // ---- rewards
  addReward(rolloutId: string, input: { value: number; source: string; detail?: unknown }): Promise<Reward> {
    return rewards.addReward(this.c, rolloutId, redactValue(input));
  }
  listRewards(rolloutId: string): Promise<Reward[]> {
    return rewards.listRewards(this.c, rolloutId);
  }

  // ---- tool runs
  addToolRuns(rolloutId: string, runs: NewToolRun[]): Promise<ToolRun[]> {
    return toolRuns.addToolRuns(this.c, rolloutId, redactValue(runs));
  }
  listToolRuns(rolloutId: string): Promise<ToolRun[]> {
    return toolRuns.listToolRuns(this.c, rolloutId);
  }
  rolloutOfKey(key: string): Promise<string | null> {
    return toolRuns.rolloutOfKeyHash(this.c, keyHash(key));
  }

  // ---- model versions, nodes, recordings
  addModelVersion(v: Omit<ModelVersion, 'created_at'>): Promise<ModelVersion> {
    return modelVersions.addModelVersion(this.c, redactValue(v));
  }
  listModelVersions(runId?: string | null): Promise<ModelVersion[]> {
    return modelVersions.listModelVersions(this.c, runId);
  }
  upsertNode(node: NodeInfo): Promise<NodeInfo> {
    return nodes.upsertNode(this.c, redactValue(node));
  }
  listNodes(): Promise<NodeInfo[]> {
    return nodes.listNodes(this.c);
  }
  createRecording(input: NewRecording): Promise<Recording & { key: string }> {
    return recordings.createRecording(this.c, redactValue(input));
  }
  getRecording(id: string): Promise<Recording | null> {
    return recordings.getRecording(this.c, id);
  }
  getRecordingKeyHash(id: string): Promise<string | null> {
    return recordings.getRecordingKeyHash(this.c, id);
  }
  activeRecording(): Promise<Recording | null> {
    return recordings.activeRecording(this.c);
  }
  activeRecordings(): Promise<Recording[]> {
    return recordings.activeRecordings(this.c);
  }
  listRecordings(): Promise<Recording[]> {
    return recordings.listRecordings(this.c);
  }
  stopRecording(id: string): Promise<Recording> {
    return recordings.stopRecording(this.c, id);
  }
  createImportedRecording(input: NewImportedRecording): Promise<{ recording: Recording; created: boolean }> {
    return recordings.createImportedRecording(this.c, redactValue(input));
  }

  // ---- evaluations
  createEvaluation(input: NewEvaluation): Promise<StoredEvaluation> {
    return evaluations.createEvaluation(this.c, { ...input, name: redactText(input.name) });
  }
  getEvaluation(id: string): Promise<StoredEvaluation | null> {
    return evaluations.getEvaluation(this.c, id);
  }
  evaluationOfRun(runId: string): Promise<StoredEvaluation | null> {
    return evaluations.evaluationOfRun(this.c, runId);
  }
  listEvaluations(p?: { cursor?: string; limit?: number }): Promise<Page<StoredEvaluation>> {
    return evaluations.listEvaluations(this.c, p);
  }
  updateEvaluation(id: string, patch: EvaluationPatch): Promise<StoredEvaluation> {
    return evaluations.updateEvaluation(this.c, id, patch);
  }

  // ---- evolutions
  createEvolution(input: {
    name: string;
    harness_dir: string;
    config: unknown;
    base_dir?: string | null;
  }): Promise<StoredEvolution> {
    return evolutions.createEvolution(this.c, {
      ...input,
      name: redactText(input.name),
      config: redactValue(input.config),
    });
  }
  getEvolution(id: string): Promise<StoredEvolution | null> {
    return evolutions.getEvolution(this.c, id);
  }
  listEvolutions(p?: { cursor?: string; limit?: number }): Promise<Page<StoredEvolution>> {
    return evolutions.listEvolutions(this.c, p);
  }
  updateEvolution(
    id: string,
    patch: Partial<Pick<StoredEvolution, 'status' | 'error' | 'result' | 'finished_at'>>,
  ): Promise<StoredEvolution> {
    return evolutions.updateEvolution(this.c, id, patch);
  }
  putCandidate(candidate: StoredCandidate): Promise<StoredCandidate> {
    return evolutions.putCandidate(this.c, candidate);
  }
  listCandidates(evolutionId: string): Promise<StoredCandidate[]> {
    return evolutions.listCandidates(this.c, evolutionId);
  }
}
