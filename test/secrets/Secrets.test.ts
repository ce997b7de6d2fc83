/**
 * What counts as secret, and the redactor: names, values, child environments,
 * streams split anywhere, bytes, and the /proc environment block of a real process.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { execFileSync, spawnSync } from "node:child_process"
import * as path from "node:path"
import * as EventScrub from "../../src/secrets/EventScrub.ts"
import * as Matcher from "../../src/secrets/Matcher.ts"
import * as Secrets from "../../src/secrets/Secrets.ts"
import { NODE, REPO_ROOT } from "../support/AgentProcess.ts"

const M = Secrets.MARKER

describe("Secrets: names", () => {
  it("errs toward secret", () => {
    const secret = [
      "MYLLM_KEY", "GITHUB_PAT", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "OPENAI_API_KEY", "openrouter_api_key", "APIKEY",
      "SOME_AUTH", "NPM_AUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "DB_PASSWORD", "MYSQL_PWD_PASSWD",
      "CLIENT_SECRET", "HF_TOKEN", "SENTRY_DSN", "SLACK_WEBHOOK_URL", "SMTP_PASS", "SSH_PRIVATE", "SESSION_COOKIE", "KEY", "TOKEN",
      "Authorization", "X-Api-Key", "Proxy-Authorization", "DATABASE_CONNECTION_STRING", "SKEIN_SERVE_TOKEN"
    ]
    const plain = [
      "PATH", "HOME", "PWD", "OLDPWD", "USER", "SHELL", "LANG", "TERM", "KEYBOARD", "TOKENIZERS_PARALLELISM", "GIT_AUTHOR_NAME",
      "GIT_AUTHOR_EMAIL", "SSH_AUTH_SOCK", "SKEIN_HOME", "NODE_OPTIONS", "DATABASE_URL", "X-Title", "PATCH_LEVEL"
    ]
    assert.deepStrictEqual(secret.filter((n) => !Secrets.isSecretName(n)), [])
    assert.deepStrictEqual(plain.filter(Secrets.isSecretName), [])
  })
})

describe("Secrets: child environments", () => {
  it("drops secret names, URLs with passwords and known values; keeps the rest", () => {
    const registry = Secrets.make()
    registry.addValue("configured-key-1234")
    const env = registry.childEnv({
      PATH: "/bin",
      HOME: "/home/u",
      OPENAI_API_KEY: "x",
      MYLLM_KEY: "sk-my-llm-0123456789",
      GITHUB_PAT: "ghp_0123456789",
      SKEIN_AUTH: "x",
      DATABASE_URL: "postgres://app:hunter2hunter2@db:5432/app",
      PLAIN_URL: "https://example.com/x",
      COPY_OF_KEY: "configured-key-1234",
      SKEIN_HOME: "/h",
      TOKENIZERS_PARALLELISM: "false",
      KEYBOARD: "us",
      UNSET: undefined
    })
    assert.deepStrictEqual(env, { PATH: "/bin", HOME: "/home/u", PLAIN_URL: "https://example.com/x", SKEIN_HOME: "/h", TOKENIZERS_PARALLELISM: "false", KEYBOARD: "us" })
  })

  it("the values of an environment's secrets are redacted, paths and short values are not", () => {
    const registry = Secrets.make()
    registry.addEnvironment({
      MYLLM_KEY: "myllm-0123456789abcdef",
      DATABASE_URL: "postgres://app:p%40ssw0rd-long@db/app",
      GOOGLE_APPLICATION_CREDENTIALS: "/home/u/creds.json",
      SHORT_TOKEN: "abc12",
      HOME: "/home/u"
    })
    assert.strictEqual(
      registry.redact("k=myllm-0123456789abcdef pw=p@ssw0rd-long url=postgres://app:p%40ssw0rd-long@db/app f=/home/u/creds.json t=abc12"),
      `k=${M} pw=${M} url=${M} f=/home/u/creds.json t=abc12`
    )
  })

  it("configured pairs: secret by name, or when the value looks like a credential", () => {
    const registry = Secrets.make()
    registry.addConfigured("GITHUB_TOKEN", "ghpabcdefgh")
    registry.addConfigured("NOTES", "/tmp/workspace2/notes")
    registry.addConfigured("LEVEL", "production")
    registry.addConfigured("OWNER", "my-company")
    registry.addConfigured("PORT", "80808080")
    registry.addConfigured("ENDPOINT", "https://api.example.com/v1?api_key=query-secret-9")
    registry.addConfigured("OPAQUE", "zq8-Xv2-Lm4-Pp0")
    registry.addConfigured("HEX", "3f9a0c77e1b2")
    registry.addConfigured("Authorization", "Bearer tok-abcdef123")
    const text = "ghpabcdefgh /tmp/workspace2/notes production my-company 80808080 https://api.example.com/v1 query-secret-9 zq8-Xv2-Lm4-Pp0 3f9a0c77e1b2 tok-abcdef123"
    assert.strictEqual(registry.redact(text), `${M} /tmp/workspace2/notes production my-company 80808080 https://api.example.com/v1 ${M} ${M} ${M} ${M}`)
  })
})

describe("Secrets: redaction", () => {
  it("every occurrence, overlapping ones as one marker, JSON-escaped and URL-encoded forms too", () => {
    const registry = Secrets.make()
    registry.addValue("abcdefgh")
    registry.addValue("efghijkl")
    registry.addValue("with\"quote&slash/")
    assert.strictEqual(registry.redact("xabcdefghijklx abcdefgh"), `x${M}x ${M}`)
    assert.strictEqual(registry.redact(JSON.stringify({ v: "with\"quote&slash/" })), `{"v":"${M}"}`)
    assert.strictEqual(registry.redact(`q=${encodeURIComponent("with\"quote&slash/")}`), `q=${M}`)
    const text = "nothing to see here"
    assert.strictEqual(registry.redact(text), text)
  })

  it("a key of several lines is redacted whole and line by line", () => {
    const registry = Secrets.make()
    registry.addEnvironment({ SSH_PRIVATE_KEY: "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\nAASCBKcwggSjAgEAAoIBAQC7\n-----END KEY-----" })
    assert.strictEqual(registry.redact("line: AASCBKcwggSjAgEAAoIBAQC7"), `line: ${M}`)
  })

  it("redactDeep keeps what has no secret as the same object", () => {
    const registry = Secrets.make()
    registry.addValue("s3cr3t-value")
    const clean = { a: ["x", { b: 1 }], c: null }
    assert.strictEqual(registry.redactDeep(clean), clean)
    const dirty: Record<string, unknown> = { a: ["x", { b: "is s3cr3t-value" }], c: null, "s3cr3t-value": true }
    assert.deepStrictEqual(registry.redactDeep(dirty), { a: ["x", { b: `is ${M}` }], c: null, [M]: true })
    assert.deepStrictEqual((dirty.a as Array<unknown>)[1], { b: "is s3cr3t-value" })
  })

  it("shapes of keys are redacted from text Skein writes itself (the value, not the word before it)", () => {
    assert.strictEqual(Secrets.redactWithShapes("Bearer abc.def sk-ant-api03-XYZxyz123456 ok"), `Bearer ${M} ${M} ok`)
  })
})

const chunked = (text: string, cuts: ReadonlyArray<number>): Array<string> => {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
  const out: Array<string> = []
  let from = 0
  for (const cut of at) {
    out.push(text.slice(from, cut))
    from = cut
  }
  out.push(text.slice(from))
  return out
}

describe("Secrets: streams", () => {
  const secrets = ["sk-live-0123456789", "0123abcd-pass", "passphrase-xyz"]
  const matcher = Matcher.make(secrets)

  it("a secret split anywhere across chunks never comes out", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom(...secrets), fc.string({ maxLength: 12 }), fc.constantFrom("sk-", "0123", "pass", "-")), { maxLength: 12 }),
        fc.array(fc.nat(300), { maxLength: 20 }),
        (pieces, cuts) => {
          const text = pieces.join("")
          const stream = matcher.stream()
          let out = ""
          for (const chunk of chunked(text, cuts)) out += stream.push(chunk)
          out += stream.flush()
          for (const secret of secrets) assert.notInclude(out, secret)
          // Cuts that fall inside a secret's first MIN_HOLD - 1 characters may show those; nothing else differs.
          if (cuts.length === 0) assert.strictEqual(out, matcher.redact(text))
        }
      ),
      { numRuns: 2000 }
    )
  })

  it("text with no secret streams through unchanged, chunk for chunk", () => {
    const stream = matcher.stream()
    for (const chunk of ["Hello", ", wor", "ld. sk", "ip it"]) assert.strictEqual(stream.push(chunk), chunk)
    assert.strictEqual(stream.flush(), "")
  })

  it("bytes: a secret split inside and across chunks, UTF-8 around it intact", () => {
    const registry = Secrets.make()
    registry.addValue("clé-secrète-42")
    const stream = registry.byteStream()
    const bytes = Buffer.from("début clé-secrète-42 fin ✓", "utf8")
    const out: Array<Uint8Array> = []
    for (let i = 0; i < bytes.length; i += 3) out.push(stream.push(bytes.subarray(i, i + 3)))
    out.push(stream.flush())
    assert.strictEqual(Buffer.concat(out).toString("utf8"), `début ${M} fin ✓`)
  })

  it("events: deltas that split a secret are redacted, the held part comes before the next canonical event", () => {
    const registry = Secrets.make()
    registry.addValue("sk-live-0123456789")
    const scrub = EventScrub.make(registry)
    const published: Array<string> = []
    const show = (bodies: ReadonlyArray<{ readonly type: string; readonly data: unknown }>) => {
      for (const b of bodies) published.push(`${b.type}:${(b.data as { text?: string }).text ?? ""}`)
    }
    show(scrub.ephemeral({ type: "text_delta", data: { text: "key is sk-live" } }))
    show(scrub.ephemeral({ type: "text_delta", data: { text: "-0123456789, ok" } }))
    show(scrub.ephemeral({ type: "thinking_delta", data: { text: "hm sk-li" } }))
    show(scrub.flush())
    const response = scrub.canonical({ type: "model_response" as const, data: { call: 1, parts: [{ type: "text" as const, text: "key is sk-live-0123456789, ok" }], stop: "end_turn" as const } })
    assert.deepStrictEqual(published, ["text_delta:key is ", `text_delta:${M}, ok`, "thinking_delta:hm ", "thinking_delta:sk-li"])
    assert.deepStrictEqual(response.data.parts, [{ type: "text", text: `key is ${M}, ok` }])
  })

  it("events: a client call is an operation and goes out as it is (a file written back keeps its secret); a question is shown redacted", () => {
    const registry = Secrets.make()
    registry.addValue("sk-live-0123456789")
    const scrub = EventScrub.make(registry)
    const call = {
      type: "client_call" as const,
      data: { requestId: "1.1", op: { method: "fs/write_text_file" as const, params: { path: "/w/.env", content: "KEY=sk-live-0123456789\n" } } }
    }
    assert.deepStrictEqual(scrub.ephemeral(call), [call])
    const [asked] = scrub.ephemeral({
      type: "permission_asked",
      data: { requestId: "1.2", toolCall: { toolCallId: "w1", title: "Write .env", kind: "edit", status: "pending", rawInput: { content: "KEY=sk-live-0123456789" } }, options: [] }
    })
    assert.notInclude(JSON.stringify(asked), "sk-live-0123456789")
  })
})

describe("Secrets: /proc/self/environ", () => {
  it.skipIf(process.platform !== "linux")("a real process hides its secret values from the block, and still reads them", () => {
    const script = [
      `import { hideSecrets } from ${JSON.stringify(path.join(REPO_ROOT, "src/secrets/ProcEnviron.ts"))}`,
      `import { readFileSync } from "node:fs"`,
      `const hidden = hideSecrets()`,
      `const block = readFileSync("/proc/self/environ", "latin1")`,
      `console.log(JSON.stringify({ hidden, leaked: block.includes("myllm-0123456789"), dbLeaked: block.includes("hunter2hunter2"), value: process.env.MYLLM_KEY, plain: block.includes("PLAIN_THING=visible") }))`
    ].join("\n")
    const out = execFileSync(NODE, ["--input-type=module", "-e", script], {
      env: { PATH: process.env.PATH, MYLLM_KEY: "myllm-0123456789", DATABASE_URL: "postgres://a:hunter2hunter2@h/d", PLAIN_THING: "visible" },
      encoding: "utf8"
    })
    const result = JSON.parse(out)
    assert.deepStrictEqual(result, { hidden: ["MYLLM_KEY", "DATABASE_URL"], leaked: false, dbLeaked: false, value: "myllm-0123456789", plain: true })
  })
})

describe("Secrets: stderr", () => {
  it("Effect's logger, through the CLI's console, writes messages and causes redacted", () => {
    const script = [
      `import * as Cause from "effect/Cause"`,
      `import * as Console from "effect/Console"`,
      `import * as Effect from "effect/Effect"`,
      `import * as Logger from "effect/Logger"`,
      `import * as Stderr from ${JSON.stringify(path.join(REPO_ROOT, "src/secrets/Stderr.ts"))}`,
      `const key = process.env.MYLLM_KEY`,
      `Effect.runSync(Effect.logError("calling with " + key, Cause.fail(new Error("bad key " + key))).pipe(`,
      `  Effect.provideService(Logger.LogToStderr, true), Effect.provideService(Console.Console, Stderr.console)))`
    ].join("\n")
    const run = spawnSync(NODE, ["--input-type=module", "-e", script], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, MYLLM_KEY: "myllm-0123456789" },
      encoding: "utf8"
    })
    assert.strictEqual(run.status, 0, run.stderr)
    assert.include(run.stderr, `calling with ${M}`)
    assert.include(run.stderr, `bad key ${M}`)
    assert.notInclude(run.stderr, "myllm-0123456789")
  })
})
