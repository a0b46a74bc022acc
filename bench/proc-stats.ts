/** What Linux says of a process in /proc: memory and CPU time (the benches run on Linux only). */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every Linux this runs on). */
const USER_HZ = 100;

/** Resident memory and its high-water mark, in KiB (VmRSS, VmHWM of /proc/<pid>/status; NaN when absent). */
export function procStatus(pid: number): { rssKiB: number; hwmKiB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') };
}

/** CPU seconds a process has used: utime + stime (fields 14 and 15 of /proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // After the command name (which may hold spaces): fields[0] is field 3 (state), so field n is fields[n - 3].
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
}
