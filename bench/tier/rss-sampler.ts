/**
 * Samples the server's resident memory (VmRSS, VmHWM of /proc/<pid>/status) every 500 ms for the
 * whole live run, across a restart (the pid is asked for at each sample), and keeps the highest
 * reading with the phase and the moment it happened.
 */
import { procStatus } from '../proc-stats.ts';

export interface RssHighWater {
  /** Highest VmRSS sampled, KiB, and when: phase name and seconds since sampling began. */
  readonly maxRssKiB: number;
  readonly maxPhase: string;
  readonly maxAtSeconds: number;
  /** Highest VmHWM read (the kernel's own high-water mark, which catches peaks between samples). */
  readonly hwmKiB: number;
  /** The phase during which that VmHWM was first read. */
  readonly hwmPhase: string;
  readonly samples: number;
}

export const RSS_SAMPLE_MS = 500;

export class RssSampler {
  readonly #pid: () => number | undefined;
  readonly #phase: () => string | undefined;
  readonly #startedAt = Date.now();
  readonly #timer: NodeJS.Timeout;
  #max = { rss: 0, phase: '–', at: 0, hwm: 0, hwmPhase: '–', samples: 0 };

  constructor(pid: () => number | undefined, phase: () => string | undefined) {
    this.#pid = pid;
    this.#phase = phase;
    this.#timer = setInterval(() => this.sample(), RSS_SAMPLE_MS);
    this.#timer.unref();
    this.sample();
  }

  sample(): void {
    const pid = this.#pid();
    if (pid === undefined) return;
    let status: { rssKiB: number; hwmKiB: number };
    try {
      status = procStatus(pid);
    } catch {
      return; // the process is gone (between a kill and its restart)
    }
    const m = this.#max;
    m.samples++;
    const phase = this.#phase() ?? '–';
    if (status.rssKiB > m.rss)
      Object.assign(m, { rss: status.rssKiB, phase, at: (Date.now() - this.#startedAt) / 1000 });
    if (status.hwmKiB > m.hwm) Object.assign(m, { hwm: status.hwmKiB, hwmPhase: phase });
  }

  /** Stops sampling (after one last sample) and returns the high-water readings. */
  stop(): RssHighWater {
    this.sample();
    clearInterval(this.#timer);
    const m = this.#max;
    return {
      maxRssKiB: m.rss,
      maxPhase: m.phase,
      maxAtSeconds: m.at,
      hwmKiB: m.hwm,
      hwmPhase: m.hwmPhase,
      samples: m.samples,
    };
  }
}
