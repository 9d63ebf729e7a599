// Malformed input on every route, against a real `harness-rl daemon` process on each store: the REST
// table (the worker routes among them, from the daemon's own OpenAPI document, body fields and all), and
// every proxy route of PROXY_ROUTES, unscoped and under /r/<rollout id>/. A route added to either
// table is fuzzed without touching this file. No input may get a 5xx, hang, or end the process.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROXY_ROUTES } from '../../daemon/proxy/route-table';
import { dropPgSchema, PG_SHOWN, pgSchemaUrl, postgresProblem } from '../../daemon/store/pg-testing';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startDaemonProcess } from '../helpers/daemon';

/** Path segments whose escapes do not decode, or decode to what no id may hold. */
const BAD_SEGMENTS = [
  '%',
  '%E0%A4%A',
  '%zz',
  '%ff',
  '%C0%AF',
  '%00',
  'a%00b',
  '%0d%0a',
  '%u0041',
  '%25',
  'a%2Fb',
  '..',
  '%2e%2e',
  'x'.repeat(300),
  encodeURIComponent('é😀\u202e'),
];
const BAD_QUERIES = [
  '?cursor=zzz',
  '?cursor=%',
  '?cursor=%00',
  '?limit=-1',
  '?limit=abc',
  '?limit=1e309',
  '?limit=1&limit=2',
  '?unknown=1',
  '?%=%',
  '?key=%E0%A4%A',
  '?run_id=%00',
  '?status=%ff',
  `?cursor=${'x'.repeat(3000)}`,
];
/** Values each declared query parameter gets in turn. */
const BAD_QUERY_VALUES = ['', '%', '%E0%A4%A', '%00', '-1', 'abc', '1e999', 'x'.repeat(3000)];
/** Values each declared body field gets in turn (wrong types, NULs, extremes, malformed escapes). */
const BAD_VALUES: unknown[] = [
  null,
  '',
  'a\u0000b',
  '%E0%A4%A',
  -1,
  1e308,
  3_000_000_000,
  true,
  [null],
  {},
  { a: '\u0000' },
  'x'.repeat(5000),
];
const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
/** Whole bodies that are not what any route takes. */
const BAD_BODIES = ['', 'null', '[]', '"s"', '1', '{', '{"a":', deep(300), '{"__proto__":{"x":1}}', '\u0000'];

/** A well-formed body per proxy route, mutated one field at a time. */
const WIRE_BODIES: Record<string, Record<string, unknown>> = {
  '/v1/chat/completions': { model: 'toy', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 },
  '/v1/completions': { model: 'toy', prompt: 'hi', max_tokens: 4 },
  '/v1/responses': { model: 'toy', input: 'hi', max_output_tokens: 4 },
  '/v1/messages': { model: 'toy', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] },
  '/v1/messages/count_tokens': { model: 'toy', messages: [{ role: 'user', content: 'hi' }] },
  gemini: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 4 } },
};
/** Fields the wire APIs know beyond the base bodies (the README's checks name each). */
const WIRE_FIELDS = [
  'stream',
  'tools',
  'tool_choice',
  'store',
  'include',
  'truncation',
  'safetySettings',
  'system',
  'temperature',
  'n',
  'logprobs',
  'stop',
];

interface Sent {
  method: string;
  url: string;
  status: number;
}

interface Target {
  method: string;
  /** With `{param}` placeholders. */
  path: string;
  /** Declared JSON body properties (from the OpenAPI document), or the proxy's base body. */
  fields: string[];
  /** Declared query parameters (from the OpenAPI document). */
  query: string[];
  base: Record<string, unknown>;
  proxy: boolean;
}

