// One running evolution (EvolveLoop.body reads top to bottom): evaluate the root harness on the train
// split; each generation, for each kept candidate, let the proposer edit copies of it, snapshot each
// copy, run the regularisers that need no rollouts (edit budget, leak check, critic), evaluate the
// survivors on train with the parent's seeds, prune those not better than their parent or not
// different from it, add novelty as a bonus, keep the best k; finally evaluate the root and the
// finalists once on the held-out split, which no proposer, critic or selection ever saw. Resumed after
// a daemon stop, it reads back what it stored (stored.ts) and goes on from there: a candidate already
// evaluated is not evaluated again, an evaluation under way is waited for, not started anew.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readTasks } from '../api/tasks';
import type { DaemonContext } from '../context';
import { errorText } from '../error-text';
import { compareEvaluations } from '../eval/compare';
import { evaluationDone, startEvaluation } from '../eval/start';
import type { RunConfig } from '../protocol/config';
import type { EvalSplit } from '../protocol/evaluation';
import {
  candidateEvaluationName,
  type EvolutionResult,
  type EvolveConfig,
  evolutionRecordingName,
} from '../protocol/evolution';
import type { StoredCandidate, StoredEvaluation, StoredEvolution } from '../store/store';
import { sameTrajectories, type Trajectories, trajectoriesOf } from './behaviour';
import { candidateFiles } from './candidate-harness';
import { criticise } from './critic';
import { diffTrees, patchStats, type Tree, unifiedDiff } from './diff';
import { buildBrief, resolveArgv, runProposer } from './proposer';
import { editBudget, leakCheck, novelty, prune } from './regularisers';
import { readTree, treeHash, writeTree } from './snapshot';
import { type StoredProgress, storedProgress } from './stored';

export const INTERRUPTED =
  'the daemon stopped while it ran: `harness-rl evolve resume <id>` goes on from there';

export class EvolveLoop {
  private readonly abort = new AbortController();
  private readonly trees = new Map<string, Tree>();
  private readonly candidates = new Map<string, StoredCandidate>();
  private readonly trajectories = new Map<string, Trajectories>();
  private readonly evaluations = new Map<string, StoredEvaluation>();
  private readonly heldOut = new Map<string, StoredEvaluation>();
  /** What an earlier daemon stored (resume), else null. */
  private earlier: StoredProgress | null = null;
  private halting = false;
  private readonly timing = { evaluation: 0, proposer: 0, critic: 0, started: 0 };
  private heldOutEvaluations = 0;
  private readonly work: string;
  done: Promise<void> = Promise.resolve();

  constructor(
    private readonly ctx: DaemonContext,
    private readonly evolution: StoredEvolution,
    private readonly config: RunConfig & { evolve: EvolveConfig },
  ) {
    this.work = join(ctx.dataDir, 'evolutions', evolution.id);
  }

  private get ev(): EvolveConfig {
    return this.config.evolve;
  }

  /** Start it; `resume`: go on from what an earlier daemon stored of it. */
  begin(resume = false): void {
    this.done = this.execute(resume);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done;
  }

  /** Daemon shutdown: the evolution is interrupted (`harness-rl evolve resume` goes on with it). */
  async halt(): Promise<void> {
    this.halting = true;
    await this.stop();
  }

  private async execute(resume: boolean): Promise<void> {
    const { store } = this.ctx;
    const finished_at = () => new Date().toISOString();
    try {
      if (resume) this.earlier = await storedProgress(store, this.evolution);
      const result = await this.body();
      await store.updateEvolution(this.evolution.id, {
        status: 'finished',
        result,
        finished_at: finished_at(),
      });
    } catch (err) {
      const stopped = this.abort.signal.aborted;
      if (!stopped)
        this.ctx.log('evolution failed', { evolution_id: this.evolution.id, error: errorText(err) });
      await store
        .updateEvolution(this.evolution.id, {
          status: this.halting ? 'interrupted' : stopped ? 'stopped' : 'failed',
          error: this.halting ? INTERRUPTED : stopped ? null : errorText(err),
          finished_at: finished_at(),
        })
        .catch(() => {});
    }
  }

