/**
 * A tiny file system of its own for a test (a tmpfs), to fill up for real: mounted on a
 * directory, filled until it refuses more, freed. Mounting needs root with the privilege to
 * (`canMount` says; tests that need it are skipped otherwise).
 *
 *   mount(dir, "256k")            // on an existing directory, owner-only
 *   const filler = fill(dir)      // whatever its files' page slack still takes
 *   rmSync(filler)                // space again
 *   unmount(dir)                  // lazily: a process may still have files open there
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmdirSync, statfsSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export const mount = (dir: string, size: string): void => {
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", dir], { stdio: "ignore" })
}

export const unmount = (dir: string): void => {
  execFileSync("umount", ["-l", dir], { stdio: "ignore" })
}

/** Whether this process can mount a tmpfs. */
export const canMount = (() => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "skein-mount-probe-"))
  try {
    mount(dir, "64k")
    unmount(dir)
    return true
  } catch {
    return false
  } finally {
    rmdirSync(dir)
  }
})()

/** Fills a file system with one file until it refuses more; gives that file's path. */
export const fill = (dir: string): string => {
  const filler = path.join(dir, "filler")
  const { bavail, bsize } = statfsSync(dir)
  try {
    writeFileSync(filler, Buffer.alloc(Number(bavail) * Number(bsize)))
  } catch {
    // ENOSPC: it holds what fit
  }
  return filler
}