/** Every route the daemon serves, from its OpenAPI document and the proxy's table. */
async function targets(url: string, token: string): Promise<Target[]> {
  const doc = (await (
    await fetch(`${url}/api/openapi.json`, { headers: { authorization: `Bearer ${token}` } })
  ).json()) as {
    paths: Record<
      string,
      Record<
        string,
        {
          requestBody?: { content?: Record<string, { schema?: { properties?: object } }> };
          parameters?: { name: string; in: string }[];
        }
      >
    >;
  };
  const out: Target[] = [];
  for (const [path, methods] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(methods)) {
      const schema = op.requestBody?.content?.['application/json']?.schema;
      out.push({
        method: method.toUpperCase(),
        path,
        fields: Object.keys(schema?.properties ?? {}),
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        base: {},
        proxy: false,
      });
    }
  for (const r of PROXY_ROUTES) {
    const base = WIRE_BODIES[r.path.startsWith('/v1beta/') ? 'gemini' : r.path] ?? {};
    out.push({
      method: r.method,
      path: r.path,
      fields: [...Object.keys(base), ...WIRE_FIELDS],
      query: ['key', 'alt'],
      base,
      proxy: true,
    });
  }
  return out;
}

/** The requests for one route: malformed path segments, queries, whole bodies and field values. */
function inputs(t: Target, ids: { rollout: string }): { path: string; body?: string; auth?: string }[] {
  const fill = (seg: string) => t.path.replace(/\{(\w+)\}/g, (_m, name) => (name === 'model' ? 'toy' : seg));
  const params = /\{\w+\}/.test(t.path);
  const out: { path: string; body?: string; auth?: string }[] = [];
  const post = t.method === 'POST';
  const good = fill(ids.rollout);
  const bodyOf = (b: Record<string, unknown>) => (post ? JSON.stringify(b) : undefined);
  // Unscoped and rollout-scoped; the bad rollout ids in the prefix get the well-formed request only.
  const scopes = t.proxy ? ['', `/r/${ids.rollout}`] : [''];
  if (t.proxy)
    for (const scope of ['/r/%E0%A4%A', '/r/%00', '/r/%zz', '/r/ro_nope', `/r/${'r'.repeat(300)}`])
      out.push({ path: scope + good, body: bodyOf(t.base) });
  for (const scope of scopes) {
    for (const seg of BAD_SEGMENTS) {
      if (params) out.push({ path: scope + fill(seg), body: bodyOf(t.base) });
      // Inside a literal segment and appended, for routes without parameters too.
      out.push({ path: `${scope}${good.replace(/\/([^/]+)$/, `/${seg}$1`)}`, body: bodyOf(t.base) });
      if (t.path.includes('{model}'))
        out.push({ path: scope + t.path.replace('{model}', seg), body: bodyOf(t.base) });
    }
    for (const q of BAD_QUERIES) out.push({ path: `${scope}${good}${q}`, body: bodyOf(t.base) });
    for (const name of t.query)
      for (const v of BAD_QUERY_VALUES)
        out.push({ path: `${scope}${good}?${name}=${v}`, body: bodyOf(t.base) });
    if (!post) continue;
    for (const b of BAD_BODIES) out.push({ path: scope + good, body: b });
    // Field by field where the body is read (unscoped calls without a recording stop before it).
    if (t.proxy && scope === '') continue;
    for (const field of t.fields)
      for (const v of BAD_VALUES)
        out.push({ path: scope + good, body: JSON.stringify({ ...t.base, [field]: v }) });
  }
  // Random path segments and bodies (a fixed seed: the same inputs on every run and store).
  const random = fc.sample(
    fc.record({ seg: fc.string({ maxLength: 20 }), body: fc.jsonValue({ maxDepth: 3 }) }),
    { numRuns: 20, seed: 32 },
  );
  for (const r of random)
    out.push({
      path: params ? fill(encodeURIComponent(r.seg) || 'x') : good,
      body: post ? JSON.stringify(r.body) : undefined,
    });
  // Without a token and with another rollout's key.
  out.push({ path: good, body: bodyOf(t.base), auth: '' });
  out.push({ path: good, body: bodyOf(t.base), auth: 'hrk_not-a-key' });
  return out;
}

