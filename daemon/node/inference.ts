// The inference role: in front of an existing vLLM server (--vllm-url), one the agent starts and keeps
// up (--vllm-cmd), or the built-in reference engine (--engine reference). Tunnelled HTTP requests are
// forwarded to it and streamed back frame by frame; new weights are received, checked and loaded —
// LoRA adapters through vLLM's /v1/load_lora_adapter, full weights between its dev-mode /pause and
// /resume (/collective_rpc reload_weights) — while new requests wait in a queue. Weights loaded at run
// time live in vLLM's memory only: when the vLLM it started restarts, the node forgets them, reports
// not ready and holds calls until the daemon has sent each run's weights again. The served model's
// tokenizer files it answers itself (./model-files), for the daemon's bridge.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hasWeights, loadWeightsOverHttp, pruneVersions, WeightsReceiver } from '../cluster/weights';
import { type ReferenceEngine, startReferenceEngine } from '../engine';
import { type BackendResponse, readText, SendError, send } from '../http';
import type { Frame } from '../protocol/frames';
import type { NodeMessageOf, WeightsRef } from '../protocol/node';
import type { Peer, Role } from './agent';
import { ModelFileServer } from './model-files';
import { Supervised } from './process';
import { vllmFlags } from './vllm-command';

export interface InferenceRoleOptions {
  dataDir: string;
  /** An existing vLLM server (or where --vllm-cmd's server listens). */
  vllmUrl?: string;
  /** A command that starts vLLM's server at vllmUrl (default http://127.0.0.1:8000). */
  vllmCmd?: string;
  engine?: 'reference';
  /** Added to the started vLLM's environment (CUDA_VISIBLE_DEVICES, the runtime-LoRA and dev-mode switches). */
  env?: Record<string, string>;
  /** Received weight versions kept on disk per run (default 2). */
  keepWeights?: number;
  /** The served model's tokenizer files (--model-files); default: the folder vLLM says it serves. */
  modelFiles?: string;
  log: (message: string, detail?: Record<string, unknown>) => void;
}

const root = (url: string) => url.replace(/\/+$/, '').replace(/\/v1$/, '');

export class InferenceRole implements Role {
  readonly role = 'inference' as const;
  readonly backend: string;
  private url = '';
  private engine: ReferenceEngine | null = null;
  private process: Supervised | null = null;
  private ready = false;
  private inFlight = 0;
  private waiting = 0;
  private loadingNow: Promise<void> | null = null;
  private readonly versions: Record<string, number> = {};
  private readonly loaded = new Set<string>();
  private readonly cancels = new Map<string, () => void>();
  private readonly receivers = new Map<string, WeightsReceiver>();
  private lastError: string | null = null;
  private healthTimer: NodeJS.Timeout | null = null;
  private drained: (() => void) | null = null;
  private probing: Promise<void> | null = null;
  /**
   * Runs whose weights the started vLLM lost when it restarted (its adapters and reloaded weights were in
   * memory only): until each is loaded again the node is not ready and holds calls, so no call is served
   * by the base model under a run's newer version.
   */
  private readonly lost = new Set<string>();
  private readonly modelFiles: ModelFileServer;

  constructor(private readonly options: InferenceRoleOptions) {
    this.modelFiles = new ModelFileServer(options.modelFiles, () => this.url);
    this.backend = options.engine
      ? 'reference'
      : options.vllmCmd
        ? `vllm-cmd (${options.vllmUrl ?? 'http://127.0.0.1:8000'})`
        : `vllm-url ${options.vllmUrl}`;
  }

