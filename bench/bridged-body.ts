// The JSON text of a bridged call's /v1/completions body (the token prompt of an agent's turn), as
// the proxy writes it: from the last turn's prompt text plus the new ids (PromptTexts, completionText),
// against JSON.stringify of the body. A conversation of 40 turns, each prompt the last one plus 500
// ids (2k → ~22k ids); CPU time of this process per body, median over rounds.
//   proxy.bridged_body  us_per_body: the proxy's text; stringify_us_per_body: JSON.stringify;
//                       bytes_us_per_body: the proxy's text and bytes (what is sent, completionBody);
//                       text_then_encode_us_per_body: its text, then Buffer.from of it (as undici would)
import { loadavg } from 'node:os';
import { completionBody, completionText, PromptTexts } from '../daemon/proxy/bridge';
import { completionRequestFor } from '../daemon/proxy/tito';
import { emit, quantile, round } from './emit';

const TURNS = 40;

function conversation(): number[][] {
  const prompts: number[][] = [];
  let prompt = Array.from({ length: 2000 }, (_, i) => (i * 7919) % 151_000);
  for (let t = 0; t < TURNS; t++) {
    prompts.push(prompt);
    prompt = prompt.concat(Array.from({ length: 500 }, (_, i) => (i * 31 + t) % 151_000));
  }
  return prompts;
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

export default async function main(): Promise<void> {
  const prompts = conversation();
  const chat = { model: 'qwen3-4b', messages: [], max_tokens: 2048, temperature: 1, logprobs: true };
  const bodies = prompts.map((p) => {
    const req = completionRequestFor(chat, p);
    if (!req.ok) throw new Error(req.reason);
    return req.body;
  });
  const rounds = Number(process.env.BENCH_ROUNDS ?? 30);
  const ours: number[] = [];
  const stringified: number[] = [];
  const withBytes: number[] = [];
  const encoded: number[] = [];
  /** CPU µs per body of writing each turn's body with `write`, from the last turn's prompt text. */
  const perBody = (
    write: (body: (typeof bodies)[number], text: string, i: number, texts: PromptTexts) => void,
  ): number => {
    const texts = new PromptTexts();
    const t0 = cpuUs();
    let previous: number[] | null = null;
    for (const [i, body] of bodies.entries()) {
      write(body, texts.text(previous, prompts[i], previous !== null) as string, i, texts);
      previous = prompts[i];
    }
    return (cpuUs() - t0) / TURNS;
  };
  for (let r = 0; r < 5 + rounds; r++) {
    const texts = new PromptTexts();
    let t0 = cpuUs();
    let previous: number[] | null = null;
    for (const [i, body] of bodies.entries()) {
      const text = completionText(body, texts.text(previous, prompts[i]) as string);
      if (r === 0 && text !== JSON.stringify(body)) throw new Error(`turn ${i}: the texts differ`);
      previous = prompts[i];
    }
    const mine = (cpuUs() - t0) / TURNS;
    t0 = cpuUs();
    for (const body of bodies) JSON.stringify(body);
    const theirs = (cpuUs() - t0) / TURNS;
    const bytes = perBody((body, text, i, texts) => {
      const b = completionBody(body, text);
      if (b) texts.within(prompts[i], text, b.text, b.at);
      if (r === 0 && !b?.bytes.equals(Buffer.from(JSON.stringify(body))))
        throw new Error(`turn ${i}: bytes differ`);
    });
    const thenEncoded = perBody((body, text) => Buffer.from(completionText(body, text) as string));
    if (r < 5) continue;
    ours.push(mine);
    stringified.push(theirs);
    withBytes.push(bytes);
    encoded.push(thenEncoded);
  }
  const a = quantile(ours, 0.5);
  const b = quantile(stringified, 0.5);
  emit('proxy.bridged_body', {
    turns: TURNS,
    mean_prompt_tokens: Math.round(prompts.reduce((s, p) => s + p.length, 0) / TURNS),
    us_per_body: round(a, 1),
    stringify_us_per_body: round(b, 1),
    speedup: round(b / a, 2),
    bytes_us_per_body: round(quantile(withBytes, 0.5), 1),
    text_then_encode_us_per_body: round(quantile(encoded, 0.5), 1),
    loadavg_1m: round(loadavg()[0], 2),
  });
}
