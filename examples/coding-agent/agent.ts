// A tool-calling coding agent over any OpenAI-compatible endpoint (official client, Chat Completions
// tools): it works in a throw-away copy of repo/, reads and writes files and runs the task's tests (in
// the sandbox, with a time limit) until the model answers without a tool call or the turns run out.
// What it hands on is its edits; the verifier (verify.ts) applies them to a fresh copy and runs the tests.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import OpenAI from 'openai';
import { z } from 'zod';
import type { RolloutEnv } from '../command';
import { applyEdits, CodingTask, type Edits, REPO, readRepoFile, runTests } from './repo';
import { throwAwayCopy } from './sandbox';
import { checkoutTask, diffOf, SweTask, swePrompt, testTask } from './swe-task';

/** A task of the shipped repository (tasks.jsonl), or a synthesised/imported one (swe-task.ts). */
export const ExampleTask = z.union([CodingTask, SweTask]);
export type ExampleTask = z.infer<typeof ExampleTask>;
const isSwe = (task: ExampleTask): task is SweTask => 'instance_id' in task;

export const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'list_files',
      description: 'List the files of the repository.',
      parameters: { type: 'object', properties: {} },
    },
  },
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file of the repository.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string', description: 'relative to the repository root' } },
        required: ['path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'write_file',
      description: 'Replace the content of a file of the repository (or create it).',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, content: { type: 'string' } },
        required: ['path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'run_tests',
      description: "Run the task's tests and see which fail.",
      parameters: { type: 'object', properties: {} },
    },
  },
];

const PathArgs = z.object({ path: z.string() });
const WriteArgs = z.object({ path: z.string(), content: z.string() });

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** One workspace: a throw-away copy of the repository, the task, and what the agent wrote there. */
export class Workspace {
  readonly written = new Set<string>();
  private constructor(
    readonly dir: string,
    readonly task: ExampleTask,
  ) {}

  static async open(task: ExampleTask, repo = REPO): Promise<Workspace> {
    if (!isSwe(task)) return new Workspace(await throwAwayCopy(repo), task);
    const dir = await mkdtemp(join(tmpdir(), 'coding-agent-'));
    try {
      await checkoutTask(task, dir);
    } catch (e) {
      await rm(dir, { recursive: true, force: true });
      throw e;
    }
    return new Workspace(dir, task);
  }

  /** Runs one tool call; a bad call answers with what was wrong, for the model to read. */
  async call(name: string, argsJson: string): Promise<{ ok: boolean; result: string }> {
    try {
      const args: unknown = argsJson.trim() ? JSON.parse(argsJson) : {};
      switch (name) {
        case 'list_files':
          return { ok: true, result: (await listFiles(this.dir)).join('\n') };
        case 'read_file':
          return { ok: true, result: await readRepoFile(this.dir, PathArgs.parse(args).path) };
        case 'write_file': {
          const { path, content } = WriteArgs.parse(args);
          await applyEdits(this.dir, { [path]: content });
          this.written.add(path);
          return { ok: true, result: `wrote ${path}` };
        }
        case 'run_tests': {
          if (isSwe(this.task)) return { ok: true, result: await testTask(this.task, this.dir) };
          const run = await runTests(this.dir, this.task.test);
          const summary = run.timedOut ? 'the tests timed out' : `${run.passed} passed, ${run.failed} failed`;
          return { ok: true, result: `${summary}\n${run.output.slice(-4000)}` };
        }
        default:
          return { ok: false, result: `no tool named ${name}` };
      }
    } catch (err) {
      return { ok: false, result: `error: ${err instanceof Error ? err.message : String(err)}` };
    }
  }

  /** The files the agent wrote, with their content now. */
  async edits(): Promise<Edits> {
    const edits: Edits = {};
    for (const path of [...this.written].sort()) edits[path] = await readRepoFile(this.dir, path);
    return edits;
  }

  /** The agent's change as a unified diff (a synthesised task's verifier takes it). */
  patch(): Promise<string> {
    return diffOf(this.dir);
  }

  close(): Promise<void> {
    return rm(this.dir, { recursive: true, force: true });
  }
}

export function prompt(task: ExampleTask): string {
  if (isSwe(task)) return swePrompt(task);
  return `Fix this bug in the repository: ${task.issue}\nThe tests in ${task.test} must pass. Use the tools to read, edit and test; answer without a tool call when you are done.`;
}

export interface RolloutResult {
  edits: Edits;
  /** For a synthesised task: the change as a unified diff. */
  patch?: string;
  turns: number;
  toolCalls: { name: string; ok: boolean }[];
}

export async function runRollout(env: RolloutEnv): Promise<RolloutResult> {
  const task = ExampleTask.parse(env.task);
  const client = new OpenAI({ baseURL: env.baseURL, apiKey: env.apiKey, maxRetries: 2 });
  const workspace = await Workspace.open(task);
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: prompt(task) }];
  const toolCalls: RolloutResult['toolCalls'] = [];
  let turns = 0;
  try {
    while (turns < (env.maxTurns ?? 8)) {
      turns++;
      const r = await client.chat.completions.create({
        model: env.model,
        messages,
        tools: TOOLS,
        max_tokens: env.maxTokens ?? 512,
      });
      const message = r.choices[0]?.message;
      const calls = (message?.tool_calls ?? []).filter((c) => c.type === 'function');
      // The assistant turn goes back exactly as received, so the history stays token-exact.
      messages.push({
        role: 'assistant',
        content: message?.content ?? null,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      });
      if (calls.length === 0) break;
      for (const c of calls) {
        const { ok, result } = await workspace.call(c.function.name, c.function.arguments);
        toolCalls.push({ name: c.function.name, ok });
        messages.push({ role: 'tool', tool_call_id: c.id, content: result });
      }
    }
    const patch = isSwe(task) ? await workspace.patch() : undefined;
    return { edits: await workspace.edits(), ...(patch !== undefined ? { patch } : {}), turns, toolCalls };
  } finally {
    await workspace.close();
  }
}
