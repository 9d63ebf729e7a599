// Where a run's harnesses run: workers on a Ray cluster (harness.workers.ray) and the sandbox each
// attempt's harness runs in (harness.sandbox). Shared by the daemon, `harness-rl worker` and the Python
// worker of workers/python (which reads them from the generated worker protocol schema).
import { z } from 'zod';
import { durationS } from './bounds';

export const RayResources = z
  .object({
    num_cpus: z.number().min(0).default(1).describe('CPUs Ray reserves for each worker actor'),
    num_gpus: z.number().min(0).default(0),
    memory: z.number().int().positive().optional().describe('bytes of memory Ray reserves per worker'),
    resources: z
      .record(z.string().min(1), z.number().min(0))
      .optional()
      .describe('custom Ray resources per worker (e.g. {"sandbox": 1} to place workers on tagged nodes)'),
  })
  .strict();

export const RayWorkersConfig = z
  .object({
    address: z
      .url()
      .describe(
        "the Ray head's dashboard URL (http://head:8265): the run submits its workers as a Ray job there",
      ),
    workers: z
      .number()
      .int()
      .positive()
      .max(10_000)
      .default(1)
      .describe('worker actors; each runs harness.concurrency rollouts at a time'),
    resources_per_worker: RayResources.default({ num_cpus: 1, num_gpus: 0 }),
    runtime_env: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        "Ray's runtime_env of the job (pip, py_modules, working_dir as a URI, env_vars…): how the Ray nodes get the harness-rl-worker package and the harness's files",
      ),
    daemon_url: z
      .url()
      .optional()
      .describe(
        "the daemon's URL as the Ray nodes reach it (default: the daemon's own URL); a non-loopback daemon listens only with TLS",
      ),
    tls_ca: z
      .string()
      .optional()
      .describe("PEM file on the Ray nodes with the CA of the daemon's certificate (self-signed TLS)"),
    cwd: z
      .string()
      .optional()
      .describe(
        "folder on the Ray nodes the harness command runs in (default: the run config's folder, same path)",
      ),
    python: z
      .string()
      .default('python')
      .describe(
        'the Python that runs the job entry point on the head (its environment has harness-rl-worker)',
      ),
  })
  .strict();

export const HarnessWorkers = z.union([
  z
    .enum(['daemon', 'external'])
    .describe(
      'daemon (the default when a command is given): the daemon runs `command` itself, `concurrency` rollouts at a time, for as long as the run runs; external: `harness-rl worker` processes or SDK workers elsewhere claim rollouts',
    ),
  z
    .object({ ray: RayWorkersConfig })
    .strict()
    .describe('workers on a Ray cluster, started and stopped with the run'),
]);

export const ContainerSandbox = z
  .object({
    image: z.string().min(1).describe('a local image (e.g. localhost/harness-rl-test:1); nothing is pulled'),
    engine: z.string().default('podman').describe('the container engine binary (podman, or docker)'),
    runtime: z
      .string()
      .optional()
      .describe('OCI runtime (podman --runtime), e.g. /usr/sbin/runc where crun refuses'),
    cgroup_manager: z.enum(['cgroupfs', 'systemd']).optional().describe('podman --cgroup-manager'),
    cpus: z.number().positive().default(1),
    memory_mb: z.number().int().positive().default(1024),
    pids: z.number().int().positive().default(1024).describe('ulimit nproc (and nofile) in the container'),
    network: z
      .enum(['proxy', 'none'])
      .default('proxy')
      .describe(
        'proxy: a network namespace of its own whose only route is a forward to the daemon (its proxy); none: no network at all',
      ),
    mounts: z
      .array(z.string())
      .default([])
      .describe(
        "more host folders mounted read-only at the same path (the harness runtime: /usr for node, a venv…); relative ones from the run config's folder",
      ),
    timeout_s: durationS()
      .optional()
      .describe('the container is killed after this long (default harness.timeout_s)'),
  })
  .strict();

export const HarnessSandbox = z.union([
  z
    .enum(['none', 'bubblewrap'])
    .describe(
      "none: the harness runs as the worker's child; bubblewrap: in bwrap, the filesystem read-only but for its own /tmp, the network shared (the proxy must be reachable)",
    ),
  z.object({ container: ContainerSandbox }).strict().describe('a container per attempt (Podman or Docker)'),
]);

export type RayWorkersConfig = z.infer<typeof RayWorkersConfig>;
export type HarnessWorkers = z.infer<typeof HarnessWorkers>;
export type ContainerSandbox = z.infer<typeof ContainerSandbox>;
export type HarnessSandbox = z.infer<typeof HarnessSandbox>;
