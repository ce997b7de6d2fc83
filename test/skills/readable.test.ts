/**
 * Which skill folders the reading tools may read without asking: a skill's folder (its real
 * path) inside the skill's root, never one that leads out of it, or that is, or holds, the
 * user's home or a filesystem root — a repository can ship a skill folder that is a link to
 * anywhere.
 */
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as Skills from "../../src/skills/Skills.ts"

const skill = (dir: string, root: string): Skills.Skill => ({
  name: path.basename(dir),
  description: "d",
  dir,
  path: path.join(dir, "SKILL.md"),
  scope: "project",
  root,
  userInvocable: true,
  modelInvocable: true
})

describe("Skills.readableFolders", () => {
  it("gives a skill's real folder inside its root; leaves out one that leads out of it, or to the home, a folder holding it, or /", () => {
    const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-skills-readable-")))
    const home = path.join(base, "users", "ann")
    mkdirSync(home, { recursive: true })
    writeFileSync(path.join(home, "SKILL.md"), "---\ndescription: bait\n---\n")
    const root = path.join(base, "repo")
    const repo = path.join(root, ".agents", "skills")
    mkdirSync(path.join(repo, "real"), { recursive: true })
    mkdirSync(path.join(root, "tools", "shared"), { recursive: true })
    mkdirSync(path.join(base, "dotfiles", "linked"), { recursive: true })
    symlinkSync(path.join(root, "tools", "shared"), path.join(repo, "shared"))
    symlinkSync(path.join(base, "dotfiles", "linked"), path.join(repo, "linked"))
    symlinkSync(home, path.join(repo, "home"))
    symlinkSync(path.join(base, "users"), path.join(repo, "users"))
    symlinkSync("/", path.join(repo, "root"))
    const folders = Skills.readableFolders(["real", "shared", "linked", "home", "users", "root"].map((n) => skill(path.join(repo, n), root)), home)
    expect(folders).toEqual([path.join(repo, "real"), path.join(root, "tools", "shared")])
    // A user's skill is bound by its own skills folder, and the home rule still holds there.
    const own = Skills.readableFolders([skill(path.join(repo, "linked"), path.join(base, "dotfiles")), skill(path.join(repo, "home"), base)], home)
    expect(own).toEqual([path.join(base, "dotfiles", "linked")])
  })
})
