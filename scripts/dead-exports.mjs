// `npm run check:exports`: the exports of src/ that nothing else uses, and the modules that only
// re-export another (shims that keep an old path alive). Read with the TypeScript compiler over
// src/, test/ and scripts/ (value and type uses alike, through namespaces, re-exports and
// dynamic imports); src/index.ts is the public API, so what it exports counts as used.
//
// Prints one line per finding, `path:line  name  (what)`, where what is
// - "unused": nothing uses it, not even its own module: delete it;
// - "shim": the module only re-exports others (`export * as` namespaces, which group
//   modules under one name, are not shims); point its users at the real module;
// - "not imported": only its own module uses it: drop `export`, unless a declaration file
//   needs the name (`npm run declarations` says "cannot be named": a type an exported value's
//   inferred type mentions). These are listed, but only the two above fail the check.
// Exits 1 when there is an unused export or a shim. A name used only from inside a string (a
// bundle that esbuild builds from text) is not seen: check such a finding before deleting it.
import { readdirSync, statSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import ts from "typescript"

const ROOT = resolve(import.meta.dirname, "..")
const SRC = join(ROOT, "src")
const PUBLIC = join(SRC, "index.ts")

const walk = (dir, ok) =>
  readdirSync(dir).flatMap((name) => {
    if (name === "node_modules" || name === "fixtures" || name.startsWith(".")) return []
    const path = join(dir, name)
    return statSync(path).isDirectory() ? walk(path, ok) : ok(path) ? [path] : []
  })

const code = (path) => /\.(ts|mts|mjs|js)$/.test(path) && !path.endsWith(".d.ts")
const files = [...walk(SRC, code), ...walk(join(ROOT, "test"), code), ...walk(join(ROOT, "scripts"), code), ...walk(join(ROOT, "bench"), code)]

const program = ts.createProgram(files, {
  target: ts.ScriptTarget.ES2023,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowJs: true,
  checkJs: false,
  noEmit: true,
  skipLibCheck: true,
  allowImportingTsExtensions: true,
  resolveJsonModule: true,
  types: ["node"]
})
const checker = program.getTypeChecker()

/** The symbol an alias (import, re-export) finally names. */
const target = (symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol)

/** Symbol → the files that name it (outside its own declarations). */
const usedIn = new Map()
const use = (symbol, file) => {
  if (symbol === undefined) return
  const named = symbol.flags & ts.SymbolFlags.Alias ? [symbol, target(symbol)] : [symbol]
  for (const s of [...named, ...named.map((n) => checker.getExportSymbolOfSymbol(n))]) {
    if (!usedIn.has(s)) usedIn.set(s, new Set())
    usedIn.get(s).add(file)
  }
}

/** Whether `node` is the name a declaration gives (not a use of it). */
const declares = (node) => {
  const parent = node.parent
  return parent !== undefined && ts.isDeclaration(parent) && parent.name === node && !ts.isExportSpecifier(parent) && !ts.isImportSpecifier(parent)
}

/** Every export of a module, used as one value (`Promise.resolve(Acp)` where a shape is expected). */
const useAll = (module, file) => {
  if (module !== undefined && module.flags & ts.SymbolFlags.ValueModule) for (const s of checker.getExportsOfModule(module)) use(s, file)
}

/** Whether a namespace or a dynamic import's value is only read a member at a time (`X.a`, `{ a } =`). */
const byMember = (node) => {
  let at = node
  while (ts.isAwaitExpression(at.parent) || ts.isParenthesizedExpression(at.parent)) at = at.parent
  const parent = at.parent
  return (ts.isPropertyAccessExpression(parent) && parent.expression === at) ||
    (ts.isQualifiedName(parent) && parent.left === at) ||
    (ts.isVariableDeclaration(parent) && ts.isObjectBindingPattern(parent.name)) ||
    ts.isNamespaceImport(parent) || ts.isImportTypeNode(parent)
}

for (const source of program.getSourceFiles()) {
  if (source.isDeclarationFile || !files.includes(source.fileName)) continue
  const file = source.fileName
  const visit = (node) => {
    if (ts.isIdentifier(node) && !declares(node)) {
      const symbol = checker.getSymbolAtLocation(node)
      use(symbol, file)
      if (symbol !== undefined && symbol.flags & ts.SymbolFlags.Alias && !byMember(node)) useAll(target(symbol), file)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments.length > 0) {
      if (!byMember(node)) useAll(checker.getSymbolAtLocation(node.arguments[0]), file)
    } else if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
      // `const { a } = await import("./m.ts")`: `a` names the module's export.
      const name = node.propertyName ?? node.name
      if (ts.isIdentifier(name)) use(checker.getTypeAtLocation(node.parent).getProperty(name.text), file)
    } else if (ts.isExportDeclaration(node) && node.exportClause === undefined && node.moduleSpecifier !== undefined) {
      // `export * from "./m.ts"`: whatever it passes on is used where it is imported.
      const module = checker.getSymbolAtLocation(node.moduleSpecifier)
      if (module !== undefined && file === PUBLIC) for (const s of checker.getExportsOfModule(module)) use(s, file)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}

const findings = []
const at = (source, node) => `${relative(ROOT, source.fileName)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`

for (const source of program.getSourceFiles()) {
  const file = source.fileName
  if (!file.startsWith(SRC + "/") || file === PUBLIC || source.isDeclarationFile) continue
  const module = checker.getSymbolAtLocation(source)
  if (module === undefined) continue

  // A shim: every statement re-exports from another module.
  const statements = source.statements
  const reexports = statements.length > 0 && statements.every((s) => ts.isExportDeclaration(s) && s.moduleSpecifier !== undefined)
  if (reexports && !statements.every((s) => s.exportClause !== undefined && ts.isNamespaceExport(s.exportClause))) {
    findings.push(`${at(source, statements[0])}  ${relative(ROOT, file)}  (shim)`)
  }

  for (const exported of checker.getExportsOfModule(module)) {
    const real = target(exported)
    const declarations = exported.declarations ?? []
    // Re-exports (`export { a } from`, `export *`) are judged where they are declared.
    if (declarations.length === 0 || declarations.some((d) => d.getSourceFile() !== source)) continue
    const users = new Set([...(usedIn.get(exported) ?? []), ...(usedIn.get(real) ?? [])])
    const elsewhere = [...users].some((f) => f !== file)
    if (elsewhere) continue
    findings.push(`${at(source, declarations[0])}  ${exported.name}  (${users.has(file) ? "not imported" : "unused"})`)
  }
}

for (const line of findings.sort()) console.log(line)
process.exit(findings.some((line) => !line.endsWith("(not imported)")) ? 1 : 0)
