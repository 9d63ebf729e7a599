// The routes that import past agent sessions: list the session files of a CLI's folder (with the
// recording each was imported as), and import one of them. Part of the route table in routes.ts.
import { relative, resolve } from 'node:path';
import type { DaemonContext } from '../context';
import {
  DEFAULT_IMPORT_MODEL,
  findSessions,
  importKey,
  importSessionFile,
  sessionsRoot,
  UnknownTemplateError,
} from '../import';
import { ImportSessionBody, ScanImportsBody, ScannedImports, SessionImport } from '../protocol/imports';
import { ApiError } from './errors';
import { type AnyRoute, route } from './route';

/** The recordings imported so far, by import key (`<source>:<session id>`). */
async function importedRecordings(ctx: DaemonContext): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const r of await ctx.store.listRecordings()) {
    const u = r.upstream as { kind?: unknown; source?: unknown; session_id?: unknown } | null;
    if (u?.kind === 'import' && typeof u.source === 'string' && typeof u.session_id === 'string')
      out.set(`${u.source}:${u.session_id}`, r.id);
  }
  return out;
}

export const importRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: '/api/imports/scan',
    summary:
      "the session files of an agent CLI's folder that an import would take, and which are imported already",
    auth: 'token',
    body: ScanImportsBody,
    response: ScannedImports,
    handler: async ({ ctx, body }) => {
      const root = resolve(body.root ?? sessionsRoot(body.source));
      const skipped: string[] = [];
      const files = await findSessions(body.source, root, body, skipped);
      const imported = await importedRecordings(ctx);
      return {
        root,
        sessions: files.map((f) => ({
          ...f,
          recording_id: imported.get(importKey(body.source, f.session_id)) ?? null,
        })),
        skipped,
      };
    },
  }),
  route({
    method: 'POST',
    path: '/api/imports',
    summary:
      'import one session file as a recording (tokenized with the chosen model’s template, token_source import); an imported session is found, not copied again',
    auth: 'token',
    body: ImportSessionBody,
    response: SessionImport,
    handler: async ({ ctx, body }) => {
      const root = resolve(body.root ?? sessionsRoot(body.source));
      const path = resolve(root, body.path);
      const inside = relative(root, path);
      // .jsonl.zst: Codex's compressed rollouts, which the scan lists too
      if (!inside || inside.startsWith('..') || !/\.jsonl(\.zst)?$/.test(path))
        throw new ApiError(
          400,
          'invalid_request',
          `path must be a .jsonl or .jsonl.zst session file under ${root}`,
          'path',
        );
      const model = body.model ?? DEFAULT_IMPORT_MODEL;
      try {
        return await importSessionFile(ctx.store, path, {
          source: body.source,
          model,
          modelFiles: ctx.config.model_files,
        });
      } catch (err) {
        if (err instanceof UnknownTemplateError)
          throw new ApiError(400, 'invalid_request', err.message, 'model');
        throw err;
      }
    },
  }),
];
