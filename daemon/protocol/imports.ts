// Importing past agent sessions (Claude Code, Codex) as recordings: the REST bodies and answers that
// the CLI (`harness-rl import`) and the extension (*Import Past Sessions…*) share.
import { z } from 'zod';
import { Id, Timestamp } from './entities';

export const ImportSource = z.enum(['claude-code', 'codex']);

const Since = z
  .string()
  .refine((s) => Number.isFinite(Date.parse(s)), { message: 'since must be a date or time (2026-11-30)' })
  .describe('only sessions changed since then (ISO date or time)');

export const ScanImportsBody = z
  .object({
    source: ImportSource,
    root: z
      .string()
      .min(1)
      .optional()
      .describe(
        "the folder the CLI keeps its sessions in (default: the daemon's ~/.claude/projects or ~/.codex/sessions)",
      ),
    since: Since.optional(),
    project: z.string().min(1).optional().describe('only the sessions of this project folder'),
  })
  .strict();

export const ImportableSession = z.object({
  path: z.string(),
  session_id: z.string(),
  size: z.number().int().nonnegative(),
  modified_at: Timestamp,
  recording_id: Id.nullable().describe('the recording of its earlier import (null: not imported yet)'),
});

export const ScannedImports = z.object({
  root: z.string(),
  sessions: z.array(ImportableSession),
  skipped: z
    .array(z.string())
    .describe(
      'session files found that this daemon cannot read (none today: zstd-compressed rollouts are read too)',
    ),
});

export const ImportSessionBody = z
  .object({
    source: ImportSource,
    path: z.string().min(1).describe('a session file under root (from the scan)'),
    root: ScanImportsBody.shape.root,
    model: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('the model whose chat template tokenizes the session (default Qwen/Qwen3-8B)'),
  })
  .strict();

export const SessionImport = z.object({
  path: z.string(),
  session_id: z.string().nullable(),
  status: z.enum(['imported', 'already_imported', 'empty', 'failed']),
  recording_id: Id.nullable(),
  calls: z.number().int().nonnegative(),
  bad_lines: z.array(z.string()).describe('lines skipped, as file:line: why'),
  notes: z.array(z.string()).describe('what was left out (images, sub-agent lines …), counted'),
  error: z.string().nullable(),
});

export type ImportSource = z.infer<typeof ImportSource>;
export type ScanImportsBody = z.infer<typeof ScanImportsBody>;
export type ImportableSession = z.infer<typeof ImportableSession>;
export type ScannedImports = z.infer<typeof ScannedImports>;
export type ImportSessionBody = z.infer<typeof ImportSessionBody>;
export type SessionImport = z.infer<typeof SessionImport>;
