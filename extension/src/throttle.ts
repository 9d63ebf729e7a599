// Many events, one redraw: `fn` runs once, `ms` after the first `schedule()` since it last ran.
export class Throttle {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly fn: () => void,
    private readonly ms: number,
  ) {}

  schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.fn();
    }, this.ms);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
