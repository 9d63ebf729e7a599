// Proof of learnability without the daemon: the engine's HTTP server, the real agent (official openai
// client) through a tiny recording proxy, a local GRPO batch builder (spec/samples.md: exact prefix
// merge, grpo advantages, token-mean weights) and the engine's trainer.
//   npx tsx daemon/engine/learn.ts [--steps 30] [--groups 4] [--lr 0.02] [--seeds 1,2,3]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runRollout } from '../../examples/math-agent/agent';
import type { Sample, TrainBatch } from '../protocol/training';
import { startReferenceEngine } from './index';

export interface RecordedCall {
  prompt_ids: number[];
  response_ids: number[];
  logprobs: number[];
}

/** A recording proxy: /r/<rollout>/v1/chat/completions → engine, asking for token ids and logprobs. */
export async function startRecorder(engineUrl: string) {
  const calls = new Map<string, RecordedCall[]>();
  const server = createServer(async (req: IncomingMessage, res) => {
    try {
      const m = /^\/r\/([^/]+)\/v1(\/.*)$/.exec(req.url ?? '');
      if (!m) {
        res.writeHead(404).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = {
        ...JSON.parse(Buffer.concat(chunks).toString('utf8')),
        return_token_ids: true,
        logprobs: true,
      };
      const up = await fetch(engineUrl + m[2], {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await up.text();
      if (up.ok) {
        const j = JSON.parse(text);
        const list = calls.get(m[1]) ?? [];
        list.push({
          prompt_ids: j.prompt_token_ids,
          response_ids: j.choices[0].token_ids,
          logprobs: j.choices[0].logprobs.content.map((x: { logprob: number }) => x.logprob),
        });
        calls.set(m[1], list);
      }
      res.writeHead(up.status, { 'content-type': 'application/json' }).end(text);
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseURL: (rollout: string) => `http://127.0.0.1:${port}/r/${rollout}/v1`,
    take: (rollout: string) => {
      const c = calls.get(rollout) ?? [];
      calls.delete(rollout);
      return c;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Exact prefix merge of one rollout's calls (spec/samples.md). */
export function mergeCalls(calls: RecordedCall[]): { ids: number[]; mask: number[]; old: number[] }[] {
  const out: { ids: number[]; mask: number[]; old: number[] }[] = [];
  let cur: { ids: number[]; mask: number[]; old: number[] } | null = null;
  for (const c of calls) {
    if (cur && c.prompt_ids.length >= cur.ids.length && cur.ids.every((t, i) => c.prompt_ids[i] === t)) {
      for (const t of c.prompt_ids.slice(cur.ids.length)) {
        cur.ids.push(t);
        cur.mask.push(0);
        cur.old.push(Number.NaN);
      }
    } else {
      if (cur) out.push(cur);
      cur = {
        ids: [...c.prompt_ids],
        mask: c.prompt_ids.map(() => 0),
        old: c.prompt_ids.map(() => Number.NaN),
      };
    }
    c.response_ids.forEach((t, i) => {
      cur!.ids.push(t);
      cur!.mask.push(1);
      cur!.old.push(c.logprobs[i]);
    });
  }
  if (cur) out.push(cur);
  return out;
}

/** GRPO advantages per group, token-mean weights over the batch. */
export function buildBatch(
  groups: { rewards: number[]; calls: RecordedCall[][] }[],
  step: number,
  version: number,
  lr: number,
): TrainBatch {
  const samples: Sample[] = [];
  groups.forEach((g, gi) => {
    const n = g.rewards.length;
    const mean = g.rewards.reduce((a, b) => a + b, 0) / n;
    const std = n > 1 ? Math.sqrt(g.rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1)) : 0;
    g.calls.forEach((calls, ri) => {
      const A = n > 1 && std > 0 ? (g.rewards[ri] - mean) / (std + 1e-6) : 0;
      mergeCalls(calls).forEach((m, index) => {
        samples.push({
          rollout_id: `${gi}-${ri}`,
          group_id: String(gi),
          index,
          input_ids: Int32Array.from(m.ids),
          loss_mask: Uint8Array.from(m.mask),
          advantages: Float32Array.from(m.mask.map((k) => k * A)),
          old_logprobs: Float64Array.from(m.old),
          loss_weights: new Float64Array(m.ids.length),
        });
      });
    });
  });
  const T = samples.reduce((s, x) => s + x.loss_mask.reduce((a, b) => a + b, 0), 0);
  for (const s of samples)
    for (let t = 0; t < s.loss_mask.length; t++) s.loss_weights[t] = s.loss_mask[t] / Math.max(T, 1);
  return {
    run_id: 'learn',
    step,
    model_version: version,
    loss: { clip_low: 0.2, clip_high: 0.28, tis_cap: 2, kl_coef: 0, learning_rate: lr },
    samples,
  };
}

export interface LearnOptions {
  seed: number;
  steps: number;
  groupsPerStep: number;
  n: number;
  lr: number;
  /** false: never train (the frozen baseline) */
  train: boolean;
  log?: (line: string) => void;
}

export interface LearnResult {
  rewards: number[];
  correct: number[];
  seconds: number;
}

export async function learn(o: LearnOptions): Promise<LearnResult> {
  const tasks = readFileSync(new URL('../../examples/math-agent/tasks.jsonl', import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
  const dataDir = mkdtempSync(join(tmpdir(), 'hrl-learn-'));
  const engine = await startReferenceEngine({ dataDir, seed: o.seed, resume: false });
  const rec = await startRecorder(engine.url);
  const started = performance.now();
  const rewards: number[] = [];
  const correct: number[] = [];
  let taskAt = (o.seed * 37) % tasks.length;
  try {
    for (let step = 0; step < o.steps; step++) {
      const groups = await Promise.all(
        Array.from({ length: o.groupsPerStep }, async (_, g) => {
          const task = tasks[taskAt++ % tasks.length];
          const results = await Promise.all(
            Array.from({ length: o.n }, (_, i) => {
              const id = `s${step}g${g}r${i}`;
              return runRollout({
                baseURL: rec.baseURL(id),
                apiKey: 'none',
                model: 'reference',
                task,
                seed: o.seed * 1_000_003 + step * 1000 + g * 10 + i,
              }).then((r) => ({ ...r, calls: rec.take(id) }));
            }),
          );
          return {
            rewards: results.map((r) => r.reward),
            calls: results.map((r) => r.calls),
            correct: results.map((r) => r.correct),
          };
        }),
      );
      const all = groups.flatMap((g) => g.rewards);
      const mean = all.reduce((a, b) => a + b, 0) / all.length;
      const acc = groups.flatMap((g) => g.correct).filter(Boolean).length / all.length;
      rewards.push(mean);
      correct.push(acc);
      let info = '';
      if (o.train) {
        const r = await engine.trainer.train(buildBatch(groups, step, engine.version(), o.lr));
        info = ` v${r.model_version} loss ${r.loss.toFixed(4)} ent ${r.entropy.toFixed(2)} clip ${r.clip_fraction.toFixed(2)} train ${r.seconds.toFixed(2)}s`;
      }
      o.log?.(
        `seed ${o.seed} step ${step} reward ${mean.toFixed(3)} correct ${acc.toFixed(2)}${info} t=${((performance.now() - started) / 1000).toFixed(1)}s`,
      );
    }
  } finally {
    await rec.close();
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { rewards, correct, seconds: (performance.now() - started) / 1000 };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (k: string, d: string) => {
    const i = process.argv.indexOf(`--${k}`);
    return i > 0 ? process.argv[i + 1] : d;
  };
  const steps = Number(arg('steps', '30'));
  const groupsPerStep = Number(arg('groups', '4'));
  const lr = Number(arg('lr', '0.02'));
  const seeds = arg('seeds', '1,2,3').split(',').map(Number);
  const quiet = process.argv.includes('--quiet');
  for (const seed of seeds) {
    const frozen = await learn({ seed, steps: 5, groupsPerStep, n: 8, lr, train: false });
    const trained = await learn({
      seed,
      steps,
      groupsPerStep,
      n: 8,
      lr,
      train: true,
      log: quiet ? undefined : console.log,
    });
    console.log(
      JSON.stringify({
        seed,
        frozen_reward: +mean(frozen.rewards).toFixed(3),
        first5_reward: +mean(trained.rewards.slice(0, 5)).toFixed(3),
        last5_reward: +mean(trained.rewards.slice(-5)).toFixed(3),
        last5_correct: +mean(trained.correct.slice(-5)).toFixed(3),
        seconds: +trained.seconds.toFixed(1),
      }),
    );
  }
}
