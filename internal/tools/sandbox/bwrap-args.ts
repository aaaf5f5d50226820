/**
 * The bubblewrap command line for one sandboxed command.
 *
 * What the command sees (the boundary is the kernel, not a parse of the shell text):
 * - the system read-only: `/usr`, `/bin`, `/sbin`, `/lib*`, `/opt`, and `/etc` minus the files that
 *   hold secrets (shadow passwords, SSH host keys, TLS private keys, sudoers, Kerberos keytabs);
 * - the workspace READ-ONLY except its desk (`<workspace>/desk/`, read-write, the working
 *   directory), the granted `ro` / `rw` paths, a private `/tmp` (also its HOME);
 * - its own PID namespace with its own `/proc` (the daemon's `/proc/<pid>/environ` is out of sight),
 *   its own IPC/UTS namespaces, and no network at all unless `network` is set;
 * - nothing else: not the data dir, the config file, the owner's home (`~/.ssh`, `~/.config`,
 *   shell history), other users' homes, `/run` (the Docker and D-Bus sockets) or `/var`;
 * - `hide` masks paths that would otherwise show through a bound folder (the data dir inside the
 *   workspace, the config file next to it). The desk is bound from a descriptor opened without
 *   following links (`pins`), so a link at its name can never widen what is writable.
 * Limits: `prlimit` (util-linux) sets CPU seconds, data memory (RLIMIT_DATA: heap and private writable
 * mappings; not the address space, which Node/Go/Java reserve by the gigabyte for WebAssembly and
 * guard regions without using it), file size and process count inside.
 */
import { existsSync, lstatSync, readlinkSync } from "node:fs";

/** Limits applied inside the sandbox. */
export interface SandboxLimits {
  /** CPU seconds; 0 = unlimited (a long-running MCP server). */
  cpuS: number;
  memoryMb: number;
  processes: number;
  fileMb: number;
  /**
   * Size of the private `/tmp` (and `/dev/shm`) in MB: RAM, so it is bounded here and, where a
   * cgroup is available, also counted in the command's memory.
   */
  tmpMb: number;
}

/** What this bwrap supports (sandbox-probe.ts finds out once). */
export interface BwrapFeatures {
  /** `--size` before `--tmpfs` (bubblewrap 0.8.0 and later). */
  size: boolean;
  /** `--disable-userns` with `--unshare-user` (bubblewrap 0.8.0 and later, kernel permitting). */
  disableUserns: boolean;
}

/** Everything that decides one sandbox's view of the machine. */
export interface SandboxSpec {
  /** Real absolute path of the workspace (bound read-only). */
  workspace: string;
  /** Real absolute path of the desk inside it (bound read-write from `pins`; the working directory). */
  desk: string;
  network: boolean;
  ro: readonly string[];
  rw: readonly string[];
  /** Bound read-write after the masks (the daemon's own grants inside a masked folder). */
  rwAfterHide?: readonly string[];
  /** Paths to mask if a bound folder would show them (directories become empty, files unreadable). */
  hide: readonly string[];
  /** Folders inside the workspace bound read-write onto themselves (the desk). */
  pins: readonly string[];
  /** Paths inside bound folders to re-bind read-only. */
  readOnly: readonly string[];
  /** Masked after every bind, the desk's included (labelled data a clean session must not see). */
  masks?: readonly string[];
  /** `pins` opened: [descriptor number in the bwrap process, path]. Paths without one are skipped. */
  pinFds?: readonly (readonly [number, string])[];
  /** `readOnly` opened, likewise. */
  readOnlyFds?: readonly (readonly [number, string])[];
  limits: SandboxLimits;
  /** Absolute path of prlimit inside the sandbox; limits are skipped when undefined. */
  prlimit: string | undefined;
  /**
   * Network through the daemon's egress proxy (tools/egress/egress-proxy.ts) instead of the host's:
   * the sandbox keeps its own empty network namespace, and `dir` (the proxy's socket and bridge) is
   * bound at `mount`, `node` (the bridge's interpreter) read-only.
   */
  proxy?: { dir: string; mount: string; node: string } | undefined;
  /** Optional bwrap features to use (none when undefined). */
  features?: BwrapFeatures;
}

/** The system folders bound read-only (symlinks such as `/bin -> usr/bin` are recreated as links). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"];

/**
 * Secrets under /etc: readable by root (the daemon may run as root in a container), useless to a
 * command. Directories are covered by an empty tmpfs, files by /dev/null (bound without device
 * access, so reading it is "Permission denied").
 */
export const ETC_SECRETS = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/ssh",
  "/etc/ssl/private",
  "/etc/krb5.keytab",
  "/etc/security/opasswd",
  "/etc/credstore",
  "/etc/credstore.encrypted",
  "/etc/wireguard",
  "/etc/NetworkManager/system-connections",
  "/etc/docker",
];

