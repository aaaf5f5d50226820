/** The machine a benchmark ran on, recorded with every result. */
import { cpus, loadavg, totalmem, release, platform } from "node:os";

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryMB: number;
  node: string;
  os: string;
  /** 1-, 5- and 15-minute load averages when the run started (other work on the machine skews figures). */
  loadAtStart: number[];
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    cpuModel: list[0]?.model.trim() ?? "unknown",
    cores: list.length,
    memoryMB: Math.round(totalmem() / 1024 / 1024),
    node: process.version,
    os: `${platform()} ${release()}`,
    loadAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** Current 1-minute load average. */
export function load1(): number {
  return Math.round((loadavg()[0] ?? 0) * 100) / 100;
}
