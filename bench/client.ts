// The benches' harness side: timed chat calls over a keep-alive agent, as a harness makes them.
import { type Agent, type IncomingMessage, request } from 'node:http';
import type { Json } from '../daemon/proxy/json';

export interface Target {
  base: string;
  key: string;
}

export interface Timed {
  /** Time to the first content token of an SSE stream (or the whole body). */
  firstMs: number;
  totalMs: number;
  /** Content tokens of an SSE stream (0 for a plain body). */
  tokens: number;
}

/** POSTs `body` as JSON to `url` with the rollout's key, as a harness does; the response once it starts. */
function postBody(agent: Agent, url: string, key: string, body: object): Promise<IncomingMessage> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          authorization: `Bearer ${key}`,
        },
      },
      resolve,
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** One POST of `body` as JSON to `url`; rejects on a status other than 200, with the body's start. */
export async function post(agent: Agent, url: string, key: string, body: object): Promise<Timed> {
  const t0 = performance.now();
  const res = await postBody(agent, url, key, body);
  return new Promise((resolve, reject) => {
    let first = -1;
    let tokens = 0;
    let carry = '';
    let text = '';
    const sse = String(res.headers['content-type'] ?? '').includes('event-stream');
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      if (!sse) {
        if (res.statusCode !== 200) text += c;
        return;
      }
      carry += c;
      let at = carry.indexOf('\n\n');
      while (at >= 0) {
        const ev = carry.slice(0, at);
        carry = carry.slice(at + 2);
        if (ev.includes('"content":"') && !ev.includes('"content":""')) {
          tokens++;
          if (first < 0) first = performance.now() - t0;
        }
        at = carry.indexOf('\n\n');
      }
    });
    res.on('end', () => {
      const totalMs = performance.now() - t0;
      if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
      resolve({ firstMs: first >= 0 ? first : totalMs, totalMs, tokens });
    });
    res.on('error', reject);
  });
}

/** One POST of `body` as JSON to `url`, resolving with the parsed answer; rejects on a status other than 200. */
export async function postJson(agent: Agent, url: string, key: string, body: object): Promise<Json> {
  const res = await postBody(agent, url, key, body);
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      text += c;
    });
    res.on('end', () => {
      if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
      try {
        resolve(JSON.parse(text));
      } catch (e) {
        reject(e as Error);
      }
    });
    res.on('error', reject);
  });
}

/** A chat request to the toy model. */
export const chat = (content: string, extra: object = {}) => ({
  model: 'toy',
  messages: [{ role: 'user', content }],
  max_tokens: 16,
  ...extra,
});
