// Types of scripts/startup-modules.mjs, for the tests that share its rules.
export interface Metafile {
  readonly inputs: Readonly<Record<string, { readonly imports: ReadonlyArray<{ readonly path: string; readonly kind: string; readonly external?: boolean }> }>>
}
export interface Rule {
  readonly why: string
  readonly test: (input: string) => boolean
}
export declare const staticallyReached: (metafile: Metafile, roots: ReadonlyArray<string>) => Set<string>
export declare const ACP_START: ReadonlyArray<string>
export declare const NEVER_AT_START: ReadonlyArray<Rule>
export declare const NOT_BEFORE_SESSION: ReadonlyArray<Rule>
export declare const broken: (reached: Iterable<string>, rules: ReadonlyArray<Rule>) => Array<{ readonly why: string; readonly inputs: Array<string> }>
export declare const SCHEMAS_BEFORE_SESSION: ReadonlyArray<string>
export declare const unexpectedSchemas: (built: ReadonlyArray<string>) => Array<string>
