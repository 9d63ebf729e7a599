// The coding-agent CLIs the CLI tests (test/e2e/agents-cli.test.ts) run, with the settings of
// daemon/agents/settings.ts (the source docs/agents.md and the extension's snippets come from), so a
// setting that stops working fails CI. Each entry: the npm package and version pinned in package.json
// beside this file, its settings (environment and config files: nothing points off this machine), what
// the test adds to run it unattended, and the tool of its own that the scripted backend calls to write
// the task's file.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AgentSettings, agentEnv, agentSettings } from '../../daemon/agents/settings';
import type { WireApi } from '../../daemon/protocol/entities';
import { recordingEnv } from '../../extension/src/snippets';
import type { ScriptedReply } from '../fixtures/fake-vllm';

const here = dirname(fileURLToPath(import.meta.url));
/** Where scripts/setup-test-env.sh installs the CLIs (npm ci in this folder). */
export const AGENTS_BIN = join(here, 'node_modules', '.bin');
const pins: Record<string, string> = createRequire(import.meta.url)('./package.json').devDependencies;

/** Whether the CLIs are installed: on CI their absence fails; elsewhere it is said that `tests` are skipped. */
export function agentsInstalled(tests: string): boolean {
  if (existsSync(AGENTS_BIN)) return true;
  const why = `the agent CLIs are not installed in ${AGENTS_BIN} (scripts/setup-test-env.sh does it)`;
  if (process.env.CI) throw new Error(why);
  process.stderr.write(`\n  SKIPPING ${tests}: ${why}\n`);
  return false;
}

/** The task's user turn names its folder after this marker; the scripted backend keys on it. */
export const TASK_MARKER = 'Work in';
export const FINAL_TEXT = 'DONE: hello.txt is written.';
export const taskPrompt = (dir: string) =>
  `${TASK_MARKER} ${dir} . Create the file hello.txt there with one line saying hello, then say done.`;
const fileText = (id: string) => `hello from ${id}\n`;

export interface AgentEndpoints {
  /** The throw-away HOME (config folders go under it). */
  home: string;
  /** The folder the agent works in. */
  work: string;
  model: string;
  /** The rollout's or recording's key. */
  key: string;
  /** …/r/<rollout>/v1 or …/v1 (a recording). */
  openaiBaseUrl: string;
  /** …/r/<rollout> or the daemon's root (a recording): Anthropic and Gemini clients add /v1/… or /v1beta/… */
  anthropicBaseUrl: string;
}

export interface AgentSpec {
  id: string;
  name: string;
  package: string;
  version: string;
  /** The executable in node_modules/.bin. */
  bin: string;
  wireApi: WireApi;
  /** Whether its main calls stream. */
  streams: boolean;
  /** Whether its settings send its own OpenTelemetry tool events to the daemon (tool runs on the rollout). */
  telemetry?: boolean;
  /** The agent's own tool that the scripted backend calls, and its arguments for the task in `dir`. */
  tool: { name: string; arguments(dir: string): Record<string, unknown> };
  /** Writes the config files under `home` and gives the environment and the non-interactive command line. */
  setup(e: AgentEndpoints): Promise<{ env: Record<string, string>; args(prompt: string): string[] }>;
}

/** A CLI of daemon/agents/settings.ts with what running it here takes. */
function spec(id: string, s: Omit<AgentSpec, 'id' | 'name' | 'package' | 'version' | 'wireApi'>): AgentSpec {
  const settings = agentSettings(id);
  if (!settings.package) throw new Error(`${id} has no npm package in daemon/agents/settings.ts`);
  return {
    ...s,
    id,
    name: settings.name,
    package: settings.package,
    version: pins[settings.package]!,
    wireApi: settings.wireApi,
  };
}

const endpointsOf = (e: AgentEndpoints) => ({
  name: 'test',
  key: e.key,
  openai_base_url: e.openaiBaseUrl,
  anthropic_base_url: e.anthropicBaseUrl,
});

