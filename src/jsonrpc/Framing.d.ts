/**
 * LF-only NDJSON framing.
 *
 * Lines are split on `\n` (0x0A) only. U+2028 and U+2029 are legal inside JSON
 * strings and are NOT line breaks here (Node's `readline` treats them as such;
 * that is the bug this module avoids). Bytes are split before decoding, so a
 * multi-byte UTF-8 character cut across chunks decodes correctly.
 *
 * Memory is bounded: a line longer than `maxLineBytes` is not buffered; its
 * bytes are dropped up to the next `\n` and a single `TooLong` item reports it.
 */
import { Stream } from "effect";
export type Line = {
    readonly _tag: "Line";
    readonly text: string;
} | {
    readonly _tag: "TooLong";
};
export interface Options {
    /** Longest accepted line in bytes, excluding the `\n`. Default 16 MiB. */
    readonly maxLineBytes?: number | undefined;
}
export declare const DEFAULT_MAX_LINE_BYTES: number;
/** A stateful splitter: feed it chunks, get back the complete lines they close. */
export interface Splitter {
    readonly push: (chunk: Uint8Array) => Array<Line>;
    /** End of input: the unterminated last line, if any. The splitter is reset. */
    readonly end: () => Array<Line>;
    /** Bytes currently held for an unterminated line (for tests of the memory bound). */
    readonly bufferedBytes: () => number;
}
export declare const makeSplitter: (options?: Options) => Splitter;
/**
 * Splits a byte stream into lines. A final unterminated line is emitted at the
 * end of input. Each run of the resulting stream gets its own splitter.
 */
export declare const lines: (options?: Options) => <E, R>(self: Stream.Stream<Uint8Array, E, R>) => Stream.Stream<Line, E, R>;
/**
 * One NDJSON line: `JSON.stringify` plus `\n`, with U+2028/U+2029 escaped so
 * clients that split with `readline` keep our lines whole. Throws like
 * `JSON.stringify` on values JSON cannot represent (BigInt, cycles).
 */
export declare const encode: (message: unknown) => string;