  private async body(): Promise<EvolutionResult> {
    const ev = this.ev;
    this.timing.started = Date.now();
    const root = await this.root();
    const trainTasks = (await readTasks(this.config, this.evolution.base_dir ?? undefined))
      .map((t, index) => ({ ...t, index }))
      .filter((t) => t.split === ev.train_split);
    let frontier = [this.candidates.get(root.hash)!];
    for (let g = 1; g <= ev.generations; g++) {
      const born: StoredCandidate[] = [];
      for (const parent of frontier) {
        const earlier = (this.earlier?.candidates ?? []).filter(
          (c) => c.parent === parent.hash && c.generation === g,
        );
        for (let i = 0; i < ev.children; i++) {
          const made = earlier[i] ? this.candidates.get(earlier[i].hash) : undefined;
          born.push(made ? await this.resumeChild(made, parent) : await this.child(parent, g, i, trainTasks));
        }
      }
      const bonus = ev.novelty === false ? 0 : ev.novelty.weight;
      const kept = born
        .filter((c) => c.status === 'accepted')
        .sort((a, b) => this.score(b, bonus) - this.score(a, bonus))
        .slice(0, ev.keep);
      for (const c of kept) await this.save({ ...c, selected: true });
      if (kept.length) frontier = kept;
    }
    return this.finish(root);
  }

  /** The root candidate (the harness folder as it is), evaluated on train; on resume, as stored. */
  private async root(): Promise<StoredCandidate> {
    const earlier = this.earlier;
    if (earlier) {
      for (const c of earlier.candidates) this.candidates.set(c.hash, c);
      for (const [hash, tree] of earlier.trees) this.trees.set(hash, tree);
      for (const [hash, e] of earlier.train) this.evaluations.set(hash, e);
      for (const [hash, t] of earlier.trajectories) this.trajectories.set(hash, t);
      for (const [hash, e] of earlier.heldOut) this.heldOut.set(hash, e);
    }
    let root = earlier?.candidates.find((c) => c.parent === null);
    if (!root) {
      // From an evolved candidate: its files (the evolution's folder is the one Adopt writes into).
      const from = this.config.harness.candidate;
      const tree = from
        ? (await candidateFiles(this.ctx.store, from)).tree
        : readTree(this.evolution.harness_dir);
      root = await this.save({
        ...this.blank(treeHash(tree), null, 0),
        patch: diffTrees(new Map(), tree),
        status: 'evaluating',
      });
      this.trees.set(root.hash, tree);
    }
    if (!this.evaluations.has(root.hash)) await this.evaluateTrain(root);
    return this.save({ ...this.candidates.get(root.hash)!, status: 'accepted', selected: true });
  }

  /** A child an earlier daemon made: as it ended, or (interrupted in its evaluation) evaluated now. */
  private async resumeChild(c: StoredCandidate, parent: StoredCandidate): Promise<StoredCandidate> {
    return c.status === 'evaluating' ? this.evaluateChild(c, parent) : c;
  }

  private score(c: StoredCandidate, bonus: number): number {
    return (c.train_reward ?? 0) + bonus * (c.novelty ?? 0);
  }

  private blank(hash: string, parent: string | null, generation: number): StoredCandidate {
    return {
      evolution_id: this.evolution.id,
      hash,
      parent,
      generation,
      status: 'proposed',
      stats: { files: 0, hunks: 0, lines: 0 },
      verdicts: {},
      train_evaluation: null,
      held_out_evaluation: null,
      train_reward: null,
      train_ci: null,
      tokens_per_task: null,
      novelty: null,
      held_out_reward: null,
      selected: false,
      proposer: null,
      created_at: new Date().toISOString(),
      patch: [],
    };
  }

  private async save(c: StoredCandidate): Promise<StoredCandidate> {
    this.candidates.set(c.hash, c);
    return this.ctx.store.putCandidate(c);
  }

  /** The chain of candidates from the root's child down to `c`. */
  private lineage(c: StoredCandidate): StoredCandidate[] {
    const chain: StoredCandidate[] = [];
    for (let at: StoredCandidate | undefined = c; at?.parent; at = this.candidates.get(at.parent))
      chain.unshift(at);
    return chain;
  }

