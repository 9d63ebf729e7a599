// What every part of a running daemon shares. daemon.ts builds it; api/, proxy/ and cluster/ take it.
import type { BackendStatus } from './protocol/api';
import type { DaemonConfig } from './protocol/config';
import type { AttemptOutput, NewLlmCall, RunWorkers } from './protocol/entities';
import type { Store } from './store/store';

/** What the worker routes (api/workers.ts) tell the cluster: who is attached, remote workers' output. */
export interface WorkerPresence {
  /** A worker asked for, or is running, a rollout of the run. */
  saw(runId: string, worker: string): void;
  /** More of a remote worker's harness output for the attempt, as it came. */
  appendOutput(attemptId: string, chunk: string): void;
  /** The attempt is over: no more output comes. */
  closeOutput(attemptId: string): void;
}

/** Starts and stops runs (the cluster's scheduler); the REST API calls it after creating a run. */
export interface RunController {
  start(runId: string): Promise<void>;
  stop(runId: string): Promise<void>;
  close(): Promise<void>;
  /** Who runs the run's rollouts now: attached workers, the daemon's own (null: no such run). */
  runWorkers(runId: string): Promise<RunWorkers | null>;
  /** The tail of an attempt's output (attempts the daemon's own workers ran; null: none kept). */
  attemptOutput(attemptId: string): AttemptOutput | null;
  /** Told of every claim, heartbeat and output of the workers. */
  readonly workers: WorkerPresence;
  /** Seconds between worker heartbeats (told to the worker with each claim). */
  readonly heartbeatSeconds: number;
}

/** Starts and stops harness evolutions (daemon/evolve). */
export interface EvolutionController {
  start(id: string): Promise<void>;
  /** Go on with an evolution that is not running, from what it stored. */
  resume(id: string): Promise<void>;
  stop(id: string): Promise<void>;
  close(): Promise<void>;
}

export interface DaemonContext {
  store: Store;
  config: DaemonConfig;
  /** The daemon's access token (full access to /api and the proxy). */
  token: string;
  dataDir: string;
  /** http://127.0.0.1:PORT once listening. */
  baseUrl(): string;
  log(message: string, detail?: Record<string, unknown>): void;
  /** Set once the cluster is registered. */
  runs?: RunController;
  /** Set once the cluster is registered. */
  evolutions?: EvolutionController;
  /** Metrics and span export, told of each recorded LLM call (never throws, never waits). */
  telemetry?: { onCall(call: NewLlmCall): void };
  /** The proxy's inference backends as they stand; set once the proxy is registered. */
  backends?: () => BackendStatus[];
}
