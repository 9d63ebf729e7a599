// A loopback OTLP/HTTP receiver for tests: keeps every POST; decodes the OTLP JSON encoding into spans.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: OtlpValue[] };
}
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  attributes: { key: string; value: OtlpValue }[];
  status?: { code?: number };
}

export interface Receiver {
  url: string;
  posts: { contentType: string; body: Buffer; headers: Record<string, unknown> }[];
  spans(): OtlpSpan[];
  close(): Promise<void>;
}

export async function startReceiver(answer = true): Promise<Receiver> {
  const posts: Receiver['posts'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      posts.push({
        contentType: String(req.headers['content-type']),
        body: Buffer.concat(chunks),
        headers: req.headers,
      });
      if (!answer) return; // a receiver that never answers
      res.writeHead(200, { 'content-type': String(req.headers['content-type']) });
      res.end(req.headers['content-type'] === 'application/json' ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    posts,
    spans: () =>
      posts
        .filter((p) => p.contentType === 'application/json')
        .flatMap((p) =>
          JSON.parse(p.body.toString()).resourceSpans.flatMap((rs: { scopeSpans: { spans: OtlpSpan[] }[] }) =>
            rs.scopeSpans.flatMap((ss) => ss.spans),
          ),
        ),
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

export function attr(span: OtlpSpan, key: string): unknown {
  const v = span.attributes.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if (v.arrayValue) return v.arrayValue.values.map((x) => x.stringValue);
  return v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue));
}
