/**
 * What a sandboxed command may touch, as bubblewrap's command line. Pure: the facts (which
 * paths exist, where a repository keeps its git directory) come from `Facts.ts`.
 *
 * The view a command gets, in mount order (a later mount wins where they overlap):
 * 1. the whole file system read-only, the session's /dev (`SESSION_DEV` in `Namespace.ts`: prepared
 *    once per session, never the machine's), a fresh /proc (its own PID namespace), an empty
 *    /run (sockets of agents and daemons: ssh-agent, docker, D-Bus) and the session's private
 *    /tmp;
 * 2. the session's roots and the configured extra places, writable (read-only for a command
 *    that was allowed because it only reads, and in plan mode);
 * 3. in each repository: its git directory bound over itself (it cannot be moved or
 *    replaced), `config` and `hooks` read-only, the same for submodules; a linked worktree's
 *    `.git` file and its pointers read-only;
 * 4. the secret places hidden: directories become an empty read-only tmpfs, files /dev/null.
 *    A hidden place that holds a root (the user chose to work in it) is left visible.
 * Then no capabilities, no new privileges (bwrap sets that), and the seccomp filter
 * (`Seccomp.ts`) that refuses unix and vsock sockets.
 */

/** Places under the user's home that hold credentials (files or directories), hidden from commands. */
export const SECRET_PLACES: ReadonlyArray<string> = [
  ".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", ".config/git/credentials",
  ".config/gcloud", ".azure", ".kube", ".docker", ".npmrc", ".yarnrc.yml", ".pypirc",
  ".cargo/credentials", ".cargo/credentials.toml", ".config/gh", ".config/hub", ".gem/credentials",
  ".m2/settings.xml", ".m2/settings-security.xml", ".gradle/gradle.properties", ".ivy2/.credentials",
  ".terraform.d/credentials.tfrc.json", ".vault-token", ".pgpass", ".my.cnf", ".password-store",
  ".local/share/keyrings", ".config/op", ".oci", ".config/doctl", ".s3cfg", ".boto", ".config/rclone",
  ".config/composer/auth.json", ".composer/auth.json", ".nuget/NuGet/NuGet.Config", ".config/hcloud",
  ".config/netlify", ".config/heroku", ".config/vercel", ".databrickscfg", ".config/sops", ".age",
  ".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json", ".config/github-copilot",
  ".mozilla", ".config/google-chrome", ".config/chromium", ".thunderbird"
]

/** A repository's git files, as a command must see them. */
export interface GitLayout {
  /** Bound writable over themselves: the git directory (so it cannot be moved away), and what git must write for a worktree. */
  readonly writable: ReadonlyArray<string>
  /** Existing files and directories bound read-only over themselves. */
  readonly readOnly: ReadonlyArray<string>
  /** Missing directories that must stay empty (a `hooks` directory that is not there): an empty read-only tmpfs. */
  readonly empty: ReadonlyArray<string>
}

export interface Layout {
  /** Where the command starts. */
  readonly cwd: string
  /** The session's roots, then the configured extra places: real paths of existing directories. */
  readonly writable: ReadonlyArray<string>
  /** Mount them read-only instead (a command allowed because it only reads; plan mode). */
  readonly readOnly: boolean
  /** The host directory that is /tmp inside. */
  readonly tmp: string
  /** Existing directories to hide (real paths). */
  readonly hiddenDirs: ReadonlyArray<string>
  /** Existing files (or sockets) to hide (real paths). */
  readonly hiddenFiles: ReadonlyArray<string>
  readonly git: ReadonlyArray<GitLayout>
  /** `/var/run` is a directory of its own (not the usual link to /run): it is emptied too. */
  readonly varRunIsDirectory: boolean
}

const isInside = (dir: string, path: string): boolean =>
  path === dir || path.startsWith(dir === "/" ? "/" : `${dir}/`)

/** Directories replaced as a whole before the roots are bound: what lies below them is not seen. */
const replaced = (layout: Layout): ReadonlyArray<string> => ["/tmp", "/run", ...(layout.varRunIsDirectory ? ["/var/run"] : [])]

/**
 * Whether a hidden place needs a mount of its own: it is seen at all (not under a replaced
 * directory, unless a root brings it back) and it does not hold a root.
 */
