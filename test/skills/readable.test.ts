/**
 * Which skill folders the reading tools may read without asking: a skill's folder (its real
 * path), never one that is, or holds, the user's home or a filesystem root — a repository can
 * ship a skill folder that is a link to anywhere.
 */
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as Skills from "../../src/skills/Skills.ts"

const skill = (dir: string): Skills.Skill => ({
  name: path.basename(dir),
  description: "d",
  dir,
  path: path.join(dir, "SKILL.md"),
  scope: "project",
  userInvocable: true,
  modelInvocable: true
})

describe("Skills.readableFolders", () => {
  it("gives a skill's real folder; leaves out one that is a link to the home, to a folder holding it, or to /", () => {
    const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-skills-readable-")))
    const home = path.join(base, "users", "ann")
    mkdirSync(home, { recursive: true })
    writeFileSync(path.join(home, "SKILL.md"), "---\ndescription: bait\n---\n")
    const repo = path.join(base, "repo", ".agents", "skills")
    mkdirSync(path.join(repo, "real"), { recursive: true })
    mkdirSync(path.join(base, "dotfiles", "linked"), { recursive: true })
    symlinkSync(path.join(base, "dotfiles", "linked"), path.join(repo, "linked"))
    symlinkSync(home, path.join(repo, "home"))
    symlinkSync(path.join(base, "users"), path.join(repo, "users"))
    symlinkSync("/", path.join(repo, "root"))
    const folders = Skills.readableFolders(["real", "linked", "home", "users", "root"].map((n) => skill(path.join(repo, n))), home)
    expect(folders).toEqual([path.join(repo, "real"), path.join(base, "dotfiles", "linked")])
  })
})