  /** Let the proposer edit a working copy of `parent` (outside the store); the copy's files, and how it went. */
  private async propose(parent: StoredCandidate, generation: number, index: number) {
    const ev = this.ev;
    mkdirSync(join(this.work, 'proposals'), { recursive: true });
    const scratch = mkdtempSync(join(this.work, 'proposals', `g${generation}-`));
    const workdir = join(scratch, 'harness');
    writeTree(workdir, this.trees.get(parent.hash)!);
    const siblings = [...this.candidates.values()].filter((c) => c.parent === parent.hash);
    const train = this.evaluations.get(parent.hash)!;
    const brief = await buildBrief(this.ctx, parent, train, this.lineage(parent), siblings, ev.budget, index);
    const t0 = Date.now();
    try {
      const proposer = await runProposer(this.ctx, {
        argv: resolveArgv(ev.proposer, this.evolution.base_dir),
        workdir,
        briefDir: join(scratch, 'brief'),
        brief,
        upstream: ev.proposer_upstream,
        name: evolutionRecordingName(this.evolution.id, generation, 'proposer'),
        timeoutMs: ev.proposer_timeout_s * 1000,
        signal: this.abort.signal,
      });
      return { tree: readTree(workdir), proposer };
    } finally {
      this.timing.proposer += Date.now() - t0;
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  /** One proposal on `parent`: proposer, snapshot, regularisers, and (surviving those) a train evaluation. */
  private async child(
    parent: StoredCandidate,
    generation: number,
    index: number,
    trainTasks: { input: unknown; index: number }[],
  ): Promise<StoredCandidate> {
    const ev = this.ev;
    const parentTree = this.trees.get(parent.hash)!;
    const { tree, proposer } = await this.propose(parent, generation, index);
    // A proposer cut short by a stop made no candidate (a resume asks again).
    if (this.abort.signal.aborted) throw new Error('stopped');
    const hash = treeHash(tree);
    const patch = diffTrees(parentTree, tree);
    // The same content as a candidate already made is no new candidate: its proposal is kept apart.
    const known = this.candidates.has(hash);
    const c: StoredCandidate = {
      ...this.blank(
        known ? `${hash}~g${generation}.${parent.hash.slice(0, 6)}.${index}` : hash,
        parent.hash,
        generation,
      ),
      patch,
      stats: { files: 0, hunks: 0, lines: 0 },
      proposer,
    };
    c.stats = patchStats(patch);
    const reject = async (key: string, reason: string) =>
      this.save({
        ...c,
        status: 'rejected',
        verdicts: { ...c.verdicts, [key]: { verdict: 'reject', reason } },
      });
    if (proposer.exit_code !== 0 && patch.length === 0)
      return reject('proposer', `the proposer exited ${proposer.exit_code} and changed nothing`);
    if (patch.length === 0) return reject('pruner', 'no change: the proposer left the harness as it was');
    if (known) return reject('pruner', `the same harness as candidate ${hash}`);
    c.verdicts.budget = editBudget(patch, ev.budget);
    if (c.verdicts.budget.verdict === 'reject') return this.save({ ...c, status: 'rejected' });
    c.verdicts.leak = leakCheck(patch, trainTasks, ev.leak_check);
    if (c.verdicts.leak.verdict === 'reject') return this.save({ ...c, status: 'rejected' });
    const t1 = Date.now();
    c.verdicts.critic = await this.critic(unifiedDiff(patch), generation);
    this.timing.critic += Date.now() - t1;
    if (c.verdicts.critic.verdict === 'reject') return this.save({ ...c, status: 'rejected' });
    this.trees.set(hash, tree);
    return this.evaluateChild(await this.save({ ...c, status: 'evaluating' }), parent);
  }

  /** A child past the regularisers that need no rollouts: its train evaluation, the pruner, novelty. */
  private async evaluateChild(candidate: StoredCandidate, parent: StoredCandidate): Promise<StoredCandidate> {
    const ev = this.ev;
    const { hash } = candidate;
    let c = candidate;
    try {
      await this.evaluateTrain(c);
    } catch (err) {
      if (this.abort.signal.aborted) throw err; // stopped, not failed: a resume evaluates it
      return this.save({
        ...this.candidates.get(hash)!,
        status: 'failed',
        verdicts: { ...c.verdicts, evaluation: { verdict: 'reject', reason: errorText(err) } },
      });
    }
    c = this.candidates.get(hash)!;
    const comparison = compareEvaluations(
      this.evaluations.get(parent.hash)!,
      this.evaluations.get(hash)!,
      ev.seed,
    );
    c.verdicts.pruner = prune(
      comparison,
      sameTrajectories(this.trajectories.get(parent.hash)!, this.trajectories.get(hash)!),
      ev.pruner,
    );
    const archive = [...this.trajectories.entries()].filter(([h]) => h !== hash).map(([, t]) => t.behaviour);
    c.novelty = novelty(this.trajectories.get(hash)!.behaviour, archive);
    c.verdicts.novelty =
      ev.novelty === false
        ? { verdict: 'off', reason: `novelty ${c.novelty.toFixed(3)}` }
        : {
            verdict: 'accept',
            reason: `novelty ${c.novelty.toFixed(3)} × ${ev.novelty.weight} selection bonus`,
          };
    return this.save({ ...c, status: c.verdicts.pruner.verdict === 'reject' ? 'pruned' : 'accepted' });
  }

  private async critic(diff: string, generation: number) {
    const ev = this.ev;
    if (ev.critic === false || 'command' in ev.critic)
      return criticise(ev.critic, diff, {
        cwd: this.evolution.base_dir ?? undefined,
        signal: this.abort.signal,
        timeoutMs: 120_000,
      });
    const recording = await this.ctx.store.createRecording({
      name: evolutionRecordingName(this.evolution.id, generation, 'critic'),
      upstream: ev.proposer_upstream,
      scoped: true,
    });
    try {
      return await criticise(ev.critic, diff, {
        openai: { baseUrl: `${this.ctx.baseUrl()}/v1`, key: recording.key, model: this.config.model.name },
        signal: this.abort.signal,
        timeoutMs: 120_000,
      });
    } finally {
      await this.ctx.store.stopRecording(recording.id).catch(() => {});
    }
  }

  /** Evaluate a candidate (its folder written out) on `split`; the evaluation, waited for. */
  private async evaluate(c: StoredCandidate, split: EvalSplit): Promise<StoredEvaluation> {
    const dir = join(this.work, 'candidates', c.hash);
    writeTree(dir, this.trees.get(c.hash)!);
    const t0 = Date.now();
    const name = candidateEvaluationName(this.evolution.id, c.hash, split);
    // Resumed: an evaluation an earlier daemon started is waited for (a restarted daemon runs it over).
    const started =
      this.earlier?.started.get(name) ??
      (await startEvaluation(this.ctx, {
        config: this.config,
        base_dir: this.evolution.base_dir ?? undefined,
        harness_dir: dir,
        split,
        attempts: this.ev.attempts,
        seed: this.ev.seed,
        pass_threshold: 1,
        infrastructure_retries: 2,
        name,
      }));
    const e = await evaluationDone(this.ctx, started.id, this.abort.signal);
    this.timing.evaluation += Date.now() - t0;
    if (e.status !== 'finished')
      throw new Error(`evaluation ${e.id} on ${split} ${e.status}: ${e.error ?? ''}`);
    return e;
  }

  private async evaluateTrain(c: StoredCandidate): Promise<void> {
    const e = await this.evaluate(c, this.ev.train_split);
    this.evaluations.set(c.hash, e);
    this.trajectories.set(c.hash, await trajectoriesOf(this.ctx.store, e.tasks ?? []));
    const s = e.summary!;
    await this.save({
      ...this.candidates.get(c.hash)!,
      train_evaluation: e.id,
      train_reward: s.mean_reward,
      train_ci: s.ci_low !== null && s.ci_high !== null ? [s.ci_low, s.ci_high] : null,
      tokens_per_task: s.policy_tokens_per_task,
    });
  }

  /** Held-out, once each, for the root and the finalists (best by train reward); the result. */
  private async finish(root: StoredCandidate): Promise<EvolutionResult> {
    const ev = this.ev;
    const all = [...this.candidates.values()];
    const finalists = all
      .filter((c) => c.status === 'accepted' && c.parent !== null)
      .sort((a, b) => (b.train_reward ?? 0) - (a.train_reward ?? 0))
      .slice(0, ev.finalists);
    const heldOut = new Map<string, StoredEvaluation>();
    for (const c of [root, ...finalists]) {
      const e = this.heldOut.get(c.hash) ?? (await this.evaluate(c, ev.held_out_split));
      this.heldOutEvaluations++;
      heldOut.set(c.hash, e);
      await this.save({
        ...this.candidates.get(c.hash)!,
        held_out_evaluation: e.id,
        held_out_reward: e.summary?.mean_reward ?? null,
      });
    }
    const best = finalists[0] ?? null;
    const r = heldOut.get(root.hash)!.summary!;
    const b = best ? heldOut.get(best.hash)!.summary! : null;
    const by_status: Record<string, number> = {};
    for (const c of this.candidates.values()) by_status[c.status] = (by_status[c.status] ?? 0) + 1;
    const total = Date.now() - this.timing.started;
    const rootTrain = this.candidates.get(root.hash)!.train_reward;
    const bestTrain = best ? this.candidates.get(best.hash)!.train_reward : null;
    const diff = (x: number | null | undefined, y: number | null | undefined) =>
      x === null || x === undefined || y === null || y === undefined ? null : x - y;
    return {
      best: best?.hash ?? null,
      root: root.hash,
      train_change: diff(bestTrain, rootTrain),
      held_out_change: diff(b?.mean_reward, r.mean_reward),
      held_out: { root: r.mean_reward, best: b?.mean_reward ?? null },
      policy_token_change:
        b?.policy_tokens_per_task && r.policy_tokens_per_task
          ? (b.policy_tokens_per_task - r.policy_tokens_per_task) / r.policy_tokens_per_task
          : null,
      candidates: this.candidates.size,
      by_status,
      held_out_evaluations: this.heldOutEvaluations,
      overhead_s: (total - this.timing.evaluation - this.timing.proposer - this.timing.critic) / 1000,
      evaluation_s: this.timing.evaluation / 1000,
      proposer_s: this.timing.proposer / 1000,
    };
  }
}