/** The fixed PATH inside: the owner's PATH may point into their home, which the sandbox hides. */
export const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Environment variables passed through from the daemon (locale only; everything else is set). */
const PASS_ENV = ["LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/** The scrubbed environment a sandboxed command starts with. */
export function sandboxEnv(base: NodeJS.ProcessEnv, desk: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: SANDBOX_PATH,
    HOME: "/tmp",
    TMPDIR: "/tmp",
    PWD: desk,
    // Python would leave __pycache__/*.pyc beside every module it imports: code, held on the desk.
    PYTHONDONTWRITEBYTECODE: "1",
    TERM: "dumb",
    USER: "familiar",
    LOGNAME: "familiar",
    SHELL: "/bin/sh",
  };
  for (const k of PASS_ENV) if (base[k] !== undefined) env[k] = base[k];
  return env;
}

function mask(p: string, out: string[]): void {
  const st = lstatSync(p, { throwIfNoEntry: false });
  if (!st || st.isSymbolicLink()) return;
  if (st.isDirectory()) out.push("--tmpfs", p);
  else out.push("--ro-bind", "/dev/null", p);
}

/** The bwrap arguments (without the `bwrap` itself) that run `argv` inside the sandbox. */
export function bwrapArgs(spec: SandboxSpec, argv: readonly string[]): string[] {
  const a: string[] = ["--die-with-parent", "--new-session", "--unshare-all"];
  // No nested user namespaces: they are the usual first step of a kernel exploit, and a command has
  // no need of them. `--disable-userns` needs a user namespace of our own to restrict.
  if (spec.features?.disableUserns) a.push("--unshare-user", "--disable-userns");
  // Through the proxy the sandbox keeps its private namespace (only its own loopback) + the socket.
  if (spec.network && !spec.proxy) a.push("--share-net");
  for (const d of SYSTEM_DIRS) {
    const st = lstatSync(d, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isSymbolicLink()) a.push("--symlink", readlinkSync(d), d);
    else a.push("--ro-bind", d, d);
  }
  a.push("--ro-bind", "/etc", "/etc");
  for (const s of ETC_SECRETS) mask(s, a);
  // Every writable RAM-backed place is sized: /tmp (also HOME), /dev/shm; /var/tmp is /tmp; /dev and
  // the sandbox's own root (a tmpfs holding the mount points) are made read-only at the end.
  const size = spec.features?.size ? ["--size", String(spec.limits.tmpMb * 1024 * 1024)] : [];
  a.push("--proc", "/proc", "--dev", "/dev", ...size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev");
  a.push(...size, "--tmpfs", "/tmp", "--dir", "/var", "--symlink", "/tmp", "/var/tmp");
  // With the network shared, name resolution may need the resolver's socket folder.
  if (spec.network && !spec.proxy && existsSync("/run/systemd/resolve"))
    a.push("--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve");
  for (const p of spec.ro) a.push("--ro-bind-try", p, p);
  // INVARIANT (docs/security.md, "Zones"): the workspace is read-only; only the desk, bound below
  // from a descriptor, is writable.
  a.push("--ro-bind", spec.workspace, spec.workspace);
  for (const p of spec.rw) a.push("--bind-try", p, p);
  // Masks after every granted path (an `rw: [~]` must not show the data dir inside it), and only
  // then the daemon's own grants inside masked places (a CLI engine's home in the data dir).
  for (const p of spec.hide) mask(p, a);
  for (const p of spec.rwAfterHide ?? []) a.push("--bind-try", p, p);
  // Workspace paths are bound from descriptors opened without following symlinks (pinned-fds.ts),
  // never by path: a command running alongside could swap `.git/hooks` for a link to `~/.ssh`.
  if (spec.pinFds && spec.readOnlyFds) {
    for (const [fd, p] of spec.pinFds) a.push("--bind-fd", String(fd), p);
    for (const [fd, p] of spec.readOnlyFds) a.push("--ro-bind-fd", String(fd), p);
  } else {
    // No descriptors to pass (an MCP server started by the SDK): by path, symlinks left out.
    const real = (p: string): boolean => lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() === false;
    for (const p of spec.pins.filter(real)) a.push("--bind", p, p);
    for (const p of spec.readOnly.filter(real)) a.push("--ro-bind", p, p);
  }
  for (const p of spec.masks ?? []) mask(p, a);
  if (spec.proxy)
    a.push("--ro-bind", spec.proxy.node, spec.proxy.node, "--bind", spec.proxy.dir, spec.proxy.mount);
  // Last, after every mount point was created on it: the root tmpfs is not a place to write to.
  a.push("--remount-ro", "/");
  a.push("--chdir", spec.desk, "--");
  if (spec.prlimit) {
    const l = spec.limits;
    a.push(
      spec.prlimit,
      `--cpu=${l.cpuS > 0 ? l.cpuS : "unlimited"}`,
      `--data=${l.memoryMb * 1024 * 1024}`,
      `--fsize=${l.fileMb * 1024 * 1024}`,
      `--nproc=${l.processes}`,
      "--core=0",
      "--",
    );
  }
  a.push(...argv);
  return a;
}
