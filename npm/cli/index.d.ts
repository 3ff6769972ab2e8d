// Types of @precompress/cli (hand-written; the program's --json-lines
// records and summary are docs/reference.md's "--json-lines" and "--json").

export type Format = 'gz' | 'br' | 'zst';
/** A format as the option takes it: the program's name or the codec's. */
export type FormatName = Format | 'gzip' | 'brotli' | 'brotliCompress' | 'zstd' | 'zstandard';
/** Bytes, or a string the program reads: "4k", "512M", "2G" (powers of 1024). */
export type Size = number | string;

export interface Options {
  /** Formats to write (--formats). Default: gz and br. */
  formats?: FormatName[] | string;
  /** Levels (--gzip-level, --brotli-quality, --zstd-level). Default: 9, 11, 19. */
  levels?: { gzip?: number; brotli?: number; zstd?: number };
  /** --gzip-engine: zlib (default, whitenoise's bytes), libdeflate or zopfli. */
  gzipEngine?: 'zlib' | 'libdeflate' | 'zopfli';
  /** Only files matching these globs (--include; `**` spans directories). */
  include?: string | string[];
  /** Not files matching these globs (--exclude). */
  exclude?: string | string[];
  /** Replaces the list of extensions never compressed (--skip-ext). */
  skipExt?: string[] | string;
  /** No output for files under this size (--min-size). Default: 1. */
  minSize?: Size;
  /** Keep an output only if compressed <= maxRatio * original (--max-ratio). Default: 0.95. */
  maxRatio?: number;
  /** Only these files: a file naming them (--files-from), or their paths below the one directory. */
  filesFrom?: string | string[];
  /** Enter symlinked directories (--follow). */
  follow?: boolean;
  /** Files compressed at once (-j). Default: the CPUs this process may use. */
  jobs?: number;
  /** Write a JSON manifest; files unchanged since it are not read again (--manifest). */
  manifest?: string;
  /** Write the outputs under this directory instead of beside each file (--output-dir). */
  outputDir?: string;
  /** Compress every file, whatever the manifest says (--force). */
  force?: boolean;
  /** "K/N" or "auto" (--shard). */
  shard?: string;
  /** fsync each output before it is put in place (--fsync). */
  fsync?: boolean;
  /** The content cache (--cache-dir); false: none. */
  cacheDir?: string | false;
  /** Trim the cache to this size (--cache-max-size). */
  cacheMaxSize?: Size;
  /** What the files in flight may take together (--memory-limit). */
  memoryLimit?: Size;
  /** Compress in memory, change nothing (--dry-run). */
  dryRun?: boolean;
  /** List what is not up to date; rejects (exit status 1) when anything is (--check). */
  check?: boolean;
  /** Earlier releases' trees, most recent first: write RFC 9842 deltas against them (--dictionary-from). */
  dictionaryFrom?: string | string[];
  /** Where a build tool puts a content hash in a name (--dictionary-name). */
  dictionaryName?: string | string[];
  /** Django's staticfiles.json of the --dictionary-from (--django-manifest). */
  djangoManifest?: string;
  /** The delta formats to write (--deltas). */
  deltas?: ('dcb' | 'dcz')[] | string;
  /** Further arguments for the program, as they are. */
  args?: string[];

  /** Called with each file's record as the file finishes. */
  onFile?: (file: FileRecord) => void;
  /** Called with each line the program writes on standard error (warnings). */
  onStderr?: (line: string) => void;
  /** The program's working directory. */
  cwd?: string;
  /** The program's environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Stops the program (SIGTERM); the promise rejects with code 'ABORT_ERR'. */
  signal?: AbortSignal;
  /** The program to run; default: PRECOMPRESS_BINARY, else the platform package's. */
  binary?: string;
}

export type OutputState = 'kept' | 'ratio' | 'off' | 'failed';
export type Action = 'create' | 'replace' | 'refresh' | 'remove' | 'none';

export interface OutputRecord {
  state: OutputState;
  size?: number;
  action: Action;
}

export interface DeltaRecord extends OutputRecord {
  format: 'dcb' | 'dcz';
  /** Index of the --dictionary-from it came from. */
  from: number;
  /** The dictionary's path below that directory. */
  dictionary: string;
  sha256: string;
}

export interface FileRecord {
  type: 'file';
  root: string;
  path: string;
  root_hex?: string;
  path_hex?: string;
  size: number | null;
  mtime_ns: number | null;
  status: 'compressed' | 'copied' | 'cached' | 'unchanged' | 'skipped' | 'failed';
  skip?: 'excluded' | 'extension' | 'empty' | 'min-size' | 'special' | 'broken-link' | 'link-owner' | 'ratio';
  error?: string;
  outputs?: Partial<Record<Format, OutputRecord>>;
  deltas?: DeltaRecord[];
}

export interface FormatTotals {
  files: number;
  bytes_in: number;
  bytes_out: number;
}

export interface Summary {
  type: 'summary';
  files: number;
  bytes: number;
  compressed: number;
  deduped: number;
  cached: number;
  unchanged: number;
  skipped: Record<string, number>;
  failed: number;
  errors: number;
  changes: number;
  removed: number;
  formats: Partial<Record<Format, FormatTotals>>;
  deltas?: Partial<Record<'dcb' | 'dcz', FormatTotals>>;
  memory: {
    limit: number | null;
    source: string;
    found: number | null;
    peak_estimate: number;
    ran_alone: number;
  };
  shard?: { index: number; count: number; from: string };
  output_dir?: string;
  dry_run: boolean;
  wall_s: number;
  cpu_s: number;
  exit: number;
}

/** The program exited non-zero (or was stopped): its status, signal and standard error. */
export class PrecompressError extends Error {
  code: 'PRECOMPRESS_FAILED' | 'ABORT_ERR' | string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Every line the program wrote on standard error. */
  stderr: string[];
  /** The summary, when the program printed one (exit status 1: a file failed). */
  summary: Summary | null;
}

/** An option the program would refuse, caught before it runs. */
export class OptionError extends TypeError {
  code: 'PRECOMPRESS_BAD_OPTION';
}

/** No program for this platform, or its package is missing. */
export class BinaryError extends Error {
  code: 'PRECOMPRESS_NO_BINARY';
}

/** Compress every file worth it under each path; resolves with the summary. */
export function precompress(paths: string | string[], options?: Options): Promise<Summary>;

export interface FileStream extends AsyncIterableIterator<FileRecord> {
  /** The summary, once the program has finished. */
  summary: Promise<Summary>;
}

/** The per-file records as an async iterator; leaving the loop stops the program. */
export function files(paths: string | string[], options?: Omit<Options, 'onFile'>): FileStream;

/** The program's version line (`precompress --version`). */
export function version(options?: { binary?: string }): Promise<string>;

/** The program's path (PRECOMPRESS_BINARY, else the platform package's); throws a BinaryError. */
export function binaryPath(options?: { binary?: string; env?: NodeJS.ProcessEnv }): string;

/** The program's arguments, and its standard input, for these paths and options. */
export function command(paths: string | string[], options?: Options): { argv: string[]; input: string | null };

export default precompress;
