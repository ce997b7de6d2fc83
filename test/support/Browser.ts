/**
 * Headless Chromium for the web monitor's tests: Debian's `/usr/bin/chromium` (never a
 * downloaded browser), driven by `playwright-core`, with a fresh profile per browser.
 *
 * Without Chromium the tests are skipped with a message — unless `CI` is set, where a missing
 * browser fails them (CI installs it: .ci/run).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type BrowserContext, chromium } from "playwright-core"
import { afterEach } from "vitest"

export const CHROMIUM = process.env["SKEIN_TEST_CHROMIUM"] ?? "/usr/bin/chromium"
export const available = existsSync(CHROMIUM)
export const inCi = process.env["CI"] === "true" || process.env["CI"] === "1"

/** Whether to skip the browser tests here (and why); in CI, a missing browser is a failure instead. */
export const skipReason = (): string | undefined => {
  if (available) return undefined
  if (inCi) throw new Error(`${CHROMIUM} is missing: CI must install Debian's chromium (see .ci/run)`)
  return `${CHROMIUM} is missing: the web monitor's browser tests are skipped (apt-get install chromium)`
}

/** Opens browsers for a test file and closes them (and removes their profiles) after each test. */
export const useBrowsers = () => {
  const open: Array<{ context: BrowserContext; profile: string }> = []
  afterEach(async () => {
    for (const { context, profile } of open.splice(0)) {
      await context.close().catch(() => {})
      rmSync(profile, { recursive: true, force: true })
    }
  })
  return {
    /** A headless Chromium with a fresh profile. */
    launch: async (): Promise<BrowserContext> => {
      const profile = mkdtempSync(path.join(os.tmpdir(), "skein-chromium-"))
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
      })
      // A step that waits longer than this fails with what it waited for (before the test times out).
      context.setDefaultTimeout(12_000)
      open.push({ context, profile })
      return context
    }
  }
}
