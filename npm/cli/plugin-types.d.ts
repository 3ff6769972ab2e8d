// Types the plugins share (vite.d.ts, vite.d.mts, rollup.d.ts, rollup.d.mts).
import type { FormatName, Size } from './index.js';

export type Matcher = string | RegExp | ((path: string) => boolean);

export interface PluginOptions {
  /** Only these files (globs, RegExps or functions of the path below outDir). `filter` is the same. */
  include?: Matcher | Matcher[];
  filter?: Matcher | Matcher[];
  /** Not these files. */
  exclude?: Matcher | Matcher[];
  /** No output for files under this size; `minSize` is the same. Default: 1. */
  threshold?: Size;
  minSize?: Size;
  /** Formats to write; `algorithms` (and `algorithm`) are the same. Default: gzip and brotli. */
  formats?: FormatName[] | string;
  algorithms?: FormatName[] | string;
  algorithm?: FormatName | FormatName[];
  /** Default: gzip 9, brotli 11, zstd 19. */
  levels?: { gzip?: number; brotli?: number; zstd?: number };
  /**
   * RFC 9842 deltas against the previous build: true keeps each build in
   * node_modules/.cache/precompress/prev-ENVIRONMENT for the next; a string
   * is that directory (relative to the root).
   */
  deltas?: boolean | string;
  /** The content cache; default node_modules/.cache/precompress; false: none. */
  cacheDir?: string | false;
  cacheMaxSize?: Size;
  /** Print the size table (default), or only the summary line. */
  verbose?: boolean;
  /** Do nothing. */
  disable?: boolean;
  maxRatio?: number;
  jobs?: number;
  memoryLimit?: Size;
  skipExt?: string[] | string;
  gzipEngine?: 'zlib' | 'libdeflate' | 'zopfli';
  dictionaryName?: string | string[];
  /** Further arguments for the program. */
  args?: string[];
  /** The program to run (default: PRECOMPRESS_BINARY, else the platform package's). */
  binary?: string;
  /** Not supported: servers need the original beside its outputs, and it is the next build's dictionary. */
  deleteOriginalAssets?: never;
}

/** A Vite plugin (any shape Vite takes: its fields are Vite's own). */
export interface PrecompressVitePlugin {
  name: 'precompress';
  apply: 'build';
  enforce: 'post';
  [hook: string]: unknown;
}

/** A Rollup plugin: compresses each output's files once they are written. */
export interface PrecompressRollupPlugin {
  name: 'precompress';
  [hook: string]: unknown;
}
