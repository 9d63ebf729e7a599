// The trace store: one interface, two backends (SQLite embedded, PostgreSQL shared).
// Every method is one transaction; a resolved promise means the write is durable.
// Implementations publish a DaemonEvent to subscribers after each committed change.
import type {
  Attempt,
  AttemptStatus,
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
  RolloutKind,
  RolloutStats,
  RolloutStatus,
  Run,
  RunKind,
  RunMetrics,
  Task,
  ToolRun,
} from '../protocol/entities';
import type { EvalSplit, Evaluation } from '../protocol/evaluation';
import type { DaemonEvent, DaemonEventType } from '../protocol/events';
import type { Candidate, Evolution, FilePatch } from '../protocol/evolution';
import type { AttemptFailure } from '../protocol/failures';
import type { StepValidation } from '../protocol/training';

export interface RolloutFilter {
  run_id?: string;
  group_id?: string;
  status?: RolloutStatus;
  min_reward?: number;
  max_reward?: number;
  has_reward?: boolean;
  cursor?: string;
  limit?: number;
}

/** Groups of a run, paged; with a rollout filter only the groups holding a rollout that passes it. */
export type GroupFilter = Pick<RolloutFilter, 'status' | 'min_reward' | 'max_reward' | 'cursor' | 'limit'>;

export interface NewRollout {
  kind: RolloutKind;
  run_id?: string | null;
  group_id?: string | null;
  task_id?: string | null;
  recording_id?: string | null;
  input?: unknown;
  max_attempts?: number;
  /** Further attempts after failures of kind infrastructure (default 0). */
  infrastructure_retries?: number;
  /** Standalone rollouts: false turns the token bridge off (absent: on where tokens are known). */
  tito?: boolean;
}

export interface NewRecording {
  name: string;
  /** Where the calls go (Recording.upstream). */
  upstream: unknown;
  /** false turns the token bridge off for the recording's calls (absent: on where tokens are known). */
  tito?: boolean;
  /** Recorded by its key only, beside the active recording (Recording.scoped); absent: false. */
  scoped?: boolean;
}

/** A recording of a past session read from an agent's log (daemon/import/). */
export interface NewImportedRecording {
  name: string;
  /** What it was imported from: `{kind: "import", source, session_id, file, tokenizer_model}`. */
  upstream: unknown;
  /** The session's identity (`<source>:<session id>`): one recording per session. */
  import_key: string;
  /** When the session began and ended (absent: now). */
  created_at?: string;
  stopped_at?: string;
}

export interface NewEvaluation {
  name: string;
  run_id: string;
  split: EvalSplit;
  attempts: number;
  harness_dir?: string | null;
  seed: number;
  /** What the evaluation's loop needs to resume (pass threshold, retries …). */
  spec: Record<string, unknown>;
}

/** An evaluation as stored: with the spec it was created with. */
export type StoredEvaluation = Evaluation & { spec: Record<string, unknown> };

export type EvaluationPatch = Partial<
  Pick<Evaluation, 'status' | 'error' | 'model_version' | 'summary' | 'tasks' | 'finished_at'>
>;

/** An evolution as stored: with the run config it runs and the folder its relative paths resolve against. */
export type StoredEvolution = Evolution & { config: unknown; base_dir: string | null };
/** A candidate with its patch against its parent. */
export type StoredCandidate = Candidate & { patch: FilePatch[] };

export interface Store {
  /** "sqlite" or "postgres" */
  readonly kind: string;
  close(): Promise<void>;
  /**
   * `listener` gets every event committed from now on, or only those of `types`: events nobody takes
   * are not built (an llm_call summary per proxied call, for one).
   */
  subscribe(listener: (event: DaemonEvent) => void, types?: readonly DaemonEventType[]): () => void;
  /** Publish an event that changes nothing stored (e.g. the workers attached to a run). */
  announce(event: DaemonEvent): void;

