/**
 * Headless Chromium for the web monitor's tests: Debian's `/usr/bin/chromium` (never a
 * downloaded browser), driven by `playwright-core`: one browser per test file, and a fresh
 * context (cookies, storage, cache: nothing shared) per `launch`.
 *
 * Without Chromium the tests are skipped with a message — unless `CI` is set, where a missing
 * browser fails them (CI installs it: .ci/run).
 */
import { existsSync } from "node:fs"
import { type Browser, type BrowserContext, chromium } from "playwright-core"
import { afterAll, afterEach } from "vitest"

export const CHROMIUM = process.env["SKEIN_TEST_CHROMIUM"] ?? "/usr/bin/chromium"
export const available = existsSync(CHROMIUM)
export const inCi = process.env["CI"] === "true" || process.env["CI"] === "1"

/** Whether to skip the browser tests here (and why); in CI, a missing browser is a failure instead. */
export const skipReason = (): string | undefined => {
  if (available) return undefined
  if (inCi) throw new Error(`${CHROMIUM} is missing: CI must install Debian's chromium (see .ci/run)`)
  return `${CHROMIUM} is missing: the web monitor's browser tests are skipped (apt-get install chromium)`
}

/**
 * A headless Chromium for a test file, started at the first `launch` and closed after the file;
 * each `launch` is a context of its own (as a fresh profile would be), closed after its test.
 * Starting the browser once per file rather than once per test saves a second or two a test.
 */
export const useBrowsers = () => {
  let browser: Promise<Browser> | undefined
  const open: Array<BrowserContext> = []
  afterEach(async () => {
    for (const context of open.splice(0)) await context.close().catch(() => {})
  })
  afterAll(async () => {
    const started = await browser?.catch(() => undefined)
    await started?.close().catch(() => {})
  })
  return {
    /** A context of the file's headless Chromium: no cookie, storage or cache of another test's. */
    launch: async (): Promise<BrowserContext> => {
      browser ??= chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
      })
      const context = await (await browser).newContext()
      // A step that waits longer than this fails with what it waited for (before the test times out).
      context.setDefaultTimeout(12_000)
      open.push(context)
      return context
    }
  }
}
