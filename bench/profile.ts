// Where a process's CPU goes per call, from a V8 CPU profile (`--cpu-prof`): every sample taken in a
// time window is counted under one stage, found from its innermost frame with a script (a native leaf
// such as a socket write or the garbage collector counts as its own stage).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface Profile {
  nodes: { id: number; callFrame: Frame; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const NATIVE: [string, (f: Frame) => boolean][] = [
  ['socket_write', (f) => f.functionName === 'writev' || f.functionName.startsWith('write')],
  ['gc', (f) => f.functionName === '(garbage collector)'],
  ['idle', (f) => f.functionName === '(idle)'],
];

/** The first match wins, so the more specific stages come first. */
const STAGES: [string, RegExp][] = [
  ['redact', /daemon\/(store\/)?redact/],
  ['store_record', /daemon\/store\/|better-sqlite3|\/pg\/|pg-protocol/],
  ['recorder', /daemon\/proxy\/recorder/],
  ['tokenize', /daemon\/tokenize\/|@huggingface\/(jinja|tokenizers)/],
  ['tito_bridge', /daemon\/proxy\/(tito\/|bridge)/],
  ['json_parse_checked', /daemon\/api\/body/],
  ['assemble_strip', /daemon\/proxy\/(assemble|sse)/],
  ['zod', /node_modules\/zod/],
  ['scope', /daemon\/proxy\/scope|node:crypto|crypto\/hash/],
  ['fastify', /node_modules\/(fastify|find-my-way|avvio|light-my-request|@fastify)/],
  ['proxy_own_js', /daemon\/proxy\//],
  ['http_client', /_http_client|_http_agent/],
  ['http_server', /_http_server|_http_incoming/],
  ['http_common', /_http_common|_http_outgoing/],
  ['streams_events_ticks', /streams\/|stream_base|node:net|node:events|timers|task_queues|async_hooks/],
];

/**
 * The source file of a frame: in a bundle with a source map beside it (the bench's proxy is bundled
 * like the daemon), the original file the frame's position maps to; else the frame's own URL.
 */
function sourceOf(f: Frame, maps: Map<string, SourceMap | null>): string {
  if (!f.url.endsWith('.mjs')) return f.url;
  let map = maps.get(f.url);
  if (map === undefined) {
    const file = `${f.url.startsWith('file:') ? fileURLToPath(f.url) : f.url}.map`;
    map = existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, 'utf8'))) : null;
    maps.set(f.url, map);
  }
  const entry = map?.findEntry(f.lineNumber, f.columnNumber) as { originalSource?: string } | undefined;
  return entry?.originalSource ?? f.url;
}

/** The newest main-thread profile in `dir` (V8 names them CPU.<date>.<time>.<pid>.<thread>.<seq>). */
export function newestProfile(dir: string): string {
  const files = readdirSync(dir)
    .filter((f) => /\.0\.\d+\.cpuprofile$/.test(f))
    .sort();
  return join(dir, files[files.length - 1]);
}

/** Monotonic microseconds, the clock V8's profile timestamps use. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/**
 * µs of CPU per call by stage, over the samples of `profile` taken between `from` and `to`
 * (monotonicUs); `busy` is their sum, `idle_share` the part of the window the process waited.
 */
export function stagesPerCall(file: string, from: number, to: number, calls: number): Record<string, number> {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOf = new Map<number, string>();
  const maps = new Map<string, SourceMap | null>();
  const stage = (id: number): string => {
    const known = stageOf.get(id);
    if (known) return known;
    let found = 'other';
    const leaf = byId.get(id)!.callFrame;
    const native = leaf.url ? undefined : NATIVE.find(([, test]) => test(leaf));
    if (native) found = native[0];
    else
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const frame = byId.get(at)!.callFrame;
        if (!frame.url) continue;
        const url = sourceOf(frame, maps);
        found = STAGES.find(([, re]) => re.test(url))?.[0] ?? 'other';
        break;
      }
    stageOf.set(id, found);
    return found;
  };
  const us: Record<string, number> = {};
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i];
    if (t < from || t > to) continue;
    const s = stage(p.samples[i]);
    us[s] = (us[s] ?? 0) + p.timeDeltas[i];
  }
  const idle = us.idle ?? 0;
  delete us.idle;
  const busy = Object.values(us).reduce((a, b) => a + b, 0);
  const out: Record<string, number> = {
    busy_us_per_call: Math.round(busy / calls),
    idle_share: Math.round((1000 * idle) / (busy + idle || 1)) / 1000,
  };
  for (const [k, v] of Object.entries(us).sort((a, b) => b[1] - a[1]))
    out[`${k}_us`] = Math.round((10 * v) / calls) / 10;
  return out;
}
