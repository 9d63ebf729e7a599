// The daemon's own tokenizer is loaded ahead of the first bridged call (when a backend says it serves
// the model), so that call does not hold the event loop for the load (~1 s for Qwen3).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { qwen3ModelFolder } from '../tokenize/qwen3';
import type { LocalTokenizers } from '../tokenize/registry';
import { BridgeMemory, localTokenizers } from './bridge';

/** The longest the event loop was held (ms) while `f` ran. */
async function longestStall(f: () => Promise<unknown>): Promise<number> {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  await f();
  await new Promise((resolve) => setTimeout(resolve, 20));
  h.disable();
  return h.max / 1e6;
}

const BACKEND = 'http://127.0.0.1:1';

async function settled(locals: LocalTokenizers, model: string, withinMs: number): Promise<boolean> {
  const end = Date.now() + withinMs;
  while (!locals.settled(model, '') && Date.now() < end)
    await new Promise((resolve) => setTimeout(resolve, 25));
  return locals.settled(model, '');
}

describe('the daemon tokenizer’s load', () => {
  it('holds no bridged call: a model_files model is loaded once a backend serves it, the first call does not wait for it', async () => {
    const locals = localTokenizers({
      model_files: { qwen3: qwen3ModelFolder },
      tokenizer_check_every: 64,
    }) as LocalTokenizers;
    const memory = new BridgeMemory(undefined, locals);
    // what the pool says once it has asked the backend (BackendPool.onServed), before any call
    memory.served(BACKEND, ['qwen3', 'another']);
    await settled(locals, 'qwen3', 10_000);
    const stall = await longestStall(async () => {
      const { tok } = await locals.get('qwen3', BACKEND);
      tok?.encode(tok.renderText([{ role: 'user', content: 'hi' }], undefined, true));
    });
    expect(stall).toBeLessThan(150);
  }, 30_000);

  it('loads nothing for a model no backend serves (the idle daemon holds no tokenizer)', async () => {
    const locals = localTokenizers({
      model_files: { qwen3: qwen3ModelFolder },
      tokenizer_check_every: 64,
    }) as LocalTokenizers;
    new BridgeMemory(undefined, locals).served(BACKEND, ['another']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(locals.settled('qwen3', '')).toBe(false);
  });
});