/** Writes the agent's config files (settings.ts) under `home` and gives its environment. */
async function configure(settings: AgentSettings, e: AgentEndpoints): Promise<Record<string, string>> {
  for (const file of settings.files(e)) {
    const path = join(e.home, file.path.replace(/^~\//, ''));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, file.text);
  }
  return agentEnv(settings, e);
}

export const AGENTS: AgentSpec[] = [
  spec('claude-code', {
    bin: 'claude',
    streams: true,
    telemetry: true,
    tool: {
      name: 'Write',
      arguments: (dir) => ({ file_path: join(dir, 'hello.txt'), content: fileText('claude-code') }),
    },
    async setup(e) {
      return {
        env: {
          // what the extension gives a terminal: ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN (sent as a
          // bearer token) and ANTHROPIC_API_KEY (x-api-key), OPENAI_BASE_URL, OPENAI_API_KEY
          ...recordingEnv(endpointsOf(e)),
          ...(await configure(agentSettings('claude-code'), e)),
          // older versions' name for the small model, and the variables the nonessential-traffic switch sets
          ANTHROPIC_SMALL_FAST_MODEL: e.model,
          DISABLE_AUTOUPDATER: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_ERROR_REPORTING: '1',
          // --dangerously-skip-permissions is refused as root otherwise
          IS_SANDBOX: '1',
        },
        args: (prompt) => ['-p', prompt, '--dangerously-skip-permissions', '--model', e.model],
      };
    },
  }),
  spec('codex', {
    bin: 'codex',
    streams: true,
    telemetry: true,
    tool: { name: 'exec_command', arguments: () => ({ cmd: `printf '${fileText('codex')}' > hello.txt` }) },
    async setup(e) {
      const env = await configure(agentSettings('codex'), e);
      return {
        env: { ...env, CODEX_HOME: join(e.home, '.codex') },
        args: (prompt) => [
          'exec',
          '--skip-git-repo-check',
          '--dangerously-bypass-approvals-and-sandbox',
          '--color',
          'never',
          prompt,
        ],
      };
    },
  }),
  spec('opencode', {
    bin: 'opencode',
    streams: true,
    tool: {
      name: 'write',
      arguments: (dir) => ({ filePath: join(dir, 'hello.txt'), content: fileText('opencode') }),
    },
    async setup(e) {
      return { env: await configure(agentSettings('opencode'), e), args: (prompt) => ['run', prompt] };
    },
  }),
  spec('qwen-code', {
    bin: 'qwen',
    streams: true,
    telemetry: true,
    tool: {
      name: 'write_file',
      arguments: (dir) => ({ file_path: join(dir, 'hello.txt'), content: fileText('qwen-code') }),
    },
    async setup(e) {
      return {
        // the extension's terminal variables (OPENAI_BASE_URL, OPENAI_API_KEY …) and the model
        env: { ...recordingEnv(endpointsOf(e)), ...(await configure(agentSettings('qwen-code'), e)) },
        args: (prompt) => ['-p', prompt, '--yolo', '--auth-type', 'openai', '--model', e.model],
      };
    },
  }),
  spec('gemini-cli', {
    bin: 'gemini',
    streams: true,
    telemetry: true,
    tool: {
      name: 'write_file',
      arguments: (dir) => ({ file_path: join(dir, 'hello.txt'), content: fileText('gemini-cli') }),
    },
    async setup(e) {
      return {
        env: await configure(agentSettings('gemini-cli'), e),
        // no --model: its router's flash-lite side call, then its default model, as a user gets them
        args: (prompt) => ['-p', prompt, '--yolo'],
      };
    },
  }),
];

/**
 * The backend's answers: a request that offers the agent's tool and whose prompt names a task folder is
 * the agent's main call: the tool call that writes the file, then, once a tool result is in the prompt,
 * the final text (a bridged call comes as token ids on /v1/completions: the same, by its prompt text);
 * anything else (titles, topic checks, summaries) gets a short text. `running` names the agent whose task
 * names a folder.
 */
export function agentScript(running: Map<string, AgentSpec>) {
  return (
    request: { prompt?: unknown; tools?: { function?: { name?: string } }[] },
    prompt: { text: string },
  ): ScriptedReply => {
    const dir = new RegExp(`${TASK_MARKER} (\\S+)`).exec(prompt.text)?.[1];
    const agent = dir ? running.get(dir) : undefined;
    const toolResult = prompt.text.includes(`<|im_start|>tool\n`);
    // Gemini CLI's model router asks a flash-lite model how hard the task is, in JSON
    if (prompt.text.includes('complexity_score'))
      return { text: '{"complexity_reasoning": "Single file, specific edit.", "complexity_score": 30}' };
    if (!agent || !dir) return { text: 'Hello file' };
    if (request.prompt !== undefined) return { text: toolResult ? FINAL_TEXT : 'Hello file' };
    const tools = (request.tools ?? []).map((t) => t.function?.name);
    if (!tools.includes(agent.tool.name)) return { text: 'Hello file' };
    if (toolResult) return { text: FINAL_TEXT };
    return { tool: { name: agent.tool.name, arguments: JSON.stringify(agent.tool.arguments(dir)) } };
  };
}
