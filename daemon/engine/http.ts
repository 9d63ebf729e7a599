// The reference engine's HTTP plumbing: JSON answers with the weight version, the request body (bounded,
// JSON only) and server-sent events that notice a client going away.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './requests';

export function sendJson(res: ServerResponse, status: number, body: unknown, version?: number): void {
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  };
  if (version !== undefined) headers['x-model-version'] = version;
  res.writeHead(status, headers);
  res.end(text);
}

export async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 16 * 1024 * 1024) throw new HttpError(413, 'request body too large');
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'request body must be JSON');
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

export function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

/** Start an event stream; the returned state turns `closed` when the client goes away. */
export function startSse(req: IncomingMessage, res: ServerResponse, version: number): { closed: boolean } {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-model-version': String(version),
  });
  const state = { closed: false };
  res.on('close', () => {
    state.closed = true;
  });
  req.on('aborted', () => {
    state.closed = true;
  });
  return state;
}
