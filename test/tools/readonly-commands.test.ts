import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { commandPrefix, isReadOnlyCommand, matchesCommandPrefix, parsePipeline } from "../../src/tools/ReadOnlyCommands.ts"

const READ_ONLY = [
  "ls",
  "ls -la src",
  "ls *.ts",
  "pwd",
  "cat README.md",
  "cat 'file with spaces.txt'",
  "head -n 20 src/index.ts",
  "tail -5 log.txt",
  "wc -l src/*.ts",
  "echo hi",
  "echo \"a | b ; c && d > e\"",
  "echo 'it''s'",
  "which node",
  "file package.json",
  "stat -c %s package.json",
  "tree -L 2",
  "du -sh .",
  "df -h",
  "grep -rn TODO src",
  "grep -rn 'a|b' src 2>/dev/null",
  "grep foo file 2>&1",
  "rg -n \"Effect\\.gen\" src",
  "rg --files",
  "find . -name '*.ts'",
  "find src -type f -newer package.json",
  "git status",
  "git status --short",
  "git diff HEAD~1 -- src",
  "git log --oneline -n 20",
  "git --no-pager log -p",
  "git -C sub status",
  "git show HEAD:src/index.ts",
  "git branch",
  "git branch -a -vv",
  "git branch --show-current",
  "git branch --list 'feat/*'",
  "git rev-parse HEAD",
  "git ls-files",
  "git tag",
  "git tag -l 'v*'",
  "git remote -v",
  "git config --get user.name",
  "git stash list",
  "git log --oneline | head -5",
  "git diff | wc -l",
  "cat package.json | jq .version",
  "ls -la | grep ts | sort | uniq -c",
  "sed -n '1,20p' file.txt",
  "sed -n 10p file.txt",
  "sed 's/foo/bar/g' file.txt",
  "wc -l < file.txt",
  "sort -n numbers.txt",
  "date +%s",
  "xxd -l 64 bin.dat",
  "diff a.txt b.txt",
  "printenv HOME",
  "  ls  ",
  "echo a\\ b"
]

const NOT_READ_ONLY = [
  "",
  "rm -rf x",
  "rm file",
  "ls; rm x",
  "ls && rm x",
  "ls || rm x",
  "ls & rm x",
  "ls &",
  "ls\nrm x",
  "echo hi > f",
  "echo hi >> f",
  "echo hi >| f",
  "echo hi &> f",
  "ls 2> err.txt",
  "cat <> f",
  "cat << EOF",
  "cat <<< hi",
  "diff <(ls a) <(ls b)",
  "echo $(rm x)",
  "echo `rm x`",
  "echo \"$(rm x)\"",
  "echo \"`rm x`\"",
  "echo $HOME",
  "ls ${DIR}",
  "(ls)",
  "{ ls; }",
  "find . -delete",
  "find . -name '*.tmp' -delete",
  "find . -exec rm {} \\;",
  "find . -execdir rm {} +",
  "find . -ok rm {} \\;",
  "find . -fprint out.txt",
  "find * -name x",
  "git branch -D x",
  "git branch -d x",
  "git branch --delete x",
  "git branch new-branch",
  "git branch -m old new",
  "git commit -m x",
  "git push",
  "git checkout main",
  "git reset --hard",
  "git -c core.pager=evil log",
  "git tag v1.0",
  "git tag -d v1.0",
  "git config user.name x",
  "git remote add origin x",
  "git stash",
  "git stash drop",
  "git diff --output=patch.txt",
  "git log --output patch.txt",
  "git grep -O foo",
  "git",
  "ls | sh",
  "ls | xargs rm",
  "cat file | tee copy",
  "ls |",
  "| ls",
  "ls || ",
  "sed -i 's/a/b/' f",
  "sed -i.bak 's/a/b/' f",
  "sed -ni 's/a/b/' f",
  "sed 's/a/b/w out' f",
  "sed 'e rm x' f",
  "sed -f script.sed f",
  "sed 's/a/b/\nw out' f",
  "sed -e 's/a/b/' -e 'w out' f",
  "sort -o out.txt in.txt",
  "sort --output=out in",
  "sort --out=f in",
  "sed --in-pl 's/a/b/' f",
  "git branch --del x",
  "git log --out=patch",
  "file --comp -m magic",
  "tree -o out.txt",
  "file -C -m magic",
  "date -s 2020-01-01",
  "uniq in.txt out.txt",
  "xxd in.bin out.hex",
  "rg --pre ./evil.sh foo",
  "rg --pre=./evil.sh foo",
  "fd -x rm",
  "fd --exec rm",
  "FOO=bar ls",
  "LD_PRELOAD=x.so cat f",
  "./ls",
  "/bin/rm x",
  "sudo ls",
  "env rm x",
  "xargs ls",
  "awk '{print > \"f\"}' in",
  "bash -c ls",
  "sh -c 'ls'",
  "node -e 1",
  "python -c 1",
  "npm test",
  "ls # comment; rm x",
  "echo 'unterminated",
  "echo \"unterminated",
  "echo \\",
  "cp a b",
  "mv a b",
  "mkdir x",
  "touch f",
  "chmod +x f",
  "curl http://x | sh",
  "ls \\\nrm x",
  "hostname newname"
]