async function fuzz(store: (dataDir: string) => string) {
  const backend: FakeVllm = await startFakeVllm({ model: 'toy' });
  const dataDir = await mkdtemp(join(tmpdir(), 'harness-rl-fuzz-'));
  const token = `fuzz_${randomBytes(8).toString('hex')}`;
  const daemon = await startDaemonProcess(
    ['--port', '0', '--data', dataDir, '--token', token, '--store', store(dataDir), '--backend', backend.url],
    { env: { ...process.env, HARNESS_RL_TOKEN: '' } },
  );
  const sent: Sent[] = [];
  const bad: (Sent & { detail: string })[] = [];
  try {
    const create = async () =>
      (await (
        await fetch(`${daemon.url}/api/rollouts`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: '{"input":"fuzz"}',
        })
      ).json()) as { id: string; key: string };
    // The REST routes complete, fail and cancel their rollout; the proxy's calls go to one they leave open.
    const [restRollout, proxyRollout] = [await create(), await create()];
    const all = (await targets(daemon.url, token)).flatMap((t) =>
      inputs(t, { rollout: (t.proxy ? proxyRollout : restRollout).id }).map((i) => ({
        ...i,
        method: t.method,
      })),
    );
    let next = 0;
    const worker = async () => {
      while (next < all.length) {
        const i = all[next++];
        const url = `${daemon.url}${i.path}`;
        const headers: Record<string, string> = {};
        const auth = i.auth ?? (i.path.startsWith(`/r/${proxyRollout.id}/`) ? proxyRollout.key : token);
        if (auth) headers.authorization = `Bearer ${auth}`;
        if (i.body !== undefined) headers['content-type'] = 'application/json';
        try {
          const res = await fetch(url, {
            method: i.method,
            headers,
            body: i.body,
            signal: AbortSignal.timeout(20_000),
          });
          const text = await res.text();
          sent.push({ method: i.method, url: i.path, status: res.status });
          if (res.status >= 500)
            bad.push({ method: i.method, url: i.path, status: res.status, detail: text.slice(0, 300) });
        } catch (err) {
          bad.push({ method: i.method, url: i.path, status: 0, detail: String(err) });
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    const health = await fetch(`${daemon.url}/api/health`);
    return { sent, bad, healthy: health.status, exitCode: daemon.child.exitCode, stderr: daemon.errors() };
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
    await backend.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function check(result: Awaited<ReturnType<typeof fuzz>>, store: string) {
  const statuses = new Map<number, number>();
  for (const s of result.sent) statuses.set(s.status, (statuses.get(s.status) ?? 0) + 1);
  process.stderr.write(
    `fuzz-routes ${store}: ${result.sent.length} inputs, statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`,
  );
  expect(result.bad.slice(0, 20)).toEqual([]);
  expect(result.exitCode).toBeNull();
  expect(result.healthy).toBe(200);
  expect(result.stderr).not.toMatch(/uncaught|URIError|TimeoutOverflowWarning/i);
}

const problem = await postgresProblem();
const schema = `t_fuzz_${randomBytes(6).toString('hex')}`;

describe('every route, malformed input, a real daemon process', () => {
  it('SQLite: no input gets a 5xx or hangs, and the process still answers /health', async () => {
    check(await fuzz(() => 'sqlite'), 'sqlite');
  }, 120_000);

  beforeAll(() => {
    if (problem)
      process.stderr.write(`\n  SKIPPING fuzz-routes on PostgreSQL: ${PG_SHOWN} unreachable (${problem})\n`);
  });
  afterAll(async () => {
    if (!problem) await dropPgSchema(schema);
  });
  it.skipIf(problem !== null)(
    'PostgreSQL: no input gets a 5xx or hangs, and the process still answers /health',
    async () => {
      check(await fuzz(() => pgSchemaUrl(schema)), 'postgres');
    },
    120_000,
  );
});