  async start(): Promise<void> {
    const o = this.options;
    if (o.engine === 'reference') {
      this.engine = await startReferenceEngine({ dataDir: join(o.dataDir, 'reference'), resume: false });
      this.url = root(this.engine.url);
    } else {
      if (!o.vllmUrl && !o.vllmCmd)
        throw new Error('the inference role needs --vllm-url, --vllm-cmd or --engine reference');
      this.url = root(o.vllmUrl ?? 'http://127.0.0.1:8000');
      if (o.vllmCmd) {
        this.process = new Supervised({
          command: o.vllmCmd,
          name: 'vllm',
          log: o.log,
          env: { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True', VLLM_SERVER_DEV_MODE: '1', ...o.env },
          onExit: () => this.forgetLoaded(),
        });
        this.process.start();
      }
    }
    await this.checkHealth();
    this.healthTimer = setInterval(() => void this.checkHealth(), 2000);
    this.healthTimer.unref();
  }

  /** The started vLLM exited: what it had loaded is gone; its runs need their weights again. */
  private forgetLoaded(): void {
    this.ready = false;
    for (const run of Object.keys(this.versions)) {
      this.lost.add(run);
      delete this.versions[run];
    }
    this.loaded.clear();
  }

  private async checkHealth(): Promise<void> {
    try {
      const res = await send(`${this.url}/health`, { method: 'GET', timeoutMs: 5000 });
      await readText(res);
      this.ready = res.statusCode === 200;
      if (this.ready) this.lastError = null;
      else this.lastError = `backend /health answered ${res.statusCode}`;
    } catch (err) {
      this.ready = false;
      this.lastError = this.process?.lastError ?? `backend ${this.url}: ${(err as Error).message}`;
    }
  }

  private async untilReady(deadline: number, cancelled: () => boolean, withWeights = false): Promise<void> {
    this.waiting++;
    try {
      while ((!this.ready || (withWeights && this.lost.size > 0)) && !cancelled() && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        // One /health probe at a time, however many requests wait.
        this.probing ??= this.checkHealth().finally(() => {
          this.probing = null;
        });
        await this.probing;
      }
    } finally {
      this.waiting--;
    }
  }

  health() {
    return {
      ready: this.ready && this.lost.size === 0,
      queue_depth: this.waiting,
      in_flight: this.inFlight,
      loading: this.loadingNow !== null,
      versions: { ...this.versions },
      restarts: this.process?.restarts ?? 0,
      last_error: this.lastError,
      vllm: this.options.vllmCmd ? vllmFlags(this.options.vllmCmd) : null,
    };
  }

  handle(frame: Frame, peer: Peer): void {
    const h = frame.header;
    switch (h.t) {
      case 'http':
        if (ModelFileServer.handles(h.path)) void this.serveModelFiles(h.id, h.path, peer);
        else void this.http(h, frame.payload, peer);
        return;
      case 'cancel':
        this.cancels.get(h.id)?.();
        return;
      case 'weights_check':
        void this.reply(peer, h.id, async () => ({
          t: 'weights_present' as const,
          id: h.id,
          present: (await this.localWeights(h.run_id, h.weights)) !== null,
        }));
        return;
      case 'file':
        void this.receive(h, frame.payload);
        return;
      case 'weights_load':
        void this.reply(peer, h.id, async () => {
          await this.load(h);
          return { t: 'weights_loaded' as const, id: h.id, key: h.key, version: h.weights.version };
        });
        return;
      default:
        if ('id' in h)
          void peer.send({ t: 'error', id: h.id, message: `an inference node does not take ${h.t}` });
    }
  }

  private async reply(
    peer: Peer,
    id: string,
    work: () => Promise<Parameters<Peer['send']>[0]>,
  ): Promise<void> {
    try {
      await peer.send(await work());
    } catch (err) {
      await peer.send({ t: 'error', id, message: (err as Error).message });
    }
  }

  /** The served model's tokenizer files, answered by the node itself (1 MiB a frame). */
  private async serveModelFiles(id: string, path: string, peer: Peer): Promise<void> {
    try {
      const { status, headers, body } = await this.modelFiles.answer(path);
      await peer.send({ t: 'http_head', id, status, headers });
      for (let at = 0; at < body.length; at += 1 << 20)
        await peer.send({ t: 'http_data', id }, body.subarray(at, at + (1 << 20)));
      await peer.send({ t: 'http_end', id });
    } catch (err) {
      await peer.send({ t: 'http_error', id, kind: 'other', message: (err as Error).message });
    }
  }

  /** Holds a call while weights load, and while a server this agent runs is not up or lost its weights. */
  private async untilServing(deadlineMs: number, cancelled: () => boolean): Promise<void> {
    if (this.loadingNow) {
      this.waiting++;
      try {
        while (this.loadingNow) await this.loadingNow.catch(() => {});
      } finally {
        this.waiting--;
      }
    }
    // A server this agent starts (or restarts) is not up yet, or lost its weights: wait for it (and for
    // the daemon to send them again), as for loading weights.
    if (this.process && (!this.ready || this.lost.size > 0))
      await this.untilReady(Date.now() + deadlineMs, cancelled, true);
  }

  private async http(h: NodeMessageOf<'http'>, body: Buffer, peer: Peer): Promise<void> {
    const id = h.id;
    let cancelled = false;
    let abort: (() => void) | null = null;
    this.cancels.set(id, () => {
      cancelled = true;
      abort?.();
    });
    try {
      await this.untilServing(h.deadline_ms, () => cancelled);
      if (cancelled) return;
      this.inFlight++;
      let res: Awaited<ReturnType<typeof send>>;
      try {
        res = await send(this.url + h.path, {
          method: h.method,
          body: h.method === 'POST' ? body : undefined,
          headers: h.headers,
          timeoutMs: h.deadline_ms,
          onRequest: (a) => {
            abort = a;
          },
        });
      } catch (err) {
        this.finish();
        const kind = err instanceof SendError ? err.kind : 'other';
        await peer.send({ t: 'http_error', id, kind, message: (err as Error).message });
        return;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers[k] = v;
      await peer.send({ t: 'http_head', id, status: res.statusCode ?? 502, headers });
      await relayBody(res, id, peer, () => cancelled);
      this.finish();
    } finally {
      this.cancels.delete(id);
    }
  }

  private finish(): void {
    this.inFlight--;
    if (this.inFlight === 0) this.drained?.();
  }

  /** A folder here that holds `weights`: the trainer's own path (shared filesystem) or a received copy. */
  private async localWeights(runId: string, weights: WeightsRef): Promise<string | null> {
    const copy = this.weightsDir(runId, weights.version);
    for (const dir of [weights.path, copy])
      if (existsSync(dir) && (await hasWeights(dir, weights))) return dir;
    return null;
  }

  private weightsDir(runId: string, version: number): string {
    return join(this.options.dataDir, 'weights', runId.replace(/[^\w.-]/g, '_'), `v${version}`);
  }

  private async receive(h: NodeMessageOf<'file'>, bytes: Buffer): Promise<void> {
    let receiver = this.receivers.get(h.id);
    if (!receiver) {
      receiver = new WeightsReceiver(join(this.options.dataDir, 'incoming', h.id.replace(/[^\w.-]/g, '_')));
      this.receivers.set(h.id, receiver);
    }
    await receiver.write(h.name, h.offset, bytes);
  }

  private async load(h: NodeMessageOf<'weights_load'>): Promise<void> {
    if (this.loaded.has(h.key)) return;
    const receiver = this.receivers.get(h.id);
    if (receiver) {
      this.receivers.delete(h.id);
      await receiver.commit(h.weights, this.weightsDir(h.run_id, h.weights.version));
    }
    const dir = await this.localWeights(h.run_id, h.weights);
    if (!dir)
      throw new Error(`the files of version ${h.weights.version} are not on this node (send them first)`);
    if (h.weights.format === 'lora') await this.checkLoraRank(dir);
    while (this.loadingNow) await this.loadingNow.catch(() => {});
    const work = (async () => {
      // A vLLM this node starts (or restarts) loads once it answers /health.
      if (this.process && !this.ready) await this.untilReady(Date.now() + 600_000, () => false);
      // Requests already running finish on the old weights (their records carry its version).
      if (this.inFlight > 0) await new Promise<void>((r) => (this.drained = r));
      this.drained = null;
      await this.loadInto(dir, h.model, h.weights);
    })();
    this.loadingNow = work;
    try {
      await work;
      this.versions[h.run_id] = h.weights.version;
      this.loaded.add(h.key);
      this.lost.delete(h.run_id);
      this.options.log('weights loaded', {
        run_id: h.run_id,
        version: h.weights.version,
        format: h.weights.format,
      });
    } catch (err) {
      this.lastError = `loading version ${h.weights.version} failed: ${(err as Error).message}`;
      throw new Error(this.lastError);
    } finally {
      // Cleared in the same turn the work ends: calls waiting on it re-check loadingNow at once.
      this.loadingNow = null;
    }
    await this.prune(h.run_id, dir);
  }

  /** Old received copies go (the newest --keep-weights stay; never the one just loaded). */
  private async prune(runId: string, loaded: string): Promise<void> {
    const dir = join(this.options.dataDir, 'weights', runId.replace(/[^\w.-]/g, '_'));
    const removed = await pruneVersions(dir, this.options.keepWeights ?? 2, [loaded]);
    if (removed.length > 0) this.options.log('old weights removed', { run_id: runId, removed });
  }

  /**
   * A LoRA adapter vLLM cannot take fails here naming the flag: the started command's --enable-lora and
   * --max-lora-rank (default 16, vllm/config/lora.py:33) against the adapter's rank `r`.
   */
  private async checkLoraRank(dir: string): Promise<void> {
    const vllm = this.options.vllmCmd ? vllmFlags(this.options.vllmCmd) : null;
    if (!vllm) return;
    if (!vllm.enable_lora)
      throw new Error("this node started vLLM without --enable-lora: it cannot load a LoRA run's adapters");
    let rank: number | undefined;
    try {
      rank = (JSON.parse(await readFile(join(dir, 'adapter_config.json'), 'utf8')) as { r?: number }).r;
    } catch {
      return;
    }
    if (rank !== undefined && rank > vllm.max_lora_rank)
      throw new Error(
        `the adapter's LoRA rank ${rank} is above this node's vLLM --max-lora-rank ${vllm.max_lora_rank}: restart the node with --max-lora-rank ${rank} or more`,
      );
  }

  private async post(path: string, body: unknown): Promise<{ status: number; text: string }> {
    const res = await send(this.url + path, { body: JSON.stringify(body), timeoutMs: 600_000 });
    return { status: res.statusCode ?? 0, text: await readText(res) };
  }

  private loadInto(dir: string, model: string, weights: WeightsRef): Promise<void> {
    return loadWeightsOverHttp((path, body) => this.post(path, body), dir, model, weights.format);
  }

  disconnected(): void {
    // Transfers of that connection are abandoned; the daemon sends them again.
    for (const [id, receiver] of this.receivers) {
      this.receivers.delete(id);
      void receiver.discard();
    }
  }

  async close(): Promise<void> {
    if (this.healthTimer) clearInterval(this.healthTimer);
    for (const cancel of this.cancels.values()) cancel();
    await this.process?.stop();
    await this.engine?.close();
  }
}

/**
 * A backend answer's body to the daemon as `http_data` frames, then `http_end` (or `http_error` when the
 * backend closed it early). The chunks read in one turn of the event loop go as one frame (a streaming
 * backend writes each token on its own; a frame and a socket write per token cost the node ~4x the CPU);
 * one chain per request keeps its frames in order, and the body pauses while the socket is full.
 */
function relayBody(res: BackendResponse, id: string, peer: Peer, cancelled: () => boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    let ended = false;
    let chain = Promise.resolve();
    const queue = (header: Parameters<Peer['send']>[0], payload?: Buffer) => {
      chain = chain.then(() => peer.send(header, payload));
      return chain;
    };
    let pending: Buffer[] = [];
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (pending.length === 0) return;
      const payload = pending.length === 1 ? pending[0] : Buffer.concat(pending);
      pending = [];
      res.pause();
      void queue({ t: 'http_data', id }, payload).then(() => res.resume());
    };
    res.on('data', (chunk: Buffer) => {
      pending.push(chunk);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
    res.on('end', () => {
      ended = true;
      flush();
      void queue({ t: 'http_end', id }).then(resolve);
    });
    res.on('close', () => {
      if (ended) return;
      flush();
      void queue({
        t: 'http_error',
        id,
        kind: cancelled() ? 'aborted' : 'other',
        message: 'the backend closed the response before its end',
      }).then(resolve);
    });
  });
}
