// Typed REST + live events client for the daemon. No vscode import: unit tests and scripts use it too.
// Every response is validated with the shared protocol schemas, so a daemon/extension mismatch
// shows as one clear error naming the field instead of a broken tree.
import WebSocket from 'ws';
import { z } from 'zod';
import { readReply, restFetch } from '../../daemon/api/rest-call';
import {
  CreatedRecording,
  type CreateRecordingBody,
  type CreateRunBody,
  EventsTicket,
  GroupDetail,
  type GroupQuery,
  Health,
  type RewardBody,
  RolloutDetail,
  type RolloutQuery,
} from '../../daemon/protocol/api';
import {
  AttemptOutput,
  Group,
  NodeInfo,
  Recording,
  Rollout,
  Run,
  type RunKind,
  RunMetrics,
  RunWorkers,
} from '../../daemon/protocol/entities';
import { Comparison, type CreateEvaluationBody, Evaluation } from '../../daemon/protocol/evaluation';
import { DaemonEvent } from '../../daemon/protocol/events';
import { CandidateFiles, Evolution, EvolutionDetail } from '../../daemon/protocol/evolution';
import { StepValidation } from '../../daemon/protocol/training';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly field: string | null = null,
    readonly code = 'error',
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const ErrorShape = z.object({
  error: z.object({ message: z.string(), field: z.string().nullish(), code: z.string().nullish() }),
});

/** A page `{items, next_cursor}`; a plain array is accepted as one complete page. */
const pageOf = <T extends z.ZodTypeAny>(item: T) =>
  z.union([
    z.object({
      items: z.array(item),
      next_cursor: z
        .string()
        .nullish()
        .transform((c) => c ?? null),
    }),
    z.array(item).transform((items) => ({ items, next_cursor: null })),
  ]);
/** A list; `{items}` pages are flattened. */
const listOf = <T extends z.ZodTypeAny>(item: T) =>
  z.union([z.array(item), z.object({ items: z.array(item) }).transform((p) => p.items)]);

export interface PageResult<T> {
  items: T[];
  next_cursor: string | null;
}

export type RolloutFilterQuery = Partial<Omit<RolloutQuery, 'limit'>> & { limit?: number };

export interface EventStream {
  close(): void;
}