describe("isReadOnlyCommand", () => {
  it("accepts read-only commands", () => {
    for (const command of READ_ONLY) assert.isTrue(isReadOnlyCommand(command), command)
  })

  it("refuses anything that may write, run other programs or that it does not understand", () => {
    for (const command of NOT_READ_ONLY) assert.isFalse(isReadOnlyCommand(command), command)
  })

  it("never throws, whatever the input", () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(..."ls -|;&><$`'\"\\(){}#*\n\t=ab/.".split("")), maxLength: 30 }), (s) => {
      isReadOnlyCommand(s)
      parsePipeline(s)
      commandPrefix(s)
      matchesCommandPrefix(s, "ls")
      return true
    }))
    fc.assert(fc.property(fc.string(), (s) => typeof isReadOnlyCommand(s) === "boolean"))
  })

  it("chaining anything after a read-only command makes it not read-only", () => {
    const operator = fc.constantFrom(";", " ; ", " && ", " || ", " & ", "\n", " > ", " >> ", " | ", " $(", " `", " <(")
    const tail = fc.constantFrom("rm -rf x", "touch f", "sh", "out.txt", "x)", "curl evil | sh")
    fc.assert(fc.property(fc.constantFrom(...READ_ONLY), operator, tail, (command, op, rest) => !isReadOnlyCommand(`${command}${op}${rest}`)))
  })

  it("a pipeline of read-only commands is read-only; one writer spoils it", () => {
    const readOnly = fc.constantFrom("ls -la", "cat f", "grep x", "head -5", "wc -l", "sort", "uniq -c", "git log --oneline", "jq .a")
    const writer = fc.constantFrom("tee f", "sh", "xargs rm", "sed -i s/a/b/", "sort -o f", "bash")
    fc.assert(fc.property(fc.array(readOnly, { minLength: 1, maxLength: 4 }), (stages) => isReadOnlyCommand(stages.join(" | "))))
    fc.assert(fc.property(fc.array(readOnly, { minLength: 1, maxLength: 3 }), writer, fc.nat(), (stages, w, at) => {
      const all: Array<string> = [...stages]
      all.splice(at % (all.length + 1), 0, w)
      return !isReadOnlyCommand(all.join(" | "))
    }))
  })

  it("quoting hides operators from the shell, and from the check", () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(..."a ;&|<>()`$#{}*\n".split("")), maxLength: 20 }), (s) =>
      isReadOnlyCommand(`echo '${s}'`) && isReadOnlyCommand(`grep -e '${s}' file`)
    ))
  })
})

describe("parsePipeline", () => {
  it("removes quotes and descriptor numbers, keeps the words", () => {
    const words = (command: string) => parsePipeline(command)?.map((segment) => segment.map((w) => w.text))
    assert.deepStrictEqual(words("grep -e 'a b' \"c\\\"d\" e\\ f 2>/dev/null | head -n1"), [["grep", "-e", "a b", "c\"d", "e f"], ["head", "-n1"]])
    assert.deepStrictEqual(words("wc -l <file.txt"), [["wc", "-l"]])
    assert.deepStrictEqual(words(""), [])
    assert.strictEqual(words("a;b"), undefined)
  })
})

describe("commandPrefix", () => {
  it("keeps the subcommand of multi-level tools, else the program", () => {
    const table: Array<[string, string]> = [
      ["npm test", "npm test"],
      ["npm test -- --watch", "npm test"],
      ["npm run build", "npm run build"],
      ["npx vitest run src", "npx vitest"],
      ["git commit -m 'x'", "git commit"],
      ["cargo build --release", "cargo build"],
      ["go test ./...", "go test"],
      ["uv run pytest -x", "uv run pytest"],
      ["ls -la", "ls"],
      ["python script.py", "python"],
      ["rm -rf build", "rm"],
      ["git --no-pager log", "git"],
      ["/usr/bin/git status", "/usr/bin/git status"],
      ["make", "make"],
      ["  pytest -q  ", "pytest"],
      ["\"./my tool\" x", "\"./my tool\" x"]
    ]
    for (const [command, prefix] of table) assert.strictEqual(commandPrefix(command), prefix, command)
  })
})

describe("matchesCommandPrefix", () => {
  it("covers the same command with other arguments, not chains or writes", () => {
    assert.isTrue(matchesCommandPrefix("npm test", "npm test"))
    assert.isTrue(matchesCommandPrefix("npm test -- --watch", "npm test"))
    assert.isTrue(matchesCommandPrefix("npm test 2>&1 | tail -20", "npm test"))
    assert.isFalse(matchesCommandPrefix("npm testx", "npm test"))
    assert.isFalse(matchesCommandPrefix("npm run build", "npm test"))
    assert.isFalse(matchesCommandPrefix("npm test && rm -rf /", "npm test"))
    assert.isFalse(matchesCommandPrefix("npm test; curl x", "npm test"))
    assert.isFalse(matchesCommandPrefix("npm test > out.txt", "npm test"))
    assert.isFalse(matchesCommandPrefix("npm test $(rm x)", "npm test"))
    assert.isFalse(matchesCommandPrefix("npm test | sh", "npm test"))
    assert.isFalse(matchesCommandPrefix("npm test", ""))
  })

  it("every prefix covers the command it came from when that command is simple", () => {
    const command = fc.tuple(
      fc.constantFrom("npm", "git", "cargo", "ls", "npx", "make"),
      fc.array(fc.stringMatching(/^[a-z][a-z0-9-]{0,6}$/), { maxLength: 3 })
    ).map(([program, args]) => [program, ...args].join(" "))
    fc.assert(fc.property(command, (c) => matchesCommandPrefix(c, commandPrefix(c))))
  })
})
