import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { pathToFileURL } from "node:url";
import { REPO } from "./processes.ts";

// Reads a V8 .cpuprofile (node --cpu-prof) and names where the time went: the top functions by self
// time, and self time by area (a package, keyplane's own source, node's internals, GC, idle).
// Run on its own: node bench/profile.ts <file.cpuprofile> [top]

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  /** Microseconds on the monotonic clock (CLOCK_MONOTONIC), as process.hrtime() in any process. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  /** Self time of the busiest functions: share of all samples (idle included) and of busy samples. */
  top: { frame: string; selfMs: number; share: number; busyShare: number }[];
  areas: { area: string; selfMs: number; busyShare: number }[];
}

function where(frame: CallFrame): string {
  if (!frame.url) return "";
  const path = frame.url.startsWith("file://") ? relative(REPO, new URL(frame.url).pathname) : frame.url;
  return `${path}:${frame.lineNumber + 1}`;
}

function areaOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith("(") ? frame.functionName : "native";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith("node:")) return "node internals";
  if (url.includes("/src/")) return "keyplane src";
  return "other";
}

const IDLE = new Set(["(idle)", "(program)"]);

/** Summarizes the samples of `file`, or only those taken within `window` (monotonic microseconds). */
export function summarizeProfile(file: string, topN = 15, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byFrame = new Map<string, number>();
  const byArea = new Map<string, number>();
  let total = 0;
  let idle = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    if (window && (at < window.fromUs || at > window.toUs)) return;
    const frame = frames.get(id)!;
    total += us;
    if (IDLE.has(frame.functionName)) idle += us;
    const name = `${frame.functionName || "(anonymous)"} ${where(frame)}`.trim();
    byFrame.set(name, (byFrame.get(name) ?? 0) + us);
    const area = areaOf(frame);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
  });
  const busy = total - idle;
  const ms = (us: number) => Number((us / 1000).toFixed(1));
  const pct = (us: number, of: number) => Number(((100 * us) / of).toFixed(1));
  return {
    totalMs: ms(total),
    top: [...byFrame]
      .filter(([name]) => !IDLE.has(name))
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([frame, us]) => ({ frame, selfMs: ms(us), share: pct(us, total), busyShare: pct(us, busy) })),
    areas: [...byArea]
      .filter(([area, us]) => !IDLE.has(area) && us >= busy / 1000)
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([area, us]) => ({ area, selfMs: ms(us), busyShare: pct(us, busy) })),
  };
}

export function profileText(summary: ProfileSummary): string {
  const lines = [`CPU profile: ${summary.totalMs} ms sampled`, "", "top functions by self time (% of busy time):"];
  for (const t of summary.top) lines.push(`  ${t.busyShare.toFixed(1).padStart(5)}%  ${t.frame}`);
  lines.push("", "self time by area (% of busy time):");
  for (const a of summary.areas) lines.push(`  ${a.busyShare.toFixed(1).padStart(5)}%  ${a.area}`);
  return lines.join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write("usage: node bench/profile.ts <file.cpuprofile> [top]\n");
    process.exitCode = 2;
  } else {
    process.stdout.write(profileText(summarizeProfile(file, top ? Number(top) : 15)) + "\n");
  }
}