export class DaemonClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string,
    private readonly timeoutMs = 15_000,
  ) {}

  async request<S extends z.ZodTypeAny>(
    method: string,
    path: string,
    schema: S,
    body?: unknown,
    timeoutMs = this.timeoutMs,
  ): Promise<z.output<S>> {
    const url = new URL(path, this.baseUrl).toString();
    let res: Response;
    try {
      res = await restFetch(url, method, this.token, body, AbortSignal.timeout(timeoutMs));
    } catch (err) {
      throw new ApiError(
        `cannot reach the daemon at ${this.baseUrl}: ${errorText(err)}`,
        0,
        null,
        'unreachable',
      );
    }
    const { text, json } = await readReply(res); // json null for non-JSON bodies: reported below
    if (!res.ok) {
      const parsed = ErrorShape.safeParse(json);
      if (parsed.success) {
        const e = parsed.data.error;
        throw new ApiError(e.message, res.status, e.field ?? null, e.code ?? 'error');
      }
      throw new ApiError(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`, res.status);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new ApiError(
        `${method} ${path}: unexpected response: ${z.prettifyError(parsed.error)}`,
        res.status,
        null,
        'bad_response',
      );
    }
    return parsed.data;
  }

  health() {
    return this.request('GET', '/api/health', Health);
  }
  listRuns(cursor?: string, limit = 100, kind?: RunKind): Promise<PageResult<Run>> {
    return this.request('GET', `/api/runs${qs({ cursor, limit, kind })}`, pageOf(Run));
  }
  getRun(id: string): Promise<Run> {
    return this.request('GET', `/api/runs/${enc(id)}`, Run);
  }
  createRun(body: CreateRunBody): Promise<Run> {
    return this.request('POST', '/api/runs', Run, body);
  }
  createEvaluation(
    body: Partial<CreateEvaluationBody> & Pick<CreateEvaluationBody, 'config'>,
  ): Promise<Evaluation> {
    return this.request('POST', '/api/evaluations', Evaluation, body);
  }
  getEvaluation(id: string): Promise<Evaluation> {
    return this.request('GET', `/api/evaluations/${enc(id)}`, Evaluation);
  }
  listEvaluations(): Promise<PageResult<Evaluation>> {
    return this.request('GET', '/api/evaluations?limit=1000', pageOf(Evaluation));
  }
  compareEvaluations(a: string, b: string): Promise<Comparison> {
    return this.request('GET', `/api/evaluations/compare${qs({ a, b })}`, Comparison);
  }
  listEvolutions(): Promise<PageResult<Evolution>> {
    return this.request('GET', '/api/evolutions?limit=100', pageOf(Evolution));
  }
  getEvolution(id: string): Promise<EvolutionDetail> {
    return this.request('GET', `/api/evolutions/${enc(id)}`, EvolutionDetail);
  }
  candidateFiles(evolutionId: string, hash: string): Promise<CandidateFiles> {
    return this.request(
      'GET',
      `/api/evolutions/${enc(evolutionId)}/candidates/${enc(hash)}/files`,
      CandidateFiles,
    );
  }
  /** Go on with an interrupted (or stopped) evolution from what it stored. */
  resumeEvolution(id: string): Promise<Evolution> {
    return this.request('POST', `/api/evolutions/${enc(id)}/resume`, Evolution, {});
  }
  stopEvolution(id: string): Promise<Evolution> {
    return this.request('POST', `/api/evolutions/${enc(id)}/stop`, Evolution, {});
  }
  stopRun(id: string): Promise<unknown> {
    return this.request('POST', `/api/runs/${enc(id)}/stop`, z.unknown(), {});
  }
  /** Go on with a paused (or stopped) run from its stored step. */
  resumeRun(id: string): Promise<Run> {
    return this.request('POST', `/api/runs/${enc(id)}/resume`, Run, {});
  }
  /** A step's train/inference agreement with its rollout-vs-trainer scatter. */
  stepValidation(id: string, step: number): Promise<StepValidation> {
    return this.request('GET', `/api/runs/${enc(id)}/steps/${step}/validation`, StepValidation);
  }
  /** Who runs the run's rollouts: attached workers, and the command that attaches one. */
  runWorkers(id: string): Promise<RunWorkers> {
    return this.request('GET', `/api/runs/${enc(id)}/workers`, RunWorkers);
  }
  /** The tail of an attempt's stdout/stderr (attempts the daemon's own workers ran). */
  attemptOutput(id: string): Promise<AttemptOutput> {
    return this.request('GET', `/api/attempts/${enc(id)}/output`, AttemptOutput);
  }
  runMetrics(id: string): Promise<RunMetrics[]> {
    return this.request('GET', `/api/runs/${enc(id)}/metrics`, listOf(RunMetrics));
  }
  /** The run's groups, newest first; with a rollout filter only those holding a matching rollout. */
  runGroups(id: string, query: Partial<GroupQuery> = {}): Promise<PageResult<Group>> {
    return this.request('GET', `/api/runs/${enc(id)}/groups${qs(query)}`, pageOf(Group));
  }
  getGroup(id: string): Promise<GroupDetail> {
    return this.request('GET', `/api/groups/${enc(id)}`, GroupDetail);
  }
  listRollouts(query: RolloutFilterQuery): Promise<PageResult<Rollout>> {
    return this.request('GET', `/api/rollouts${qs(query)}`, pageOf(Rollout));
  }
  getRollout(id: string): Promise<RolloutDetail> {
    return this.request('GET', `/api/rollouts/${enc(id)}`, RolloutDetail);
  }
  postReward(id: string, body: RewardBody): Promise<unknown> {
    return this.request('POST', `/api/rollouts/${enc(id)}/reward`, z.unknown(), body);
  }
  createRecording(body: CreateRecordingBody): Promise<CreatedRecording> {
    return this.request('POST', '/api/recordings', CreatedRecording, body);
  }
  listRecordings(): Promise<Recording[]> {
    return this.request('GET', '/api/recordings', listOf(Recording));
  }
  stopRecording(id: string): Promise<unknown> {
    return this.request('POST', `/api/recordings/${enc(id)}/stop`, z.unknown(), {});
  }
  listNodes(): Promise<NodeInfo[]> {
    return this.request('GET', '/api/nodes', listOf(NodeInfo));
  }

  /** The URL of a rollout in the REST API (what "Copy rollout URL" copies). */
  /** The rollout's OpenAI-style base URL, what a harness is pointed at (`/r/<id>/v1`, as claims give it). */
  rolloutUrl(id: string): string {
    return new URL(`/r/${enc(id)}/v1`, this.baseUrl).toString();
  }

  /**
   * Live events from GET /api/events (opened with a ticket from POST /api/events/ticket); reconnects
   * with backoff until closed.
   * Messages that do not match DaemonEvent are skipped (a newer daemon may add types).
   */
  events(onEvent: (e: DaemonEvent) => void, onState?: (connected: boolean) => void): EventStream {
    let closed = false;
    let ws: WebSocket | undefined;
    let delay = 250;
    let timer: NodeJS.Timeout | undefined;
    const retry = () => {
      if (closed) return;
      timer = setTimeout(open, delay);
      delay = Math.min(delay * 2, 5_000);
    };
    // Each connection opens with a fresh single-use ticket, so the token never goes into a URL
    // (the same path works where a WebSocket cannot carry headers: browsers, web extension hosts).
    const open = async () => {
      if (closed) return;
      let ticket: EventsTicket;
      try {
        ticket = await this.request('POST', '/api/events/ticket', EventsTicket, {});
      } catch {
        onState?.(false);
        return retry();
      }
      if (closed) return;
      const url = new URL(`/api/events?ticket=${enc(ticket.ticket)}`, this.baseUrl);
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      ws = new WebSocket(url);
      ws.on('open', () => {
        delay = 250;
        onState?.(true);
      });
      ws.on('message', (data) => {
        let json: unknown;
        try {
          json = JSON.parse(String(data));
        } catch {
          return;
        }
        const parsed = DaemonEvent.safeParse(json);
        if (parsed.success) onEvent(parsed.data);
      });
      ws.on('error', () => {});
      ws.on('close', () => {
        onState?.(false);
        retry();
      });
    };
    void open();
    return {
      close() {
        closed = true;
        if (timer) clearTimeout(timer);
        ws?.close();
      },
    };
  }
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '');
  if (entries.length === 0) return '';
  return `?${entries.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join('&')}`;
}

export function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}