  // runs
  createRun(input: { name: string; config: unknown; base_dir?: string; kind?: RunKind }): Promise<Run>;
  getRun(id: string): Promise<Run | null>;
  listRuns(page?: { cursor?: string; limit?: number; kind?: RunKind }): Promise<Page<Run>>;
  updateRun(
    id: string,
    patch: Partial<Pick<Run, 'status' | 'step' | 'model_version' | 'error'>>,
  ): Promise<Run>;
  addRunMetrics(runId: string, step: number, metrics: Record<string, number | null>): Promise<RunMetrics>;
  listRunMetrics(runId: string): Promise<RunMetrics[]>;
  /** A step's train/inference agreement with its scatter (its scalars also go to the step's metrics). */
  setStepValidation(runId: string, step: number, validation: StepValidation): Promise<void>;
  getStepValidation(runId: string, step: number): Promise<StepValidation | null>;

  // tasks and groups
  createTasks(runId: string, tasks: { input: unknown; split: Task['split'] }[]): Promise<Task[]>;
  listTasks(runId: string, split?: Task['split']): Promise<Task[]>;
  createGroup(input: { run_id: string; task_id: string | null; step: number; size: number }): Promise<Group>;
  getGroup(id: string): Promise<Group | null>;
  listGroups(runId: string, filter?: GroupFilter): Promise<Page<Group>>;
  setGroupStatus(id: string, status: GroupStatus): Promise<void>;

  // rollouts and their life cycle: queued → running → succeeded | failed | cancelled
  // A rollout's (and a recording's) key is shown once, when it is made; the store keeps only its
  // SHA-256 (ids.ts keyHash), so callers compare keyHash(presented) with the stored hash.
  createRollout(input: NewRollout): Promise<Rollout & { key: string }>;
  /** Many rollouts in one transaction (a group, or a benchmark's 100,000). */
  createRollouts(inputs: NewRollout[]): Promise<(Rollout & { key: string })[]>;
  getRollout(id: string): Promise<Rollout | null>;
  /** SHA-256 (hex) of the rollout's key (for auth); null for unknown ids. */
  getRolloutKeyHash(id: string): Promise<string | null>;
  /**
   * A new key for the rollout (a claim hands it to the worker), replacing the old one, which stops
   * working; null for unknown ids.
   */
  issueRolloutKey(id: string): Promise<string | null>;
  listRollouts(filter: RolloutFilter): Promise<Page<Rollout>>;
  /**
   * A new worker credential for the run (`hrw_…`, shown once; the store keeps its SHA-256), replacing
   * the run's previous one; null for unknown runs.
   */
  issueWorkerKey(runId: string): Promise<string | null>;
  /** The run whose live worker credential has this SHA-256 (ids.ts keyHash), or null. */
  runOfWorkerKey(keyHash: string): Promise<string | null>;
  /** The run's worker credential stops working. */
  revokeWorkerKey(runId: string): Promise<void>;
  /** Atomically take the oldest queued rollout (optionally of one run) and start an attempt on it. */
  claimRollout(filter: {
    run_id?: string;
    worker?: string;
  }): Promise<{ rollout: Rollout; attempt: Attempt } | null>;
  /** Start an attempt on a queued rollout by id (standalone rollouts whose harness is already running). */
  startAttempt(rolloutId: string, worker?: string): Promise<Attempt>;
  heartbeat(attemptId: string): Promise<void>;
  /**
   * End an attempt. succeeded → rollout succeeded. failed/timed_out/unresponsive → the attempt keeps
   * its `failure` (as named, else protocol/failures defaultFailure; an attempt of a run whose last llm
   * call failed at the backend failed as infrastructure, even one reported succeeded) and the rollout
   * is queued again while that kind's budget lasts (harness: max_attempts, infrastructure:
   * infrastructure_retries more), else failed. cancelled → rollout cancelled.
   */
  finishAttempt(
    attemptId: string,
    status: Exclude<AttemptStatus, 'running'>,
    error?: string,
    failure?: AttemptFailure | null,
  ): Promise<Rollout>;
  /** Mark a rollout done without an attempt bookkeeping (ends its running attempt if any). */
  completeRollout(id: string): Promise<Rollout>;
  failRollout(id: string, error: string): Promise<Rollout>;
  cancelRollout(id: string): Promise<Rollout>;
  /** Attempts whose heartbeat is older than `olderThanMs` (for the unresponsive sweeper). */
  listStaleAttempts(olderThanMs: number): Promise<Attempt[]>;
  listAttempts(rolloutId: string): Promise<Attempt[]>;
  setRolloutStats(id: string, stats: RolloutStats, prefixBreaks: PrefixBreak[]): Promise<void>;
  getPrefixBreaks(id: string): Promise<PrefixBreak[]>;