const needsHiding = (layout: Layout, path: string): boolean => {
  if (layout.writable.some((root) => isInside(path, root))) return false
  const underRoot = layout.writable.some((root) => isInside(root, path))
  return underRoot || !replaced(layout).some((dir) => isInside(dir, path))
}

/**
 * bubblewrap's options for a command (everything before `--`). `namespaces`: `"session"` when
 * the command runs inside the session's network and mount namespaces (entered before bwrap):
 * it takes the session's prepared `/dev` with one bind; `"own"` for a network namespace of its
 * own (loopback only) and a `/dev` made for it alone (never `--dev-bind`: outside the
 * session's mount namespace that would be the machine's, disks included). `seccompFd`: the
 * descriptor bwrap reads the filter from, when there is one.
 */
export const bwrapOptions = (layout: Layout, options: { readonly namespaces: "session" | "own"; readonly seccompFd?: number | undefined }): Array<string> => {
  // No `--die-with-parent`: the init would then be killed the moment bubblewrap reports the
  // command's exit, taking what the command left running with it before Skein could see it and
  // tell the model. The init waits for those instead; Skein's containment ends them (and the
  // init, whose death ends the whole namespace) as for any command, Skein's own death included.
  const out = [
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    ...(options.namespaces === "own" ? ["--unshare-net"] : []),
    "--ro-bind", "/", "/",
    ...(options.namespaces === "session" ? ["--dev-bind", "/dev", "/dev"] : ["--dev", "/dev"]),
    "--proc", "/proc",
    "--tmpfs", "/run",
    ...(layout.varRunIsDirectory ? ["--tmpfs", "/var/run"] : []),
    "--bind", layout.tmp, "/tmp"
  ]
  for (const dir of layout.writable) out.push(layout.readOnly ? "--ro-bind" : "--bind", dir, dir)
  if (!layout.readOnly) {
    for (const git of layout.git) {
      for (const dir of git.writable) out.push("--bind", dir, dir)
      for (const path of git.readOnly) out.push("--ro-bind", path, path)
      for (const dir of git.empty) out.push("--tmpfs", dir, "--remount-ro", dir)
    }
  }
  for (const dir of layout.hiddenDirs) if (needsHiding(layout, dir)) out.push("--tmpfs", dir, "--remount-ro", dir)
  for (const file of layout.hiddenFiles) if (needsHiding(layout, file)) out.push("--ro-bind", "/dev/null", file)
  out.push("--chdir", layout.cwd, "--cap-drop", "ALL")
  if (options.seccompFd !== undefined) out.push("--seccomp", String(options.seccompFd))
  return out
}

/** The programs the command line runs (absolute paths, found once). */
export interface Tools {
  readonly bwrap: string
  readonly nsenter: string
}

/** The one descriptor a command's chain inherits: the seccomp filter, which bwrap reads and closes. */
const SECCOMP_FD = 3

/** Where the session's namespaces are held: descriptors of Skein's process (`pid`). */
export interface Held {
  readonly pid: number
  readonly userFd: number
  readonly netFd: number
  readonly mntFd: number
}

/**
 * The whole command line: enter the session's user, network and mount namespaces, then bubblewrap,
 * then the program. `nsenter` opens the namespaces through Skein's `/proc/<pid>/fd`: they are
 * not inherited, so nothing down the chain (bwrap passes every descriptor it gets on to the
 * command) can hold them. Nothing secret is on it (the environment is passed as the
 * environment: command lines are readable by every user).
 */
export const commandLine = (
  tools: Tools,
  layout: Layout,
  program: { readonly file: string; readonly args: ReadonlyArray<string> },
  options: { readonly seccomp: boolean; readonly namespaces: Held }
): { readonly file: string; readonly args: ReadonlyArray<string> } => ({
  file: tools.nsenter,
  args: [
    `--user=/proc/${options.namespaces.pid}/fd/${options.namespaces.userFd}`,
    `--net=/proc/${options.namespaces.pid}/fd/${options.namespaces.netFd}`,
    `--mount=/proc/${options.namespaces.pid}/fd/${options.namespaces.mntFd}`,
    "--preserve-credentials",
    "--",
    tools.bwrap,
    ...bwrapOptions(layout, { namespaces: "session", seccompFd: options.seccomp ? SECCOMP_FD : undefined }),
    "--",
    program.file,
    ...program.args
  ]
})
