export declare const declarationInputs: (root: string) => string
export declare const STAMP: string
