'use strict';
// An options object to the program's arguments. Every key is checked here,
// so that a misspelt or mistyped option fails before anything runs, with
// one line naming it.

const FORMATS = {
  gz: 'gz', gzip: 'gz',
  br: 'br', brotli: 'br', brotlicompress: 'br',
  zst: 'zst', zstd: 'zst', zstandard: 'zst',
};
const LEVELS = {
  gzip: ['--gzip-level', 1, 12],
  brotli: ['--brotli-quality', 0, 11],
  zstd: ['--zstd-level', 1, 19],
};

class OptionError extends TypeError {
  constructor(message) {
    super(message);
    this.name = 'OptionError';
    this.code = 'PRECOMPRESS_BAD_OPTION';
  }
}

function bad(name, value, want) {
  let shown;
  try {
    shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  } catch (e) {
    shown = typeof value;
  }
  return new OptionError(`precompress: option ${name}: ${shown} is not ${want}`);
}

function list(name, value, want = 'a string or an array of strings') {
  const items = Array.isArray(value) ? value : [value];
  for (const v of items) {
    if (typeof v !== 'string' || v === '') throw bad(name, v, want);
  }
  return items;
}

function formats(value, name = 'formats') {
  const items = typeof value === 'string' ? value.split(',') : value;
  if (!Array.isArray(items) || items.length === 0) throw bad(name, value, 'a list of formats (gzip, brotli, zstd)');
  const out = [];
  for (const f of items) {
    const k = typeof f === 'string' ? FORMATS[f.trim().toLowerCase()] : undefined;
    if (!k) throw bad(name, f, 'a format: gzip (gz), brotli (br) or zstd (zst)');
    if (!out.includes(k)) out.push(k);
  }
  return out;
}

function size(name, value) {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return String(value);
  if (typeof value === 'string' && /^\d+(\.\d+)?\s*([kKmMgG](i?[bB])?|[bB])?$/.test(value.trim())) return value.trim();
  throw bad(name, value, 'a size in bytes (4096, or a string such as "4k", "512M")');
}

function integer(name, value, lo, hi) {
  if (typeof value === 'number' && Number.isInteger(value) && value >= lo && value <= hi) return String(value);
  throw bad(name, value, `an integer from ${lo} to ${hi}`);
}

function bool(name, value) {
  if (typeof value !== 'boolean') throw bad(name, value, 'true or false');
  return value;
}

// name -> (value, argv) pushing the arguments. Keys left to the caller
// (onFile, cwd, ...) are in HOST_KEYS.
const MAP = {
  formats: (v, a) => a.push('--formats', formats(v).join(',')),
  levels: (v, a) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw bad('levels', v, 'an object { gzip, brotli, zstd }');
    for (const [k, level] of Object.entries(v)) {
      const spec = LEVELS[k];
      if (!spec) throw bad('levels', k, 'a format of levels: gzip, brotli or zstd');
      if (level === undefined) continue;
      a.push(spec[0], integer(`levels.${k}`, level, spec[1], spec[2]));
    }
  },
  gzipEngine: (v, a) => {
    if (!['zlib', 'libdeflate', 'zopfli'].includes(v)) throw bad('gzipEngine', v, 'zlib, libdeflate or zopfli');
    a.push('--gzip-engine', v);
  },
  include: (v, a) => list('include', v, 'a glob or an array of globs').forEach((g) => a.push('--include', g)),
  exclude: (v, a) => list('exclude', v, 'a glob or an array of globs').forEach((g) => a.push('--exclude', g)),
  skipExt: (v, a) => {
    const items = typeof v === 'string' ? [v] : v;
    if (!Array.isArray(items) || items.some((e) => typeof e !== 'string')) throw bad('skipExt', v, 'an array of extensions');
    a.push('--skip-ext', items.map((e) => e.replace(/^\./, '')).join(','));
  },
  minSize: (v, a) => a.push('--min-size', size('minSize', v)),
  maxRatio: (v, a) => {
    if (typeof v !== 'number' || !(v > 0 && v <= 1)) throw bad('maxRatio', v, 'a number in (0, 1]');
    a.push('--max-ratio', String(v));
  },
  filesFrom: () => {}, // handled by the caller (a file name, or names on stdin)
  follow: (v, a) => bool('follow', v) && a.push('--follow'),
  jobs: (v, a) => a.push('--jobs', integer('jobs', v, 1, 1024)),
  manifest: (v, a) => a.push('--manifest', list('manifest', v, 'a file name')[0]),
  outputDir: (v, a) => a.push('--output-dir', list('outputDir', v, 'a directory name')[0]),
  force: (v, a) => bool('force', v) && a.push('--force'),
  shard: (v, a) => {
    if (typeof v !== 'string' || !/^(auto(\/\d+)?|\d+\/\d+)$/.test(v)) throw bad('shard', v, '"K/N" or "auto"');
    a.push('--shard', v);
  },
  fsync: (v, a) => bool('fsync', v) && a.push('--fsync'),
  cacheDir: (v, a) => {
    if (v === false || v === null) return;
    a.push('--cache-dir', list('cacheDir', v, 'a directory name, or false')[0]);
  },
  cacheMaxSize: (v, a) => a.push('--cache-max-size', size('cacheMaxSize', v)),
  memoryLimit: (v, a) => a.push('--memory-limit', size('memoryLimit', v)),
  dryRun: (v, a) => bool('dryRun', v) && a.push('--dry-run'),
  check: (v, a) => bool('check', v) && a.push('--check'),
  dictionaryFrom: (v, a) => list('dictionaryFrom', v, 'a directory or an array of directories').forEach((d) => a.push('--dictionary-from', d)),
  dictionaryName: (v, a) => list('dictionaryName', v).forEach((t) => a.push('--dictionary-name', t)),
  djangoManifest: (v, a) => a.push('--django-manifest', list('djangoManifest', v, 'a file name')[0]),
  deltas: (v, a) => {
    const items = typeof v === 'string' ? v.split(',') : v;
    if (!Array.isArray(items) || items.some((d) => d !== 'dcb' && d !== 'dcz')) throw bad('deltas', v, 'a list of dcb, dcz');
    a.push('--deltas', items.join(','));
  },
  args: (v, a) => {
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw bad('args', v, 'an array of strings');
    a.push(...v);
  },
};
const HOST_KEYS = new Set(['onFile', 'onStderr', 'cwd', 'env', 'signal', 'binary']);

function toArgs(options = {}) {
  if (options === null || typeof options !== 'object') throw bad('options', options, 'an object');
  const argv = [];
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined || HOST_KEYS.has(k)) continue;
    const f = MAP[k];
    if (!f) throw new OptionError(`precompress: unknown option ${k} (known: ${Object.keys(MAP).join(', ')})`);
    f(v, argv);
  }
  return argv;
}

module.exports = { toArgs, formats, OptionError, FORMATS };
