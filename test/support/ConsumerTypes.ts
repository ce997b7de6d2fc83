/**
 * Type-checks a project that depends on a package the way its own compiler would with
 * `skipLibCheck: false`, as far as that package is concerned: the project's files, and every
 * declaration file of the package itself, are checked in full (an unresolved import, a missing
 * name, a type that does not hold under the project's strict settings); the other declaration
 * files (TypeScript's lib, Effect, @types/node) only as far as the checked files use them, as
 * `skipLibCheck: true` would. Their own bodies are theirs to check, and checking them all costs
 * several times the rest (Effect's declarations are large).
 *
 * One program, as `tsc -p <project>` builds it from the project's tsconfig.json; the result is
 * tsc's text of the diagnostics, empty when there are none.
 */
import { join, sep } from "node:path"
import ts from "typescript"

export const checkConsumer = (project: string, packageName: string): string => {
  const config = ts.getParsedCommandLineOfConfigFile(join(project, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"))
    }
  })
  if (config === undefined) throw new Error(`${project}/tsconfig.json could not be read`)
  if (config.options.skipLibCheck !== false) throw new Error(`${project}/tsconfig.json must set skipLibCheck: false`)
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options, configFileParsingDiagnostics: config.errors })
  const installed = join(project, "node_modules", packageName) + sep
  const checked = program.getSourceFiles().filter((file) => !file.isDeclarationFile || file.fileName.startsWith(installed))
  if (!checked.some((file) => file.isDeclarationFile)) throw new Error(`the project uses no declaration file of ${packageName}`)
  const diagnostics = [
    ...program.getConfigFileParsingDiagnostics(),
    ...program.getOptionsDiagnostics(),
    ...program.getSyntacticDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...checked.flatMap((file) => program.getSemanticDiagnostics(file))
  ]
  return ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => project, getNewLine: () => "\n" })
}