  // llm calls
  recordLlmCall(call: NewLlmCall): Promise<LlmCall>;
  recordLlmCalls(calls: NewLlmCall[]): Promise<LlmCall[]>;
  getLlmCall(id: string): Promise<LlmCall | null>;
  /** Calls of a rollout in seq order (full bodies and token arrays). */
  listLlmCalls(rolloutId: string): Promise<LlmCall[]>;
  listRecordingCalls(recordingId: string): Promise<LlmCall[]>;

  // rewards
  addReward(rolloutId: string, reward: { value: number; source: string; detail?: unknown }): Promise<Reward>;
  listRewards(rolloutId: string): Promise<Reward[]>;

  // tool runs the harness reports over OTLP (redacted like every stored text)
  /** Stores the runs not stored yet (same call id, or same source, tool and start: a repeat); resolves to those stored. */
  addToolRuns(rolloutId: string, runs: NewToolRun[]): Promise<ToolRun[]>;
  /** A rollout's tool runs by start time. */
  listToolRuns(rolloutId: string): Promise<ToolRun[]>;
  /** The rollout a key opens (its own key, or its recording's key); null for no key the store knows. */
  rolloutOfKey(key: string): Promise<string | null>;

  // model versions, nodes, recordings
  addModelVersion(v: Omit<ModelVersion, 'created_at'>): Promise<ModelVersion>;
  listModelVersions(runId?: string | null): Promise<ModelVersion[]>;
  upsertNode(node: NodeInfo): Promise<NodeInfo>;
  listNodes(): Promise<NodeInfo[]>;
  createRecording(input: NewRecording): Promise<Recording & { key: string }>;
  getRecording(id: string): Promise<Recording | null>;
  /** SHA-256 (hex) of the recording's key; null for unknown ids. */
  getRecordingKeyHash(id: string): Promise<string | null>;
  /** The active recording session, if any (unscoped proxy calls record into it): never a scoped one. */
  activeRecording(): Promise<Recording | null>;
  /** Every recording still recording, scoped ones included, newest first. */
  activeRecordings(): Promise<Recording[]>;
  listRecordings(): Promise<Recording[]>;
  stopRecording(id: string): Promise<Recording>;
  /**
   * A stopped recording for an imported session and its running rollout (the importer records the
   * calls, then completes it); the session's earlier complete import instead, with `created: false`.
   */
  createImportedRecording(input: NewImportedRecording): Promise<{ recording: Recording; created: boolean }>;

  // evaluations (daemon/eval): a run's split at a fixed model version, no training
  createEvaluation(input: NewEvaluation): Promise<StoredEvaluation>;
  getEvaluation(id: string): Promise<StoredEvaluation | null>;
  /** The evaluation a run carries (null: the run trains). */
  evaluationOfRun(runId: string): Promise<StoredEvaluation | null>;
  listEvaluations(page?: { cursor?: string; limit?: number }): Promise<Page<StoredEvaluation>>;
  updateEvaluation(id: string, patch: EvaluationPatch): Promise<StoredEvaluation>;

  // evolutions (daemon/evolve) and their candidates
  createEvolution(input: {
    name: string;
    harness_dir: string;
    config: unknown;
    base_dir?: string | null;
  }): Promise<StoredEvolution>;
  getEvolution(id: string): Promise<StoredEvolution | null>;
  listEvolutions(page?: { cursor?: string; limit?: number }): Promise<Page<StoredEvolution>>;
  updateEvolution(
    id: string,
    patch: Partial<Pick<Evolution, 'status' | 'error' | 'result' | 'finished_at'>>,
  ): Promise<StoredEvolution>;
  /** Insert or replace a candidate. */
  putCandidate(candidate: StoredCandidate): Promise<StoredCandidate>;
  /** An evolution's candidates, by generation then creation. */
  listCandidates(evolutionId: string): Promise<StoredCandidate[]>;
}

/** Thrown for unknown ids and invalid transitions; the API maps it to 404 / 409. */
export class StoreError extends Error {
  constructor(
    readonly code: 'not_found' | 'conflict' | 'invalid',
    message: string,
    readonly field: string | null = null,
  ) {
    super(message);
  }
}

export type OpenStoreOptions = { dataDir: string; url?: string };
