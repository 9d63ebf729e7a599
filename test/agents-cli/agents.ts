// How to point each coding-agent CLI at a rollout URL or a recording: the settings docs/agents.md
// describes, as code the CLI tests (test/e2e/agents-cli.test.ts) run, so a setting that stops working
// fails CI. Each entry: the npm package and version pinned in package.json beside this file, the wire
// API the CLI speaks, the environment and config files it needs (nothing points off this machine:
// telemetry, update checks and model-list downloads are off), and the tool of its own that the
// scripted backend calls to write the task's file.
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WireApi } from '../../daemon/protocol/entities';
import { recordingEnv, recordingSnippets } from '../../extension/src/snippets';

const here = dirname(fileURLToPath(import.meta.url));
/** Where scripts/setup-test-env.sh installs the CLIs (npm ci in this folder). */
export const AGENTS_BIN = join(here, 'node_modules', '.bin');
const pins: Record<string, string> = createRequire(import.meta.url)('./package.json').devDependencies;

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
  /** The agent's own tool that the scripted backend calls, and its arguments for the task in `dir`. */
  tool: { name: string; arguments(dir: string): Record<string, unknown> };
  /** Writes the config files under `home` and gives the environment and the non-interactive command line. */
  setup(e: AgentEndpoints): Promise<{ env: Record<string, string>; args(prompt: string): string[] }>;
}

const spec = (s: Omit<AgentSpec, 'version'>): AgentSpec => ({ ...s, version: pins[s.package] });

async function writeConfig(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
}

const endpointsOf = (e: AgentEndpoints) => ({
  name: 'test',
  key: e.key,
  openai_base_url: e.openaiBaseUrl,
  anthropic_base_url: e.anthropicBaseUrl,
});

/** The ```toml block of the extension's recording snippet for Codex. */
function codexSnippet(e: AgentEndpoints): string {
  const md = recordingSnippets(endpointsOf(e), e.model);
  const m = /## Codex[^\n]*\n```toml\n([\s\S]*?)```/.exec(md);
  if (!m) throw new Error('the recording snippets have no Codex config.toml block');
  return m[1];
}

export const AGENTS: AgentSpec[] = [
  spec({
    id: 'claude-code',
    name: 'Claude Code',
    package: '@anthropic-ai/claude-code',
    bin: 'claude',
    wireApi: 'messages',
    streams: true,
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
          ANTHROPIC_MODEL: e.model,
          ANTHROPIC_SMALL_FAST_MODEL: e.model,
          ANTHROPIC_DEFAULT_HAIKU_MODEL: e.model,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
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
  spec({
    id: 'codex',
    name: 'OpenAI Codex CLI',
    package: '@openai/codex',
    bin: 'codex',
    wireApi: 'responses',
    streams: true,
    tool: { name: 'exec_command', arguments: () => ({ cmd: `printf '${fileText('codex')}' > hello.txt` }) },
    async setup(e) {
      const codexHome = join(e.home, '.codex');
      await writeConfig(
        join(codexHome, 'config.toml'),
        // top-level keys first: after the snippet's [model_providers.…] table they would belong to it
        `check_for_update_on_startup = false\n${codexSnippet(e)}\n[analytics]\nenabled = false\n\n[otel]\nexporter = "none"\n`,
      );
      return {
        env: { CODEX_HOME: codexHome, OPENAI_API_KEY: recordingEnv(endpointsOf(e)).OPENAI_API_KEY },
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
  spec({
    id: 'opencode',
    name: 'opencode',
    package: 'opencode-ai',
    bin: 'opencode',
    wireApi: 'chat',
    streams: true,
    tool: {
      name: 'write',
      arguments: (dir) => ({ filePath: join(dir, 'hello.txt'), content: fileText('opencode') }),
    },
    async setup(e) {
      const config = {
        autoupdate: false,
        share: 'disabled',
        model: `harness-rl/${e.model}`,
        small_model: `harness-rl/${e.model}`,
        provider: {
          'harness-rl': {
            npm: '@ai-sdk/openai-compatible',
            name: 'Harness RL',
            options: { baseURL: e.openaiBaseUrl, apiKey: e.key },
            models: { [e.model]: { name: e.model } },
          },
        },
      };
      await writeConfig(
        join(e.home, '.config', 'opencode', 'opencode.json'),
        JSON.stringify(config, null, 2),
      );
      return {
        env: {
          OPENCODE_DISABLE_AUTOUPDATE: '1',
          OPENCODE_DISABLE_MODELS_FETCH: '1',
          OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
          OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
          OPENCODE_DISABLE_SHARE: '1',
        },
        args: (prompt) => ['run', prompt],
      };
    },
  }),
  spec({
    id: 'qwen-code',
    name: 'Qwen Code',
    package: '@qwen-code/qwen-code',
    bin: 'qwen',
    wireApi: 'chat',
    streams: true,
    tool: {
      name: 'write_file',
      arguments: (dir) => ({ file_path: join(dir, 'hello.txt'), content: fileText('qwen-code') }),
    },
    async setup(e) {
      const settings = {
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
        security: { auth: { selectedType: 'openai' } },
      };
      await writeConfig(join(e.home, '.qwen', 'settings.json'), JSON.stringify(settings, null, 2));
      return {
        // the extension's terminal variables (OPENAI_BASE_URL, OPENAI_API_KEY …) and the model
        env: { ...recordingEnv(endpointsOf(e)), OPENAI_MODEL: e.model },
        args: (prompt) => ['-p', prompt, '--yolo', '--auth-type', 'openai', '--model', e.model],
      };
    },
  }),
  spec({
    id: 'gemini-cli',
    name: 'Gemini CLI',
    package: '@google/gemini-cli',
    bin: 'gemini',
    wireApi: 'gemini',
    streams: true,
    tool: {
      name: 'write_file',
      arguments: (dir) => ({ file_path: join(dir, 'hello.txt'), content: fileText('gemini-cli') }),
    },
    async setup(e) {
      const settings = {
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
        security: { auth: { selectedType: 'gemini-api-key' } },
      };
      await writeConfig(join(e.home, '.gemini', 'settings.json'), JSON.stringify(settings, null, 2));
      return {
        // headless runs in a folder not trusted before drop --yolo to default approvals: trust it
        env: {
          GOOGLE_GEMINI_BASE_URL: e.anthropicBaseUrl,
          GEMINI_API_KEY: e.key,
          GEMINI_CLI_TRUST_WORKSPACE: 'true',
        },
        // no --model: its router's flash-lite side call, then its default model, as a user gets them
        args: (prompt) => ['-p', prompt, '--yolo'],
      };
    },
  }),
];
