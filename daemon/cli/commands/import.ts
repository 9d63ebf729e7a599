// `harness-rl import claude-code|codex [--since DATE] [--project DIR] [--model M]`: a person's past
// agent sessions into recordings on the running daemon, one session file at a time (progress on
// stderr). Sessions come from the CLI's own folder as this shell sees it ($CLAUDE_CONFIG_DIR or
// ~/.claude, $CODEX_HOME or ~/.codex; --root names another); imported ones are found, not copied.
import { parseArgs } from 'node:util';
import { sessionsRoot } from '../../import/files';
import { ImportSource, type ScannedImports, type SessionImport } from '../../protocol/imports';
import { DAEMON_OPTIONS, daemonClient, type Output, stdio } from './run';

const USAGE = `usage: harness-rl import claude-code|codex [--since DATE] [--project DIR] [--model M]
  [--root DIR] [--url http://127.0.0.1:4100] [--token T] [--data DIR] [--json]
  Imports past sessions (those changed since DATE; of project DIR) as recordings, tokenized with M's
  chat template (default Qwen/Qwen3-8B) and marked token_source "import": text the training model never
  sampled, left out of RL samples. A session imported before is found, not copied again.`;

export function run(argv: string[]): Promise<number> {
  return importCommand(argv, stdio, process.env);
}

/** The command with its output to `io` and the sessions' folder from `env` (tests run it in-process). */
export async function importCommand(
  argv: string[],
  io: Output,
  env: Record<string, string | undefined>,
): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.err(`harness-rl import: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const source = ImportSource.safeParse(positionals[0]);
  if (!source.success || positionals.length !== 1) {
    io.err(`harness-rl import: name one source, claude-code or codex\n${USAGE}`);
    return 2;
  }
  try {
    const call = daemonClient(values, env);
    const root = values.root ?? sessionsRoot(source.data, env);
    const scan = await call<ScannedImports>('POST', '/api/imports/scan', {
      source: source.data,
      root,
      ...(values.since ? { since: values.since } : {}),
      ...(values.project ? { project: values.project } : {}),
    });
    for (const s of scan.skipped) io.err(`skipped ${s}: a session file this daemon cannot read`);
    const results: SessionImport[] = [];
    for (const [i, s] of scan.sessions.entries()) {
      const r = await call<SessionImport>('POST', '/api/imports', {
        source: source.data,
        root: scan.root,
        path: s.path,
        ...(values.model ? { model: values.model } : {}),
      });
      results.push(r);
      io.err(
        `[${i + 1}/${scan.sessions.length}] ${r.status} ${r.path}${r.recording_id ? ` → ${r.recording_id}` : ''} (${r.calls} calls)${r.error ? `: ${r.error}` : ''}`,
      );
      for (const b of r.bad_lines) io.err(`  skipped ${b}`);
      for (const n of r.notes) io.err(`  ${n}`);
    }
    const count = (status: SessionImport['status']) => results.filter((r) => r.status === status).length;
    const summary = {
      root: scan.root,
      sessions: results.length,
      imported: count('imported'),
      already_imported: count('already_imported'),
      empty: count('empty'),
      failed: count('failed'),
      calls: results.reduce((n, r) => n + (r.status === 'imported' ? r.calls : 0), 0),
      bad_lines: results.reduce((n, r) => n + r.bad_lines.length, 0),
    };
    io.out(
      values.json
        ? JSON.stringify({ ...summary, results })
        : `imported ${summary.imported} of ${summary.sessions} sessions from ${scan.root} (${summary.calls} calls; ${summary.already_imported} imported before, ${summary.empty} empty, ${summary.failed} failed, ${summary.bad_lines} bad lines skipped)`,
    );
    return summary.failed ? 1 : 0;
  } catch (err) {
    io.err(`harness-rl import: ${(err as Error).message}`);
    return 1;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      since: { type: 'string' },
      project: { type: 'string' },
      model: { type: 'string' },
      root: { type: 'string' },
      ...DAEMON_OPTIONS,
    },
    allowPositionals: true,
    strict: true,
  });
}
